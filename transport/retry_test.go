package transport

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/wire"
)

// A Retry token opens only for the address, port and connection ID it was
// issued to, within its lifetime, and only for the Listener that minted
// it; any change to its bytes breaks it.
func TestRetryTokenBinding(t *testing.T) {
	from := netip.MustParseAddrPort("192.0.2.7:4433")
	const id = 0xfeed
	now := clock.Mono(time.Hour)
	tk := newRetryTokens(now, 0)
	tok := tk.mint(nil, from, id, now)
	require.Len(t, tok, retryTokenLen)
	require.LessOrEqual(t, len(tok), wire.MaxTokenLen)
	require.True(t, tk.valid(tok, from, id, now))
	require.True(t, tk.valid(tok, from, id, now.Add(retryTokenLifetime)), "valid for its whole lifetime")

	for name, ok := range map[string]bool{
		"other port":        tk.valid(tok, netip.MustParseAddrPort("192.0.2.7:4434"), id, now),
		"other address":     tk.valid(tok, netip.MustParseAddrPort("192.0.2.8:4433"), id, now),
		"other conn ID":     tk.valid(tok, from, id+1, now),
		"expired":           tk.valid(tok, from, id, now.Add(retryTokenLifetime+time.Millisecond)),
		"issued later":      tk.valid(tok, from, id, now.Add(-time.Millisecond)),
		"other listener":    newRetryTokens(now, 0).valid(tok, from, id, now),
		"truncated":         tk.valid(tok[:len(tok)-1], from, id, now),
		"empty":             tk.valid(nil, from, id, now),
		"generation byte":   tk.valid(append([]byte{tok[0] + 5}, tok[1:]...), from, id, now),
		"nonce bit flipped": tk.valid(flip(tok, 3), from, id, now),
		"sealed bit":        tk.valid(flip(tok, 1+retryNonceLen+2), from, id, now),
		"tag bit":           tk.valid(flip(tok, len(tok)-1), from, id, now),
	} {
		require.False(t, ok, name)
	}
	// An IPv4 client seen through a dual-stack socket as ::ffff:a.b.c.d is
	// the same client.
	require.True(t, tk.valid(tok, netip.MustParseAddrPort("[::ffff:192.0.2.7]:4433"), id, now))
	// Two tokens for the same client differ (a fresh nonce each).
	require.False(t, bytes.Equal(tok, tk.mint(nil, from, id, now)))
}

func flip(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 1
	return c
}

// Keys rotate: a token minted just before a rotation is still good after
// it (the previous key is kept), and none outlives two rotations.
func TestRetryTokenKeyRotation(t *testing.T) {
	from := netip.MustParseAddrPort("[2001:db8::1]:9000")
	start := clock.Mono(0)
	tk := newRetryTokens(start, 0)
	tk.lifetime = 2 * tk.rotation // to see the key, not the lifetime, end it
	tok := tk.mint(nil, from, 1, start)
	gen := tk.gen
	after := start.Add(tk.rotation + time.Second)
	require.True(t, tk.valid(tok, from, 1, after))
	require.NotEqual(t, gen, tk.gen, "the key rotated")
	require.True(t, tk.valid(tk.mint(nil, from, 1, after), from, 1, after))
	later := after.Add(tk.rotation)
	require.False(t, tk.valid(tok, from, 1, later), "its key is gone after two rotations")
}

// Minting and checking a token allocate nothing beyond the token itself:
// a flood of Initials costs the read loop no garbage.
func TestRetryTokenAllocations(t *testing.T) {
	from := netip.MustParseAddrPort("192.0.2.7:4433")
	tk := newRetryTokens(0, 0)
	buf := make([]byte, 0, retryTokenLen)
	tok := tk.mint(nil, from, 1, 0)
	require.Zero(t, testing.AllocsPerRun(100, func() { buf = tk.mint(buf[:0], from, 1, 0) }))
	require.Zero(t, testing.AllocsPerRun(100, func() { tk.valid(tok, from, 1, 0) }))
}

// A token lives as long as the Listener lets a handshake take, at least
// retryTokenLifetime: a client allowed a longer handshake (on a lossy
// link) may need as long to get one Initial with its token through, and
// its key outlives it. An expired token's reason says so.
func TestRetryTokenLifetimeCoversHandshakeTimeout(t *testing.T) {
	from := netip.MustParseAddrPort("192.0.2.7:4433")
	for _, tc := range []struct{ hs, life time.Duration }{
		{0, retryTokenLifetime},
		{5 * time.Second, retryTokenLifetime},
		{time.Minute, time.Minute},
		{5 * time.Minute, 5 * time.Minute},
	} {
		tk := newRetryTokens(0, tc.hs)
		require.Equal(t, tc.life, tk.lifetime, "HandshakeTimeout %v", tc.hs)
		require.GreaterOrEqual(t, tk.rotation, tk.lifetime, "a live token's key is kept")
		tok := tk.mint(nil, from, 1, 0)
		require.NoError(t, tk.check(tok, from, 1, clock.Mono(tc.life)))
		err := tk.check(tok, from, 1, clock.Mono(tc.life+time.Millisecond))
		require.ErrorContains(t, err, "expired: issued")
		require.ErrorIs(t, tk.check(tok, netip.MustParseAddrPort("192.0.2.7:4434"), 1, 0), errTokenForeign)
	}
	l := listen(t, Config{HandshakeTimeout: time.Minute})
	require.Equal(t, time.Minute, l.tokens.lifetime)
}
