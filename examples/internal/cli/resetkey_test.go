package cli

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/examples/internal/testcerts"
)

// The reset key is a function of the TLS key alone: two loads of one key
// give one reset key (a restarted monitor keeps it), another key another
// one, and plaintext none.
func TestResetKeyFromTLSKey(t *testing.T) {
	a, b := testcerts.Write(t, "agent-1"), testcerts.Write(t, "agent-1")
	load := func(f testcerts.Files) *[32]byte {
		cfg, err := (&Credentials{Cert: f.ServerCert, Key: f.ServerKey}).ServerTLS()
		require.NoError(t, err)
		k, err := ResetKey(cfg)
		require.NoError(t, err)
		require.NotNil(t, k)
		return k
	}
	require.Equal(t, load(a), load(a), "the same TLS key: the same reset key")
	require.NotEqual(t, load(a), load(b), "another TLS key: another reset key")
	k, err := ResetKey(nil)
	require.NoError(t, err)
	require.Nil(t, k)
}
