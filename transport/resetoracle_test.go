//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package transport

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/internal/wire"
)

// sharedPortServer is one process of a port shared with SO_REUSEPORT:
// its own socket, Transport (tr's settings) and Listener, accepting in
// the background.
func sharedPortServer(t *testing.T, addr string, tr *Transport) *serverLife {
	t.Helper()
	udp, err := ListenUDP(addr, true)
	require.NoError(t, err)
	tr.Conn = udp
	ln, err := tr.Listen(testConfig(Config{}))
	require.NoError(t, err)
	s := &serverLife{udp: udp, tr: tr, ln: ln}
	t.Cleanup(func() { s.tr.Close(); s.udp.Close() })
	go func() {
		for {
			if _, err := ln.Accept(context.Background()); err != nil {
				return
			}
		}
	}()
	return s
}

// resetProbe is what an observer who read connection ID id off the wire
// sends for it: any datagram long enough to draw a reset.
func resetProbe(id uint64) []byte {
	b := wire.AppendHeader(nil, wire.Header{Type: wire.TypeData, ConnID: id})
	return append(b, make([]byte, 60)...)
}

// probeFromManyPorts sends probe to addr from n sockets (n source
// ports, so the port's SO_REUSEPORT hash hands them to every process of
// the port), waits until the servers have counted every one (processed
// reports how many they have) and returns what came back.
func probeFromManyPorts(t *testing.T, addr net.Addr, probe []byte, n int, processed func() int64) [][]byte {
	t.Helper()
	base := processed()
	socks := make([]*net.UDPConn, n)
	for i := range socks {
		u, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		require.NoError(t, err)
		defer u.Close()
		_, err = u.WriteTo(probe, addr)
		require.NoError(t, err)
		socks[i] = u
	}
	require.Eventually(t, func() bool { return processed()-base >= int64(n) }, 10*time.Second, time.Millisecond,
		"the servers handle every probe")
	// A reset is written before the datagram that drew it is counted:
	// whatever was sent is in the probes' sockets now.
	var got [][]byte
	buf := make([]byte, 2048)
	for _, u := range socks {
		require.NoError(t, u.SetReadDeadline(time.Now().Add(time.Millisecond)))
		if k, _, err := u.ReadFrom(buf); err == nil {
			got = append(got, append([]byte(nil), buf[:k]...))
		}
	}
	return got
}

// The stateless reset oracle of RFC 9000 §21.11: two processes share one
// port (SO_REUSEPORT) and one reset key (as fresh-monitor's derive it
// from their TLS key), each with its own ServerID. An observer who read a
// live connection's ID sends datagrams for it from many source ports,
// which the kernel's hash spreads over both processes: the one holding
// the connection drops them (they fail its AEAD), the other, which does
// not hold it, must not answer with the token — whoever got it could end
// the connection with one forged 44-byte datagram. Nothing comes back,
// every probe is accounted for, and every client's connection lives on.
// (Before, with every process answering every ID: the token after 2
// source ports, 20 ms, and the connection ended.)
func TestStatelessResetOracleAcrossReusePort(t *testing.T) {
	key := [32]byte{0x0c, 0x1e}
	a := sharedPortServer(t, "127.0.0.1:0", &Transport{StatelessResetKey: &key, ServerID: []byte{1}})
	b := sharedPortServer(t, a.ln.Addr().String(), &Transport{StatelessResetKey: &key, ServerID: []byte{2}})
	addr := a.ln.Addr()

	// Clients until each process holds one (the hash picks by source
	// port).
	var clients []*Conn
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for a.ln.Stats().Connections == 0 || b.ln.Stats().Connections == 0 {
		require.Less(t, len(clients), 64, "64 clients all on one process")
		c, err := Dial(ctx, addr.String(), testConfig(Config{Linger: -1}))
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		clients = append(clients, c)
	}

	processed := func() int64 {
		sa, sb := a.ln.Stats(), b.ln.Stats()
		// At the holder: from a foreign address, not authentic
		// (WrongAddress). At the other: not its ID (withheld), or a
		// reset sent or rate-limited if it answered.
		return sa.WrongAddress + sb.WrongAddress + sa.StatelessResetsWithheld + sb.StatelessResetsWithheld +
			sa.StatelessResetsSent + sb.StatelessResetsSent + sa.StatelessResetsRateLimited + sb.StatelessResetsRateLimited
	}
	const ports = 64
	for _, c := range clients {
		resets := probeFromManyPorts(t, addr, resetProbe(c.serverConnID()), ports, processed)
		if len(resets) > 0 {
			// What the attacker does with a token: forge the reset
			// from the server's address (here a socket in the port's
			// group; off the host, a spoofed source).
			f, err := ListenUDP(addr.String(), true)
			require.NoError(t, err)
			_, err = f.WriteTo(resets[0], c.LocalAddr())
			require.NoError(t, err)
			f.Close()
			select {
			case <-c.Done():
			case <-time.After(time.Second):
			}
		}
		require.Zero(t, len(resets), "resets drawn for another process's live connection ID; the client then: %v", c.Err())
	}
	sa, sb := a.ln.Stats(), b.ln.Stats()
	t.Logf("%d clients (%d, %d), %d probes each: withheld %d, %d; sent %d, %d", len(clients), sa.Connections, sb.Connections, ports,
		sa.StatelessResetsWithheld, sb.StatelessResetsWithheld, sa.StatelessResetsSent, sb.StatelessResetsSent)
	require.Positive(t, sa.StatelessResetsWithheld, "probes reached the process without the connection")
	require.Positive(t, sb.StatelessResetsWithheld, "probes reached the process without the connection")
	require.Zero(t, sa.StatelessResetsSent+sb.StatelessResetsSent)

	// Every connection still carries data.
	for _, c := range clients {
		_, err := c.Write([]byte("ping"))
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		for _, c := range clients {
			if c.Stats().StreamBytesAcked != 4 {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond, "every client's write is acknowledged")
	for _, c := range clients {
		require.NoError(t, c.Err())
		require.Zero(t, c.Stats().StatelessResetsIgnored)
	}
}

// The reset still works where it must: a server's next life with the
// same key and ServerID resets the connections of its previous life. A
// life with the same key and another ServerID (another process of the
// port, in production) withholds its reset: the connection's owner may be
// alive elsewhere.
func TestStatelessResetBoundToServerID(t *testing.T) {
	key := [32]byte{0x5e, 0x1d}
	life1 := sharedPortServer(t, "127.0.0.1:0", &Transport{StatelessResetKey: &key, ServerID: []byte{1}})
	addr := life1.ln.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, err := Dial(ctx, addr, testConfig(Config{KeepAlive: 50 * time.Millisecond}))
	require.NoError(t, err)
	t.Cleanup(func() { cli.Close() })
	require.Eventually(t, func() bool { return life1.ln.Stats().Connections == 1 }, 5*time.Second, time.Millisecond)
	life1.crash(t)

	other := sharedPortServer(t, addr, &Transport{StatelessResetKey: &key, ServerID: []byte{2}})
	require.Eventually(t, func() bool { return other.ln.Stats().StatelessResetsWithheld >= 3 }, 5*time.Second, time.Millisecond,
		"the client's keep-alives reach the other server")
	require.NoError(t, cli.Err(), "the other server's ID: no reset")
	require.Zero(t, other.ln.Stats().StatelessResetsSent)
	require.Zero(t, cli.Stats().StatelessResetsIgnored)
	other.crash(t)

	sharedPortServer(t, addr, &Transport{StatelessResetKey: &key, ServerID: []byte{1}})
	select {
	case <-cli.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the server's next life sent no reset within 5 s")
	}
	require.ErrorIs(t, cli.Err(), ErrStatelessReset)
}

// A reset key on a socket that shares its port, without a ServerID to
// tell the processes' connection IDs apart, is refused at Listen with the
// cause and the fix; with a ServerID, or without a key, it is not.
func TestStatelessResetKeyNeedsServerIDOnSharedPort(t *testing.T) {
	key := [32]byte{1}
	udp, err := ListenUDP("127.0.0.1:0", true)
	require.NoError(t, err)
	defer udp.Close()
	_, err = (&Transport{Conn: udp, StatelessResetKey: &key}).Listen(testConfig(Config{}))
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.ErrorContains(t, err, "transport.Transport.StatelessResetKey")
	require.ErrorContains(t, err, "ServerID")
	require.ErrorContains(t, err, "RFC 9000 §21.11")

	for _, tr := range []*Transport{{Conn: udp, StatelessResetKey: &key, ServerID: []byte{7}}, {Conn: udp}} {
		l, err := tr.Listen(testConfig(Config{}))
		require.NoError(t, err)
		require.NoError(t, l.Close())
		require.NoError(t, tr.Close())
	}
	plain, err := ListenUDP("127.0.0.1:0", false)
	require.NoError(t, err)
	defer plain.Close()
	tr := &Transport{Conn: plain, StatelessResetKey: &key}
	_, err = tr.Listen(testConfig(Config{}))
	require.NoError(t, err, "a port of its own")
	tr.Close()
}
