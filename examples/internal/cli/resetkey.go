package cli

import (
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
)

// resetKeyLabel separates the stateless reset key from anything else
// derived from the same private key.
const resetKeyLabel = "fresh examples: stateless reset key v1"

// ResetKey derives a server's transport.Transport.StatelessResetKey from
// its TLS private key (the first certificate's): HKDF-SHA256 (RFC 5869)
// of the key's PKCS #8 encoding with a label. Every life of a server
// started with the same -key gets the same reset key, so a restarted
// monitor resets the connections of its previous life with no flag or
// file of its own; and the key is as secret as the TLS key, which an
// attacker who could forge resets would need anyway to impersonate the
// server. nil without TLS (plaintext has no resets).
func ResetKey(cfg *tls.Config) (*[32]byte, error) {
	if cfg == nil || len(cfg.Certificates) == 0 || cfg.Certificates[0].PrivateKey == nil {
		return nil, nil
	}
	der, err := x509.MarshalPKCS8PrivateKey(cfg.Certificates[0].PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("deriving the stateless reset key from the TLS key: %w", err)
	}
	k, err := hkdf.Key(sha256.New, der, nil, resetKeyLabel, 32)
	if err != nil {
		return nil, fmt.Errorf("deriving the stateless reset key from the TLS key: %w", err)
	}
	return (*[32]byte)(k), nil
}
