package transport

import (
	"crypto/tls"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/transport/devcert"
)

// The reset key is a function of the TLS key alone: one key gives one
// reset key (a restarted server keeps it), another key another one, and
// no certificate none.
func TestResetKeyFromTLS(t *testing.T) {
	ca, err := devcert.NewCA("test CA")
	require.NoError(t, err)
	a, err := ca.Issue("localhost")
	require.NoError(t, err)
	b, err := ca.Issue("localhost")
	require.NoError(t, err)
	key := func(c tls.Certificate) *[32]byte {
		k, err := ResetKeyFromTLS(&tls.Config{Certificates: []tls.Certificate{c}})
		require.NoError(t, err)
		require.NotNil(t, k)
		return k
	}
	require.Equal(t, key(a), key(a), "the same TLS key: the same reset key")
	require.NotEqual(t, key(a), key(b), "another TLS key: another reset key")
	k, err := ResetKeyFromTLS(nil)
	require.NoError(t, err)
	require.Nil(t, k)
	k, err = ResetKeyFromTLS(&tls.Config{})
	require.NoError(t, err)
	require.Nil(t, k)
}
