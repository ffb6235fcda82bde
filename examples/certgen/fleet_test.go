package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/examples/internal/cli"
)

// loadAgent loads agents/<name>/ under dir and verifies it against roots
// for client authentication, as the monitor does with -ca.
func loadAgent(t *testing.T, dir, name string, roots *x509.CertPool) *x509.Certificate {
	t.Helper()
	d := filepath.Join(dir, "agents", name)
	c, err := tls.LoadX509KeyPair(filepath.Join(d, "agent.pem"), filepath.Join(d, "agent-key.pem"))
	require.NoError(t, err, name)
	require.Equal(t, name, c.Leaf.Subject.CommonName)
	_, err = c.Leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err, "%s verifies against the CA", name)
	fi, err := os.Stat(filepath.Join(d, "agent-key.pem"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), name)
	// The directory is what the device needs: its own copy of the CA
	// verifies the monitor.
	own := x509.NewCertPool()
	b, err := os.ReadFile(filepath.Join(d, "ca.pem"))
	require.NoError(t, err)
	require.True(t, own.AppendCertsFromPEM(b))
	_, err = c.Leaf.Verify(x509.VerifyOptions{Roots: own, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err, "%s/ca.pem is the CA", name)
	return c.Leaf
}

func pool(t *testing.T, caPEM []byte) *x509.CertPool {
	p := x509.NewCertPool()
	require.True(t, p.AppendCertsFromPEM(caPEM))
	return p
}

// -agents issues a fleet, one directory per agent, all signed by the
// set's CA; -ca-dir adds agents later with the same CA (its certificate
// and the monitor's untouched), so the monitor and the agents already out
// accept the new ones.
func TestCertgenFleetAndAddingAgents(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-dir", dir, "-agents", "3"}, &out))
	require.Contains(t, out.String(), "agent-0001 … agent-0003")
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	require.NoError(t, err)
	monPEM, err := os.ReadFile(filepath.Join(dir, "monitor.pem"))
	require.NoError(t, err)
	roots := pool(t, caPEM)
	serials := map[string]bool{}
	for _, n := range []string{"agent-0001", "agent-0002", "agent-0003"} {
		serials[loadAgent(t, dir, n, roots).SerialNumber.String()] = true
	}
	_, err = os.Stat(filepath.Join(dir, "agent.pem"))
	require.ErrorIs(t, err, os.ErrNotExist, "-agents replaces the single agent")

	out.Reset()
	require.NoError(t, run(context.Background(), []string{"-ca-dir", dir, "-agents", "2", "-first", "4", "-prefix", "agent-"}, &out))
	require.Contains(t, out.String(), "signed with the CA in "+dir)
	for _, n := range []string{"agent-0004", "agent-0005"} {
		leaf := loadAgent(t, dir, n, roots) // the CA read before the second run
		require.False(t, serials[leaf.SerialNumber.String()], "serials differ")
	}
	after, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	require.NoError(t, err)
	require.Equal(t, caPEM, after, "the CA is kept")
	afterMon, err := os.ReadFile(filepath.Join(dir, "monitor.pem"))
	require.NoError(t, err)
	require.Equal(t, monPEM, afterMon, "the monitor's certificate is kept")

	// Into another directory: the agents only.
	other := filepath.Join(t.TempDir(), "batch")
	require.NoError(t, run(context.Background(), []string{"-ca-dir", dir, "-dir", other, "-agents", "1", "-first", "10000"}, &bytes.Buffer{}))
	loadAgent(t, other, "agent-10000", roots)
	_, err = os.Stat(filepath.Join(other, "ca-key.pem"))
	require.ErrorIs(t, err, os.ErrNotExist, "the CA's key stays where it was")
}

// Agents are not overwritten unless -force, and nothing of a batch is
// written when one of its files exists.
func TestCertgenFleetRefusesToOverwrite(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, run(context.Background(), []string{"-dir", dir, "-agents", "2"}, &bytes.Buffer{}))
	key := filepath.Join(dir, "agents", "agent-0002", "agent-key.pem")
	before, err := os.ReadFile(key)
	require.NoError(t, err)
	err = run(context.Background(), []string{"-ca-dir", dir, "-agents", "2", "-first", "2"}, &bytes.Buffer{})
	require.ErrorContains(t, err, "already holds agents/agent-0002/ca.pem")
	require.ErrorContains(t, err, "-force")
	_, err = os.Stat(filepath.Join(dir, "agents", "agent-0003"))
	require.ErrorIs(t, err, os.ErrNotExist, "nothing of the batch written")
	b, _ := os.ReadFile(key)
	require.Equal(t, before, b)

	require.NoError(t, run(context.Background(), []string{"-ca-dir", dir, "-agents", "2", "-first", "2", "-force"}, &bytes.Buffer{}))
	b, _ = os.ReadFile(key)
	require.NotEqual(t, before, b, "-force replaces it")
}

// A set without the CA's key (or with another key) cannot sign agents,
// and the error says which file and what to do.
func TestCertgenCADirErrors(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, run(context.Background(), []string{"-dir", dir}, &bytes.Buffer{}))

	other := t.TempDir()
	require.NoError(t, run(context.Background(), []string{"-dir", other}, &bytes.Buffer{}))
	mixed := t.TempDir()
	for src, name := range map[string]string{dir: "ca.pem", other: "ca-key.pem"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(mixed, name), b, 0o600))
	}
	err := run(context.Background(), []string{"-ca-dir", mixed, "-agents", "1"}, &bytes.Buffer{})
	require.ErrorContains(t, err, "ca-key.pem is not the key of")

	require.NoError(t, os.Remove(filepath.Join(dir, "ca-key.pem")))
	err = run(context.Background(), []string{"-ca-dir", dir, "-agents", "1"}, &bytes.Buffer{})
	require.ErrorContains(t, err, "no ca-key.pem")
	require.ErrorContains(t, err, "-ca-dir "+dir)
	require.False(t, errors.As(err, new(*cli.UsageError)), "the command line is right, the directory is not")
	_, err = os.Stat(filepath.Join(dir, "agents"))
	require.ErrorIs(t, err, os.ErrNotExist, "nothing written")

	err = run(context.Background(), []string{"-ca-dir", t.TempDir(), "-agents", "1"}, &bytes.Buffer{})
	require.ErrorContains(t, err, "no ca.pem")
}

func TestCertgenFleetUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-agents", "0"}, {"-agents", "-3"}, {"-agents", "2", "-first", "0"},
		{"-first", "5"}, {"-prefix", "x-"}, {"-ca-dir", "somewhere"},
		{"-agents", "2", "-prefix", "a/b"}, {"-agents", "2", "-prefix", "../x"},
		{"-agents", "2", "-agent-name", "x"}, {"-agents", "1", "-first", "999999999"},
		{"-ca-dir", "somewhere", "-agents", "1", "-hosts", "example.com"},
	} {
		err := run(context.Background(), append([]string{"-dir", t.TempDir()}, args...), &bytes.Buffer{})
		require.True(t, errors.As(err, new(*cli.UsageError)), "%q: %v", args, err)
	}
	require.Equal(t, []string{"n-0009", "n-0010"}, agentNames("n-", 9, 2))
	require.Equal(t, []string{"n-09999", "n-10000"}, agentNames("n-", 9999, 2), "one width per batch")
}
