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
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/examples/internal/cli"
)

// The five files make a working set: the monitor's certificate is valid
// for -hosts under the CA, the agent's for client authentication under
// -agent-name, keys match their certificates and only their owner reads
// them.
func TestCertgenWritesAWorkingSet(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-dir", dir, "-hosts", "monitor.example, 192.0.2.7", "-agent-name", "sensor-9"}, &out))
	require.Contains(t, out.String(), "-cert "+filepath.Join(dir, "monitor.pem"))

	for name, mode := range map[string]os.FileMode{"ca.pem": 0o644, "ca-key.pem": 0o600, "monitor.pem": 0o644, "monitor-key.pem": 0o600, "agent.pem": 0o644, "agent-key.pem": 0o600} {
		fi, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err, name)
		require.Equal(t, mode, fi.Mode().Perm(), name)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(caPEM))

	load := func(cert, key string) *x509.Certificate {
		c, err := tls.LoadX509KeyPair(filepath.Join(dir, cert), filepath.Join(dir, key))
		require.NoError(t, err, cert)
		return c.Leaf
	}
	mon := load("monitor.pem", "monitor-key.pem")
	for _, host := range []string{"monitor.example", "192.0.2.7"} {
		_, err := mon.Verify(x509.VerifyOptions{DNSName: host, Roots: roots})
		require.NoError(t, err, host)
	}
	_, err = mon.Verify(x509.VerifyOptions{DNSName: "localhost", Roots: roots})
	require.Error(t, err, "valid for -hosts only")
	agent := load("agent.pem", "agent-key.pem")
	require.Equal(t, "sensor-9", agent.Subject.CommonName)
	_, err = agent.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err)
	require.True(t, agent.NotAfter.After(time.Now().AddDate(1, 0, 0)), "lasts long enough to try things out")

	// The files work as the examples' flags.
	creds := cli.Credentials{Cert: filepath.Join(dir, "monitor.pem"), Key: filepath.Join(dir, "monitor-key.pem"), CA: filepath.Join(dir, "ca.pem")}
	_, err = creds.ServerTLS()
	require.NoError(t, err)
}

// Existing files are kept unless -force, and nothing is half-written:
// with one file present none is replaced.
func TestCertgenRefusesToOverwrite(t *testing.T) {
	dir := t.TempDir()
	keep := filepath.Join(dir, "agent-key.pem")
	require.NoError(t, os.WriteFile(keep, []byte("mine"), 0o644))
	err := run(context.Background(), []string{"-dir", dir}, &bytes.Buffer{})
	require.ErrorContains(t, err, "already holds agent-key.pem")
	require.ErrorContains(t, err, "-force")
	b, _ := os.ReadFile(keep)
	require.Equal(t, "mine", string(b))
	_, err = os.Stat(filepath.Join(dir, "ca.pem"))
	require.ErrorIs(t, err, os.ErrNotExist, "nothing written")

	require.NoError(t, run(context.Background(), []string{"-dir", dir, "-force"}, &bytes.Buffer{}))
	fi, err := os.Stat(keep)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "a replaced key file is made private too")

	for _, args := range [][]string{{"-hosts", " , "}, {"-agent-name", ""}, {"extra"},
		{"-hosts", "bad host"}, {"-hosts", "localhost:4433"}, {"-hosts", "https://example.com"}, {"-hosts", "a..b"}, {"-hosts", "-a.example"}} {
		err := run(context.Background(), append([]string{"-dir", t.TempDir()}, args...), &bytes.Buffer{})
		require.True(t, errors.As(err, new(*cli.UsageError)), "%q: %v", args, err)
	}
}

// -hosts takes names and addresses a certificate can be valid for, and
// says what is wrong with one it cannot.
func TestCheckHost(t *testing.T) {
	for _, h := range []string{"localhost", "127.0.0.1", "::1", "monitor.example", "*.example.com", "a-1.b2.example", "fe80::1"} {
		require.NoError(t, checkHost(h), h)
	}
	for h, want := range map[string]string{
		"localhost:4433": "has a port: give the host alone (localhost)", "[::1]:4433": "has a port",
		"https://x.example": "is a URL", "bad host": "neither an IP address nor a DNS name",
		"a..b": "neither", "-a": "neither", "a-": "neither", "x_y": "neither", "": "neither",
	} {
		require.ErrorContains(t, checkHost(h), want, h)
	}
}
