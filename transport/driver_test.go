package transport

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A Listener's connections have no goroutine of their own: the Listener's
// reader and driver serve them all, while each client Conn runs up to
// three (its Transport's reader and driver, and on Linux the driver's
// timerfd reader, waketimer.go). With a goroutine per server connection
// (as before the driver) the count grows by three more per connection,
// and this fails.
func TestListenerRunsNoGoroutinePerConnection(t *testing.T) {
	l, err := Listen("127.0.0.1:0", testConfig(Config{}))
	require.NoError(t, err)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	before := runtime.NumGoroutine()
	const n = 20
	var clients, servers []*Conn
	for range n {
		c, err := Dial(ctx, l.Addr().String(), testConfig(Config{}))
		require.NoError(t, err)
		clients = append(clients, c)
		s, err := l.Accept(ctx)
		require.NoError(t, err)
		servers = append(servers, s)
	}
	grew := runtime.NumGoroutine() - before
	require.LessOrEqual(t, grew, 3*n+3, "up to three per client Conn, none per server Conn")

	// And every server connection is served: updates go through both ways.
	for i, c := range clients {
		require.NoError(t, c.SendUpdate([]byte{byte(i)}))
		require.NoError(t, servers[i].SendUpdate([]byte{byte(i)}))
	}
	for i := range n {
		u, err := servers[i].ReadUpdate(ctx)
		require.NoError(t, err)
		require.Equal(t, []byte{byte(i)}, u.Payload)
		u, err = clients[i].ReadUpdate(ctx)
		require.NoError(t, err)
		require.Equal(t, []byte{byte(i)}, u.Payload)
	}
	for _, c := range clients {
		require.NoError(t, c.Close())
	}
	for _, s := range servers {
		<-s.Done()
	}
}

// The driver's timer heap fires each connection's own deadline: silent
// clients are idled out by the server, each after IdleTimeout from its own
// last packet, in the order they went silent, and leave the Listener.
func TestDriverFiresEachConnectionsIdleTimeout(t *testing.T) {
	const idle = 300 * time.Millisecond
	l, err := Listen("127.0.0.1:0", testConfig(Config{IdleTimeout: idle, KeepAlive: -1}))
	require.NoError(t, err)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const n = 5
	var servers []*Conn
	// dialled is when each Dial began: the server heard its client last
	// after that, so its deadline is no earlier than dialled + idle, on a
	// loaded machine too (a test goroutine that returns late from Accept
	// would take a later time than the server's last packet).
	var dialled []time.Time
	for range n {
		dialled = append(dialled, time.Now())
		c, err := Dial(ctx, l.Addr().String(), testConfig(Config{IdleTimeout: time.Minute, KeepAlive: -1, Linger: -1}))
		require.NoError(t, err)
		defer c.Close()
		s, err := l.Accept(ctx)
		require.NoError(t, err)
		servers = append(servers, s)
		// The test itself: the connections go silent a quarter of the
		// idle timeout apart, so their deadlines are distinct in real time.
		time.Sleep(idle / 4)
	}
	var ended []time.Time
	for _, s := range servers {
		select {
		case <-s.Done():
		case <-ctx.Done():
			t.Fatal("a server connection was never idled out")
		}
		ended = append(ended, time.Now())
		require.ErrorIs(t, s.Err(), ErrIdleTimeout)
	}
	for i := range n {
		// A driver that fired a later connection at an earlier one's
		// deadline would end it at least idle/4 too soon.
		require.GreaterOrEqual(t, ended[i].Sub(dialled[i]), idle, "connection %d: not before its own deadline", i)
	}
	require.Eventually(t, func() bool {
		l.t.mu.Lock()
		defer l.t.mu.Unlock()
		return len(l.t.conns) == 0
	}, 5*time.Second, 10*time.Millisecond, "idled-out connections leave the Listener")
}
