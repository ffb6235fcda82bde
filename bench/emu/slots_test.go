package emu

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// spoof sends one 1-byte datagram to the relay from each of n fresh
// source ports, as an off-path attacker spoofing source addresses would,
// and returns the sockets (closed at cleanup) so their ports stay taken.
func spoof(t *testing.T, r *Relay, n int) []*net.UDPConn {
	t.Helper()
	conns := make([]*net.UDPConn, n)
	for i := range conns {
		conns[i] = dial(t, r)
		_, err := conns[i].Write([]byte{0})
		require.NoError(t, err)
	}
	return conns
}

// admitted reports whether c's ping comes back within a short wait.
func admitted(c *net.UDPConn, seq byte) bool {
	_, _ = c.Write([]byte{'p', seq})
	_ = c.SetReadDeadline(time.Now().Add(150 * time.Millisecond))
	buf := make([]byte, 16)
	for {
		n, err := c.Read(buf)
		if err != nil {
			return false
		}
		if n == 2 && buf[0] == 'p' && buf[1] == seq {
			return true
		}
	}
}

// A burst of spoofed 1-byte datagrams from more source ports than there
// are slots takes every slot. Without ClientIdle the legitimate client is
// kept out for good; with it, it gets in once the spoofed slots have been
// idle for ClientIdle, and not before.
func TestRelaySpoofedFloodExpires(t *testing.T) {
	const idle = 400 * time.Millisecond
	srv := startServer(t, true)

	t.Run("without expiry the flood locks clients out", func(t *testing.T) {
		r := newRelay(t, RelayConfig{Target: srv.addr(), Forward: path(gbps, 0), Reverse: path(gbps, 0), ClientIdle: -1})
		spoof(t, r, 2*DefaultMaxClients)
		eventually(t, 2*time.Second, func() bool { return r.Stats().Clients == DefaultMaxClients }, "the flood did not fill the table")
		c := dial(t, r)
		for i := range 10 { // ~1.5 s: several times the idle of the other case
			require.False(t, admitted(c, byte(i)), "a client got in past a full table with no expiry")
		}
		require.Positive(t, r.Stats().DroppedNoClientSlot)
	})

	t.Run("with expiry the client gets in after ClientIdle", func(t *testing.T) {
		r := newRelay(t, RelayConfig{Target: srv.addr(), Forward: path(gbps, 0), Reverse: path(gbps, 0), ClientIdle: idle})
		flooded := time.Now()
		spoof(t, r, 2*DefaultMaxClients)
		eventually(t, 2*time.Second, func() bool { return r.Stats().Clients == DefaultMaxClients }, "the flood did not fill the table")
		c := dial(t, r)
		var in time.Duration
		for i := 0; ; i++ {
			if admitted(c, byte(i)) {
				in = time.Since(flooded)
				break
			}
			require.Less(t, time.Since(flooded), 10*idle, "the client never got a slot")
		}
		t.Logf("legitimate client admitted %v after the flood (ClientIdle %v)", in, idle)
		// Not before the spoofed slots were idle for ClientIdle (the
		// flood took well under idle/2 to send)...
		require.GreaterOrEqual(t, in, idle/2)
		st := r.Stats()
		require.GreaterOrEqual(t, st.ClientsExpired, uint64(DefaultMaxClients-1), "the spoofed slots were freed")
		require.Positive(t, st.DroppedNoClientSlot)
		// ...and a client that keeps talking keeps its slot past
		// ClientIdle, while a fresh flood comes and goes.
		spoof(t, r, 2*DefaultMaxClients)
		for i := range 8 {
			require.True(t, admitted(c, byte(100+i)), "an active client lost its slot")
			time.Sleep(idle / 4)
		}
	})
}

func TestRelayBlackout(t *testing.T) {
	srv := startServer(t, true)
	r := newRelay(t, RelayConfig{Target: srv.addr(), Forward: path(100*mbps, 5*time.Millisecond), Reverse: path(100*mbps, 5*time.Millisecond)})
	c := dial(t, r)
	ping(t, c, 1)
	r.SetBlackout(true)
	for i := range 3 {
		require.False(t, admitted(c, byte(i)), "a datagram crossed during the blackout")
	}
	st := r.Stats()
	require.Positive(t, st.Forward.Blackout, "forward datagrams dropped by the blackout")
	require.Zero(t, st.Forward.WriteErrors)
	r.SetBlackout(false)
	ping(t, c, 2)
}
