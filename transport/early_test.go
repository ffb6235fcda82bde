package transport

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// zeroRTTPair is a listener with Allow0RTT and a dialer config with a
// session cache and Allow0RTT.
func zeroRTTPair(t *testing.T) (*Listener, Config, *countingCache) {
	l, err := Listen("127.0.0.1:0", testConfig(Config{Allow0RTT: true}))
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	cli := testConfig(Config{Allow0RTT: true})
	cache := &countingCache{ClientSessionCache: tls.NewLRUClientSessionCache(4)}
	cli.TLS.ClientSessionCache = cache
	return l, cli, cache
}

// DialEarly without a ticket is Dial: it returns once the handshake has
// completed. With a ticket that allows early data it returns before, and
// the update sent at once arrives in 0-RTT on a resumed connection.
func TestDialEarlySendsUpdateIn0RTT(t *testing.T) {
	l, cli, cache := zeroRTTPair(t)
	ctx := t.Context()

	c, err := DialEarly(ctx, l.Addr().String(), cli)
	require.NoError(t, err)
	require.True(t, isClosed(c.HandshakeComplete()), "no ticket: DialEarly waits for the handshake")
	require.Eventually(t, func() bool { return cache.tickets.Load() > 0 }, 5*time.Second, time.Millisecond)
	sc, err := l.Accept(ctx)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	sc.Close()

	c, err = DialEarly(ctx, l.Addr().String(), cli)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SendUpdate([]byte("woke up")))
	<-c.HandshakeComplete()
	require.NoError(t, c.Err())
	st, ok := c.ConnectionState()
	require.True(t, ok)
	require.True(t, st.DidResume)

	sc, err = l.Accept(ctx)
	require.NoError(t, err)
	defer sc.Close()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	u, err := sc.ReadUpdate(rctx)
	require.NoError(t, err)
	require.Equal(t, "woke up", string(u.Payload))
	require.True(t, u.Early, "delivered from 0-RTT")
	// Twice: with the first Initial, which the listener's Retry dropped
	// unread, and again at once with the Initial carrying the token.
	require.Equal(t, int64(2), c.Stats().EarlyUpdatesSent)
	require.Equal(t, int64(1), sc.Stats().EarlyUpdatesReceived)
	require.Equal(t, int64(1), sc.Stats().UpdatesReceived)
}

// A listener without Allow0RTT issues tickets that allow no early data:
// DialEarly then waits for the handshake, resumes, and the update goes
// after it.
func TestDialEarlyWithoutServer0RTT(t *testing.T) {
	l, err := Listen("127.0.0.1:0", testConfig(Config{}))
	require.NoError(t, err)
	defer l.Close()
	cli := testConfig(Config{Allow0RTT: true})
	cache := &countingCache{ClientSessionCache: tls.NewLRUClientSessionCache(4)}
	cli.TLS.ClientSessionCache = cache
	ctx := t.Context()
	for i := range 2 {
		c, err := DialEarly(ctx, l.Addr().String(), cli)
		require.NoError(t, err)
		require.True(t, isClosed(c.HandshakeComplete()))
		require.NoError(t, c.SendUpdate([]byte("u")))
		sc, err := l.Accept(ctx)
		require.NoError(t, err)
		u, err := sc.ReadUpdate(ctx)
		require.NoError(t, err)
		require.False(t, u.Early)
		st, _ := c.ConnectionState()
		require.Equal(t, i == 1, st.DidResume)
		require.Zero(t, c.Stats().EarlyUpdatesSent)
		if i == 0 {
			require.Eventually(t, func() bool { return cache.tickets.Load() > 0 }, 5*time.Second, time.Millisecond)
		}
		require.NoError(t, c.Close())
		sc.Close()
	}
}

func TestAllow0RTTNeedsTLS(t *testing.T) {
	_, err := Dial(t.Context(), "127.0.0.1:1", Config{Insecure: true, Allow0RTT: true})
	require.ErrorContains(t, err, "transport.Config.Allow0RTT")
}
