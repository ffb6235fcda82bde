package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// authority is a CA whose key certgen keeps on disk (ca.pem, ca-key.pem),
// so that agents can be added to a fleet later without handing every
// device a new root. transport/devcert's CA holds its key in memory only;
// this one makes certificates of the same shape (ECDSA P-256, server and
// client use) and can be loaded back.
type authority struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
}

// validity of a new CA and of the certificates it signs: long enough to
// try a fleet out without renewals, never past the CA's own end.
const validity = 10 * 365 * 24 * time.Hour

func newAuthority(name string) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-24 * time.Hour), // hosts whose clocks lag a little
		NotAfter:              time.Now().Add(validity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &authority{cert: cert, key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
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
	b, _ := pem.Decode(certPEM)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("-ca-dir: %s holds no PEM certificate", certFile)
	}
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("-ca-dir: %s: %w", certFile, err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("-ca-dir: %s is not a CA certificate", certFile)
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("-ca-dir: %s: %w", keyFile, err)
	}
	if !publicKeysEqual(key.Public(), cert.PublicKey) {
		return nil, fmt.Errorf("-ca-dir: %s is not the key of %s", keyFile, certFile)
	}
	if time.Now().After(cert.NotAfter) {
		return nil, fmt.Errorf("-ca-dir: the CA in %s expired on %s: make a new set", certFile, cert.NotAfter.Format(time.DateOnly))
	}
	return &authority{cert: cert, key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})}, nil
}

// parseKey reads a PKCS #8 ("PRIVATE KEY", what certgen writes) or SEC 1
// ("EC PRIVATE KEY") key.
func parseKey(keyPEM []byte) (crypto.Signer, error) {
	b, _ := pem.Decode(keyPEM)
	if b == nil {
		return nil, errors.New("no PEM key in it")
	}
	var k any
	var err error
	switch b.Type {
	case "PRIVATE KEY":
		k, err = x509.ParsePKCS8PrivateKey(b.Bytes)
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(b.Bytes)
	default:
		return nil, fmt.Errorf("a PEM %q block, not a private key", b.Type)
	}
	if err != nil {
		return nil, err
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("a %T key cannot sign", k)
	}
	return s, nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	e, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && e.Equal(b)
}

// keyPEM is the CA's key, PKCS #8.
func (a *authority) keyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(a.key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// issue signs a certificate named name (its CommonName: the device the
// monitor stores under), valid for client authentication (mutual TLS)
// and, for the DNS names and IP addresses in hosts, as a server. It
// returns the certificate and a new key, PEM.
func (a *authority) issue(name string, hosts ...string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	notAfter := time.Now().Add(validity)
	if notAfter.After(a.cert.NotAfter) {
		notAfter = a.cert.NotAfter // a chain is valid only while its CA is
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-24 * time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, nil, err
	}
	k, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k}), nil
}

// serial is a random 62-bit serial number (RFC 5280 §4.1.2.2: unique per
// CA, at most 20 octets); random so that certificates signed in separate
// runs of certgen by one CA do not collide.
func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}
