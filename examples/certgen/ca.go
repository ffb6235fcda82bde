package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/fresh-udp/fresh/transport/devcert"
)

// authority is a CA whose key certgen keeps on disk (ca.pem, ca-key.pem),
// so that agents can be added to a fleet later without handing every
// device a new root: transport/devcert's CA, written out with its key and
// loaded back (devcert.LoadCA).
type authority struct{ *devcert.CA }

func newAuthority(name string) (*authority, error) {
	ca, err := devcert.NewCA(name)
	if err != nil {
		return nil, err
	}
	return &authority{ca}, nil
}

// loadAuthority reads the CA certgen wrote into dir, and says which file
// is missing or wrong: a set without ca-key.pem cannot sign new agents.
func loadAuthority(dir string) (*authority, error) {
	certFile, keyFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem")
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("-ca-dir %s: no ca.pem: not a directory certgen wrote a CA into", dir)
		}
		return nil, fmt.Errorf("-ca-dir: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("-ca-dir %s: no ca-key.pem, the CA's private key, which signing new agents needs "+
				"(a set written before certgen kept it has none: make a new set with -force and give every agent and the monitor the new files)", dir)
		}
		return nil, fmt.Errorf("-ca-dir: %w", err)
	}
	ca, err := devcert.LoadCA(certPEM, keyPEM)
	if errors.Is(err, devcert.ErrKeyMismatch) {
		return nil, fmt.Errorf("-ca-dir: %s is not the key of %s", keyFile, certFile)
	}
	if err != nil {
		return nil, fmt.Errorf("-ca-dir: %s and %s: %w", certFile, keyFile, err)
	}
	return &authority{ca}, nil
}

// certPEM is the CA's certificate, PEM.
func (a *authority) certPEM() []byte { return a.CertPEM() }

// keyPEM is the CA's key, PKCS #8.
func (a *authority) keyPEM() ([]byte, error) { return a.KeyPEM() }

// issue signs a certificate named name (its CommonName: the device the
// monitor stores under), valid for client authentication (mutual TLS)
// and, for the DNS names and IP addresses in hosts, as a server, never
// past the CA's own end. It returns the certificate and a new key, PEM.
func (a *authority) issue(name string, hosts ...string) (certPEM, keyPEM []byte, err error) {
	c, err := a.Issue(name, hosts...)
	if err != nil {
		return nil, nil, err
	}
	return devcert.PEM(c)
}
