// Package devcert makes throwaway TLS credentials: a CA in memory and
// certificates it signs, for first steps, demos and tests (Loopback gives
// both ends of a loopback connection one config). It is not a PKI: the CA
// key lives in memory (or wherever the caller writes it) and signs
// whatever it is asked to. In production give transport.Config.TLS
// certificates from your own CA (tls.LoadX509KeyPair, x509.CertPool).
package devcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"sync"
	"time"
)

// CA is a certificate authority held in memory.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	DER  []byte
}

// NewCA makes a CA valid for a day either side of now.
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-24 * time.Hour),
		NotAfter:              time.Now().Add(10 * 365 * 24 * time.Hour),
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
	return &CA{Cert: cert, key: key, DER: der}, nil
}

// serial is a random 62-bit serial number (RFC 5280 §4.1.2.2: unique per
// CA, at most 20 octets); random, so that certificates one CA signs in
// separate runs (a CA loaded back with LoadCA) do not collide.
func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

// Issue signs a certificate for name, valid as a server for the DNS names
// and IP addresses in hosts and as a client (mutual TLS) under name.
func (ca *CA) Issue(name string, hosts ...string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	notAfter := time.Now().Add(10 * 365 * 24 * time.Hour)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter // a chain is valid only while its CA is
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
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// Pool is a certificate pool holding only the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// CertPEM is the CA certificate in PEM.
func (ca *CA) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.DER})
}

// KeyPEM is the CA's private key in PEM (PKCS #8), for a caller that keeps
// the CA to sign more certificates later (LoadCA). Whoever holds it can
// sign certificates every holder of the CA trusts: store it as a secret.
func (ca *CA) KeyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(ca.key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ErrKeyMismatch: LoadCA was given a key that is not the CA certificate's.
var ErrKeyMismatch = errors.New("devcert: the key is not the CA certificate's")

// LoadCA is the CA whose certificate and key CertPEM and KeyPEM wrote (or
// an ECDSA CA of another's, its key PKCS #8 or SEC 1). It fails if the
// certificate is not a CA's, the key is not its key, or it has expired.
func LoadCA(certPEM, keyPEM []byte) (*CA, error) {
	b, _ := pem.Decode(certPEM)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, errors.New("devcert: no PEM certificate")
	}
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("devcert: %w", err)
	}
	if !cert.IsCA {
		return nil, errors.New("devcert: the certificate is not a CA's")
	}
	if time.Now().After(cert.NotAfter) {
		return nil, fmt.Errorf("devcert: the CA expired on %s", cert.NotAfter.Format(time.DateOnly))
	}
	k, _ := pem.Decode(keyPEM)
	if k == nil {
		return nil, errors.New("devcert: no PEM key")
	}
	var key any
	switch k.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(k.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(k.Bytes)
	default:
		return nil, fmt.Errorf("devcert: a PEM %q block, not a private key", k.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("devcert: %w", err)
	}
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("devcert: a %T key: only ECDSA CAs are loaded", key)
	}
	if !ec.PublicKey.Equal(cert.PublicKey) {
		return nil, ErrKeyMismatch
	}
	return &CA{Cert: cert, key: ec, DER: cert.Raw}, nil
}

// PEM encodes a certificate and its key as PEM (certificate, key).
func PEM(c tls.Certificate) (certPEM, keyPEM []byte, err error) {
	for _, der := range c.Certificate {
		certPEM = append(certPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	k, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		return nil, nil, err
	}
	return certPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k}), nil
}

var (
	once   sync.Once
	shared *tls.Config
	err    error
)

// Loopback is one TLS config for both ends of a loopback connection: a
// certificate for "localhost", 127.0.0.1 and ::1 signed by a fresh
// in-memory CA, that CA as the only root, and ServerName "localhost". It
// is made once per process.
func Loopback() (*tls.Config, error) {
	once.Do(func() {
		var ca *CA
		if ca, err = NewCA("fresh loopback CA"); err != nil {
			return
		}
		var c tls.Certificate
		if c, err = ca.Issue("localhost", "localhost", "127.0.0.1", "::1"); err != nil {
			return
		}
		shared = &tls.Config{Certificates: []tls.Certificate{c}, RootCAs: ca.Pool(), ServerName: "localhost"}
	})
	if err != nil {
		return nil, err
	}
	return shared.Clone(), nil
}
