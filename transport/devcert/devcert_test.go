package devcert

import (
	"crypto/x509"
	"testing"

	"github.com/stretchr/testify/require"
)

// A CA written out with CertPEM and KeyPEM loads back and signs
// certificates its first life's pool verifies; a key of another CA, a
// leaf certificate and garbage are refused.
func TestLoadCARoundTrip(t *testing.T) {
	ca, err := NewCA("round trip")
	require.NoError(t, err)
	keyPEM, err := ca.KeyPEM()
	require.NoError(t, err)
	again, err := LoadCA(ca.CertPEM(), keyPEM)
	require.NoError(t, err)
	c, err := again.Issue("agent-7")
	require.NoError(t, err)
	_, err = c.Leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err, "signed by the loaded CA, verified by the original's pool")
	require.False(t, c.Leaf.NotAfter.After(ca.Cert.NotAfter), "never valid past its CA")

	other, err := NewCA("other")
	require.NoError(t, err)
	otherKey, err := other.KeyPEM()
	require.NoError(t, err)
	_, err = LoadCA(ca.CertPEM(), otherKey)
	require.ErrorIs(t, err, ErrKeyMismatch)

	leafPEM, leafKey, err := PEM(c)
	require.NoError(t, err)
	_, err = LoadCA(leafPEM, leafKey)
	require.ErrorContains(t, err, "not a CA")
	_, err = LoadCA([]byte("junk"), keyPEM)
	require.ErrorContains(t, err, "no PEM certificate")
	_, err = LoadCA(ca.CertPEM(), []byte("junk"))
	require.ErrorContains(t, err, "no PEM key")
}
