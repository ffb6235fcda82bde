package transport

import (
	"context"
	"crypto/tls"
	"net"
	"slices"
	"sync"
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
	// Twice when it went with the first Initial, which the listener's
	// Retry dropped unread, and again at once with the Initial carrying
	// the token; once when the Retry (a loopback round trip, tens of µs)
	// came before the SendUpdate.
	require.Contains(t, []int64{1, 2}, c.Stats().EarlyUpdatesSent)
	require.Equal(t, int64(1), sc.Stats().EarlyUpdatesReceived)
	require.Equal(t, int64(1), sc.Stats().UpdatesReceived)
	// The device that woke for this one reading learns it arrived, and
	// may sleep: the ACK of the packet that carried it.
	require.Eventually(t, func() bool { return c.Stats().UpdatesAcked >= 1 }, 5*time.Second, time.Millisecond)
	require.LessOrEqual(t, c.Stats().UpdatesAcked, c.Stats().UpdatesSent)
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

// A device's captured first flight (its Initials and its 0-RTT update),
// replayed from its own address, never puts the old update over a newer
// one: into the live connection it is dropped (counted), and after the
// connection closed it opens a connection that never completes its
// handshake (the replayer lacks the keys), so Accept never returns it and
// no application reads the update. The listener's Retry is on: the
// replayed Initial carries a token still valid for that address.
func TestZeroRTTReplayThroughListener(t *testing.T) {
	l, cli, cache := zeroRTTPair(t)
	ctx := t.Context()
	type got struct {
		conn    int
		payload string
		early   bool
	}
	var (
		mu       sync.Mutex
		updates  []got
		accepted []*Conn
	)
	go func() {
		for {
			c, err := l.Accept(context.Background())
			if err != nil {
				return
			}
			mu.Lock()
			accepted = append(accepted, c)
			n := len(accepted)
			mu.Unlock()
			go func() {
				for {
					u, err := c.ReadUpdate(context.Background())
					if err != nil {
						return
					}
					mu.Lock()
					updates = append(updates, got{n, string(u.Payload), u.Early})
					mu.Unlock()
				}
			}()
		}
	}()
	snapshot := func() ([]got, int) {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(updates), len(accepted)
	}

	c, err := Dial(ctx, l.Addr().String(), cli) // leaves the ticket
	require.NoError(t, err)
	require.Eventually(t, func() bool { return cache.tickets.Load() > 0 }, 5*time.Second, time.Millisecond)
	require.NoError(t, c.Close())

	relay := newCapturingRelay(t, l.Addr().(*net.UDPAddr), 16)
	c, err = DialEarly(ctx, relay.addr().String(), cli)
	require.NoError(t, err)
	require.NoError(t, c.SendUpdate([]byte("old")))
	<-c.HandshakeComplete()
	require.NoError(t, c.Err())
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, c.SendUpdate([]byte("newer")))
	require.Eventually(t, func() bool {
		u, _ := snapshot()
		return len(u) > 0 && u[len(u)-1].payload == "newer"
	}, 5*time.Second, time.Millisecond)
	u, _ := snapshot()
	require.Equal(t, got{2, "old", true}, u[0], "the genuine 0-RTT update")
	flight := relay.packets()
	replay := func() {
		for _, p := range flight {
			_, err := relay.conn.WriteToUDP(p, l.Addr().(*net.UDPAddr))
			require.NoError(t, err)
		}
	}

	// Into the live connection.
	mu.Lock()
	live := accepted[1]
	mu.Unlock()
	before := live.Stats()
	replay()
	require.Eventually(t, func() bool {
		st := live.Stats()
		return st.EarlyDropped+st.Replayed > before.EarlyDropped+before.Replayed
	}, 5*time.Second, time.Millisecond, "the replayed early update was not dropped")
	time.Sleep(200 * time.Millisecond)
	after, conns := snapshot()
	require.Equal(t, u, after, "a replay delivered an update")
	require.Equal(t, 2, conns)

	// After the connection closed: a new connection opens for the replay
	// and never completes its handshake.
	require.NoError(t, c.Close())
	<-live.Done()
	held := l.Stats().Connections
	replay()
	require.Eventually(t, func() bool { return l.Stats().Connections > held }, 5*time.Second, time.Millisecond,
		"the replayed Initial (a valid token) opened no connection: the test replays nothing")
	time.Sleep(500 * time.Millisecond)
	after, conns = snapshot()
	require.Equal(t, u, after, "a replay delivered an update")
	require.Equal(t, 2, conns, "a replayed flight reached Accept")
}
