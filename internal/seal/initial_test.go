package seal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	return b
}

// The derivation is RFC 9001 §5.2's: with QUIC version 1's salt and
// labels it gives the keys and IVs of RFC 9001 Appendix A.1 (connection
// ID 0x8394c8f03e515708), so only the salt and labels are fresh's own.
func TestInitialDerivationMatchesRFC9001Vectors(t *testing.T) {
	quicSalt := unhex(t, "38762cf7f55934b34d179ae6a4c80cadccbb7f0a")
	dcid := unhex(t, "8394c8f03e515708")
	for _, tc := range []struct{ label, key, iv string }{
		{"client in", "1f369613dd76d5467730efcbe3b1a22d", "fa044b2f42a3fd3b46fb255c"},
		{"server in", "cf3a5331653c364c88f0f379b6067e37", "0ac1493ca1905853b0bba03e"},
	} {
		secret, err := initialSecretOf(quicSalt, dcid, tc.label)
		require.NoError(t, err)
		key, err := expandLabel(sha256.New, secret, "quic key", 16)
		require.NoError(t, err)
		iv, err := expandLabel(sha256.New, secret, "quic iv", 12)
		require.NoError(t, err)
		require.Equal(t, tc.key, hex.EncodeToString(key), tc.label)
		require.Equal(t, tc.iv, hex.EncodeToString(iv), tc.label)
	}
	// RFC 9001 §5.8: QUIC version 1's Retry key and nonce come from its
	// fixed secret the same way.
	retrySecret := unhex(t, "d9c9943e6101fd200021506bcc02814c73030f25c79d71ce876eca876e6fca8e")
	key, err := expandLabel(sha256.New, retrySecret, "quic key", 16)
	require.NoError(t, err)
	nonce, err := expandLabel(sha256.New, retrySecret, "quic iv", 12)
	require.NoError(t, err)
	require.Equal(t, "be0c690b9f66575a1d766b54e368c84e", hex.EncodeToString(key))
	require.Equal(t, "461599d35d632bf2239825bb", hex.EncodeToString(nonce))
}

// The salt is what its comment says it is.
func TestInitialSaltDerivation(t *testing.T) {
	sum := sha256.Sum256([]byte("fresh wire version 3 initial salt"))
	require.Equal(t, sum[:20], InitialSalt)
}

// Pinned keys of one connection ID: wire compatibility between builds.
// A change here changes the wire format (a new version and salt).
func TestInitialKeysPinned(t *testing.T) {
	cli, err := initialSecret(InitialSalt, 0x8394c8f03e515708, labelClientInitial)
	require.NoError(t, err)
	srv, err := initialSecret(InitialSalt, 0x8394c8f03e515708, labelServerInitial)
	require.NoError(t, err)
	require.Equal(t, "746a904cbca16fbd210a9aa24f0ef8e75333b51ffd2d7736fb0d0d7e47904a7c", hex.EncodeToString(cli))
	require.Equal(t, "3887f66137423144a294d657c67552d5b79e52e3670a78dd955372d395fdc237", hex.EncodeToString(srv))
}

// Each side opens what the other sealed under the Initial keys of the
// same connection ID; another connection ID's keys, or the other
// direction's, open nothing; and a flipped bit anywhere fails.
func TestInitialKeysSealOpen(t *testing.T) {
	keys := func(id uint64, client bool) *Keys {
		k, err := NewInitial(id, client)
		require.NoError(t, err)
		return k
	}
	sealed := keys(7, true).Seal(packet("HEADER", "client hello"), 6, 3, true)
	body, err := keys(7, true).Open(bytes.Clone(sealed), 6, 3, true)
	require.NoError(t, err)
	require.Equal(t, "client hello", string(body))
	_, err = keys(8, true).Open(bytes.Clone(sealed), 6, 3, true)
	require.ErrorIs(t, err, ErrAuth, "another connection ID's keys")
	_, err = keys(7, false).Open(bytes.Clone(sealed), 6, 3, true)
	require.ErrorIs(t, err, ErrAuth, "the server's keys")
	for bit := range 8 * len(sealed) {
		p := bytes.Clone(sealed)
		p[bit/8] ^= 1 << (bit % 8)
		_, err := keys(7, true).Open(p, 6, 3, true)
		require.ErrorIs(t, err, ErrAuth, "bit %d flipped", bit)
	}
}

func TestRetryTag(t *testing.T) {
	retry := []byte("a retry's header and token")
	tagged := AppendRetryTag(bytes.Clone(retry))
	require.Len(t, tagged, len(retry)+RetryTagLen)
	require.Equal(t, retry, tagged[:len(retry)], "the Retry itself is not encrypted")
	require.True(t, RetryTagValid(tagged))
	require.Equal(t, AppendRetryTag(bytes.Clone(retry)), tagged, "deterministic: a fixed key and nonce")
	before := bytes.Clone(tagged)
	for bit := range 8 * len(tagged) {
		p := bytes.Clone(tagged)
		p[bit/8] ^= 1 << (bit % 8)
		require.False(t, RetryTagValid(p), "bit %d flipped", bit)
	}
	require.Equal(t, before, tagged, "checking changes nothing")
	require.False(t, RetryTagValid(tagged[:len(tagged)-1]))
	require.False(t, RetryTagValid(nil))
}
