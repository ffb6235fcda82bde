package transport

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// countingTokens is a TokenStore that counts what it was given.
type countingTokens struct {
	TokenStore
	puts atomic.Int64
}

func (c *countingTokens) Put(server string, token []byte) {
	c.puts.Add(1)
	c.TokenStore.Put(server, token)
}

// dialAndClose dials l with cfg over tr (nil: a Transport of its own),
// waits for the server's NewToken if store is given, and closes both ends.
func dialAndClose(t *testing.T, l *Listener, tr *Transport, cfg Config, store *countingTokens) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var before int64
	if store != nil {
		before = store.puts.Load()
	}
	var c *Conn
	var err error
	if tr != nil {
		c, err = tr.Dial(ctx, l.Addr(), cfg)
	} else {
		c, err = Dial(ctx, l.Addr().String(), cfg)
	}
	require.NoError(t, err)
	sc, err := l.Accept(ctx)
	require.NoError(t, err)
	if store != nil {
		require.Eventually(t, func() bool { return store.puts.Load() > before }, 5*time.Second, time.Millisecond, "a NewToken after the handshake")
	}
	require.NoError(t, c.Close())
	sc.Close()
}

// tokenListener is a TLS listener on loopback and a dialer config whose
// token store counts the tokens it is given.
func tokenListener(t *testing.T) (*Listener, Config, *countingTokens) {
	l, err := Listen("127.0.0.1:0", testConfig(Config{}))
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	store := &countingTokens{TokenStore: NewTokenStore(4)}
	return l, testConfig(Config{TokenStore: store}), store
}

// A client that keeps the token its last connection was given skips the
// Retry on its next: the listener's Retries are the first connection's,
// it accepted one token, and it gave a new token each time.
func TestNewTokenSkipsRetry(t *testing.T) {
	l, cli, store := tokenListener(t)

	// A Retry answers each Initial without a token: the ClientHello
	// (with a post-quantum key share) may take two.
	dialAndClose(t, l, nil, cli, store)
	st := l.Stats()
	retries := st.RetriesSent
	require.Positive(t, retries, "no token yet: a Retry")
	require.Zero(t, st.NewTokensAccepted)

	dialAndClose(t, l, nil, cli, store)
	st = l.Stats()
	require.Equal(t, retries, st.RetriesSent, "the token spared the second connection its Retry")
	require.Equal(t, int64(1), st.NewTokensAccepted)
	require.Zero(t, st.NewTokensRefused)
	require.Equal(t, int64(2), store.puts.Load(), "a new token per connection")

	// Without a store nothing changes: a Retry every time.
	dialAndClose(t, l, nil, testConfig(Config{}), nil)
	require.Greater(t, l.Stats().RetriesSent, retries)
}

// A token is bound to the client's IP address: from another address it
// is refused, and the client gets the Retry it would have got without
// one (not a failed Dial). A token the store does not hold is not sent:
// Take forgets it.
func TestNewTokenFromAnotherAddressGetsRetry(t *testing.T) {
	l, cli, store := tokenListener(t)
	dialAndClose(t, l, nil, cli, store)
	retries := l.Stats().RetriesSent

	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2)})
	if err != nil {
		t.Skipf("no 127.0.0.2 here: %v", err)
	}
	defer pc.Close()
	tr := &Transport{Conn: pc}
	defer tr.Close()
	dialAndClose(t, l, tr, cli, store)
	st := l.Stats()
	require.Positive(t, st.NewTokensRefused, "issued to 127.0.0.1 (each Initial of the ClientHello counts)")
	require.Zero(t, st.NewTokensAccepted)
	require.Greater(t, st.RetriesSent, retries, "refused: a Retry instead")
}

// With 0-RTT the update goes with the first Initial, and with a token no
// Retry drops it: it is sent once, not twice.
func TestNewTokenWith0RTT(t *testing.T) {
	l, cli, cache := zeroRTTPair(t)
	store := &countingTokens{TokenStore: NewTokenStore(4)}
	cli.TokenStore = store
	ctx := t.Context()
	c, err := DialEarly(ctx, l.Addr().String(), cli)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return cache.tickets.Load() > 0 && store.puts.Load() > 0 }, 5*time.Second, time.Millisecond)
	sc, err := l.Accept(ctx)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	sc.Close()
	retries := l.Stats().RetriesSent

	c, err = DialEarly(ctx, l.Addr().String(), cli)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SendUpdate([]byte("woke up")))
	sc, err = l.Accept(ctx)
	require.NoError(t, err)
	defer sc.Close()
	u, err := sc.ReadUpdate(ctx)
	require.NoError(t, err)
	require.True(t, u.Early)
	require.Equal(t, int64(1), c.Stats().EarlyUpdatesSent, "no Retry dropped the first copy")
	require.Equal(t, retries, l.Stats().RetriesSent)
	require.Equal(t, int64(1), l.Stats().NewTokensAccepted)
}

// The store keeps one token per server, the newest, and forgets the
// least recently given server past its size; Take forgets what it gives.
func TestTokenStore(t *testing.T) {
	s := NewTokenStore(2)
	require.Nil(t, s.Take("a"))
	s.Put("a", []byte("a1"))
	s.Put("a", []byte("a2"))
	s.Put("b", []byte("b1"))
	s.Put("c", []byte("c1")) // a goes
	require.Nil(t, s.Take("a"))
	require.Equal(t, []byte("b1"), s.Take("b"))
	require.Nil(t, s.Take("b"), "taken once")
	tok := []byte("c2")
	s.Put("c", tok)
	tok[0] = 'x' // the store keeps its own copy
	require.Equal(t, []byte("c2"), s.Take("c"))
}
