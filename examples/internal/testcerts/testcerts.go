// Package testcerts writes throwaway credentials for the examples' tests:
// the files examples/certgen writes, in a test's temporary directory.
package testcerts

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fresh-udp/fresh/transport/devcert"
)

// Files are the paths of one set: a CA, a server certificate for
// localhost, 127.0.0.1 and ::1, and a client certificate named after the
// agent.
type Files struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
	// OtherCert and OtherKey are a second client's, CommonName "other",
	// from the same CA.
	OtherCert, OtherKey string
}

// Write makes a new CA and its two certificates in a temporary directory.
func Write(t testing.TB, agentName string) Files {
	t.Helper()
	dir := t.TempDir()
	ca, err := devcert.NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ca.Issue("localhost", "localhost", "127.0.0.1", "::1")
	if err != nil {
		t.Fatal(err)
	}
	cli, err := ca.Issue(agentName)
	if err != nil {
		t.Fatal(err)
	}
	other, err := ca.Issue("other")
	if err != nil {
		t.Fatal(err)
	}
	f := Files{
		CA:         filepath.Join(dir, "ca.pem"),
		ServerCert: filepath.Join(dir, "monitor.pem"), ServerKey: filepath.Join(dir, "monitor-key.pem"),
		ClientCert: filepath.Join(dir, "agent.pem"), ClientKey: filepath.Join(dir, "agent-key.pem"),
		OtherCert: filepath.Join(dir, "other.pem"), OtherKey: filepath.Join(dir, "other-key.pem"),
	}
	write := func(path string, b []byte) {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(f.CA, ca.CertPEM())
	c, k, err := devcert.PEM(srv)
	if err != nil {
		t.Fatal(err)
	}
	write(f.ServerCert, c)
	write(f.ServerKey, k)
	c, k, err = devcert.PEM(cli)
	if err != nil {
		t.Fatal(err)
	}
	write(f.ClientCert, c)
	write(f.ClientKey, k)
	c, k, err = devcert.PEM(other)
	if err != nil {
		t.Fatal(err)
	}
	write(f.OtherCert, c)
	write(f.OtherKey, k)
	return f
}

// ServerArgs are the monitor's flags for f, requiring client certificates.
func (f Files) ServerArgs(dash string) []string {
	return []string{dash + "cert", f.ServerCert, dash + "key", f.ServerKey, dash + "ca", f.CA}
}

// ClientArgs are the agent's flags for f, with its client certificate.
func (f Files) ClientArgs(dash string) []string {
	return []string{dash + "ca", f.CA, dash + "cert", f.ClientCert, dash + "key", f.ClientKey}
}
