package quichook_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/transport/devcert"
	"github.com/fresh-udp/fresh/transport/quichook"
)

// Off-path attacks on the hook: the attacker knows the addresses and
// ports and can send datagrams with any source address, but sees none of
// the datagrams between the hooked endpoints. On loopback the spoofed
// source is played by a socket bound where the victim's traffic appears
// to come from (a forwarder in front of the client, or the victim's own
// socket, which never answers). These tests use nothing from bench, so
// that they stay with the hook wherever it lives.

// spoofRelay forwards between one client and a server; the server sees
// every datagram from back's address, so writing to back's connection is
// sending with the client's source address.
type spoofRelay struct {
	front, back *net.UDPConn
	client      atomic.Pointer[net.UDPAddr]
	wg          sync.WaitGroup
}

func newSpoofRelay(t *testing.T, server net.Addr) *spoofRelay {
	t.Helper()
	front, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	back, err := net.DialUDP("udp", nil, server.(*net.UDPAddr))
	require.NoError(t, err)
	r := &spoofRelay{front: front, back: back}
	r.wg.Add(2)
	go func() {
		defer r.wg.Done()
		buf := make([]byte, 1<<16)
		for {
			n, from, err := front.ReadFromUDP(buf)
			if err != nil {
				return
			}
			r.client.Store(from)
			_, _ = back.Write(buf[:n])
		}
	}()
	go func() {
		defer r.wg.Done()
		buf := make([]byte, 1<<16)
		for {
			n, err := back.Read(buf)
			if err != nil {
				return
			}
			if to := r.client.Load(); to != nil {
				_, _ = front.WriteToUDP(buf[:n], to)
			}
		}
	}()
	t.Cleanup(func() {
		front.Close()
		back.Close()
		r.wg.Wait()
	})
	return r
}

// spoof sends b to the server from the client's address.
func (r *spoofRelay) spoof(b []byte) error {
	_, err := r.back.Write(b)
	return err
}

// hookEndpoint is a quic-go Transport over a hook.
type hookEndpoint struct {
	tr   *quic.Transport
	hook *quichook.PacketConn
}

func newHookEndpoint(t *testing.T, cfg quichook.Config) *hookEndpoint {
	t.Helper()
	h, err := quichook.ListenPacket("127.0.0.1:0", cfg)
	require.NoError(t, err)
	e := &hookEndpoint{tr: &quic.Transport{Conn: h}, hook: h}
	t.Cleanup(func() {
		e.tr.Close()
		h.Close()
	})
	return e
}

func attackTLS(t *testing.T) (srv, cli *tls.Config) {
	t.Helper()
	c, err := devcert.Loopback()
	require.NoError(t, err)
	c.NextProtos = []string{"fresh-quichook-attack"}
	return c, c.Clone()
}

// stream is one upload in progress: the client writes as fast as quic-go
// takes it until stop, the server counts what it reads.
type stream struct {
	read   atomic.Int64
	cancel context.CancelFunc
	done   chan error
}

func startStream(t *testing.T, cli, srv *hookEndpoint, to net.Addr) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := attackTLS(t)
	ln, err := srv.tr.Listen(st, &quic.Config{})
	require.NoError(t, err)
	s := &stream{cancel: cancel, done: make(chan error, 2)}
	go func() {
		conn, err := ln.Accept(ctx)
		if err != nil {
			s.done <- err
			return
		}
		defer conn.CloseWithError(0, "")
		str, err := conn.AcceptStream(ctx)
		if err != nil {
			s.done <- err
			return
		}
		buf := make([]byte, 64<<10)
		for {
			n, err := str.Read(buf)
			s.read.Add(int64(n))
			if err != nil {
				s.done <- nil
				return
			}
		}
	}()
	dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
	defer dcancel()
	conn, err := cli.tr.Dial(dctx, to, ct, &quic.Config{})
	require.NoError(t, err)
	str, err := conn.OpenStreamSync(dctx)
	require.NoError(t, err)
	go func() {
		buf := make([]byte, 64<<10)
		for ctx.Err() == nil {
			if _, err := str.Write(buf); err != nil {
				break
			}
		}
		s.done <- nil
	}()
	t.Cleanup(func() {
		cancel()
		conn.CloseWithError(0, "") // unblocks a write the attack stalled
		ln.Close()
		<-s.done
		<-s.done
	})
	return s
}

// rate is the bytes the server read per second over the next d.
func (s *stream) rate(d time.Duration) float64 {
	b0, t0 := s.read.Load(), time.Now()
	time.Sleep(d)
	return float64(s.read.Load()-b0) / time.Since(t0).Seconds()
}

// (a) One forged shim data datagram with a huge sequence number, sent
// with the client's address, must not stall the hooked upload: within a
// second its goodput is back to at least a fifth of what it was. Before
// the per-peer cookie and the sequence window, the receiver took 2^62 as
// its largest, every later feedback acknowledged "2^62", the sender
// rejected every one of them as acknowledging what it never sent, and
// the flow crawled at one window per backed-off RTO for good.
func TestAttackForgedSequenceDoesNotStallUpload(t *testing.T) {
	srv, cli := newHookEndpoint(t, quichook.Config{}), newHookEndpoint(t, quichook.Config{})
	relay := newSpoofRelay(t, srv.hook.LocalAddr())
	s := startStream(t, cli, srv, relay.front.LocalAddr())
	time.Sleep(time.Second)
	require.Positive(t, cli.hook.Stats().ShimSent, "the upload goes through the shim")
	before := s.rate(500 * time.Millisecond)
	require.Positive(t, before)
	require.NoError(t, relay.spoof(quichook.ForgeData(1<<62, []byte{0x40, 1, 2, 3})))
	time.Sleep(time.Second)
	after := s.rate(time.Second)
	t.Logf("goodput %.0f Mbit/s before, %.0f Mbit/s 1-2 s after the forged datagram", before*8/1e6, after*8/1e6)
	// A fifth, not the whole: loopback goodput swings with the machine's
	// load, while the attack took the flow from hundreds of Mbit/s to a
	// few kbit/s.
	require.GreaterOrEqual(t, after, before/5, "the flow recovered within 1 s")
	st := cli.hook.Stats()
	require.Len(t, st.Peers, 1)
	require.True(t, st.Peers[0].Hooked)
}

// jumpClock is the system clock with jumps: the hook's notion of how long
// a peer has been quiet can be moved on by a minute without the test
// waiting for it, while time still flows for everything else.
type jumpClock struct {
	sys    *clock.System
	offset atomic.Int64
}

func (c *jumpClock) Now() clock.Mono      { return c.sys.Now() + clock.Mono(c.offset.Load()) }
func (c *jumpClock) Wall() time.Time      { return c.sys.Wall().Add(time.Duration(c.offset.Load())) }
func (c *jumpClock) jump(d time.Duration) { c.offset.Add(int64(d)) }

// upload runs a short hooked upload from cli to srv and reports the bytes
// the server read (an error if the connection could not be made).
func shortUpload(t *testing.T, cli, srv *hookEndpoint) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, ct := attackTLS(t)
	ln, err := srv.tr.Listen(st, &quic.Config{})
	require.NoError(t, err)
	defer ln.Close()
	got := make(chan int64, 1)
	go func() {
		conn, err := ln.Accept(ctx)
		if err != nil {
			got <- -1
			return
		}
		defer conn.CloseWithError(0, "")
		str, err := conn.AcceptStream(ctx)
		if err != nil {
			got <- -1
			return
		}
		n, _ := io.Copy(io.Discard, str)
		got <- n
	}()
	conn, err := cli.tr.Dial(ctx, srv.hook.LocalAddr(), ct, &quic.Config{})
	require.NoError(t, err, "the handshake completes")
	defer conn.CloseWithError(0, "")
	str, err := conn.OpenStreamSync(ctx)
	require.NoError(t, err)
	_, err = str.Write(make([]byte, 1<<20))
	require.NoError(t, err)
	require.NoError(t, str.Close())
	return <-got
}

// (b) Spoofed hellos from 255 addresses, refreshed every 5 s, fill what
// used to be the one peer table (MaxPeers 256 with the real peer). A new
// real client must still be hooked, and a real peer quiet for 60 s must
// neither be evicted nor black-holed when it comes back.
func TestAttackSpoofedHellosCannotEvictOrLockOut(t *testing.T) {
	clk := &jumpClock{sys: clock.NewSystem()}
	srv := newHookEndpoint(t, quichook.Config{Clock: clk})
	old := newHookEndpoint(t, quichook.Config{})
	require.Equal(t, int64(1<<20), shortUpload(t, old, srv))
	require.True(t, peerOf(t, srv.hook, old.hook.LocalAddr()).Hooked, "the real peer is hooked")

	spoofed := make([]*net.UDPConn, 255)
	for i := range spoofed {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		require.NoError(t, err)
		defer c.Close()
		spoofed[i] = c
	}
	hello := quichook.ForgeHello()
	refresh := func() {
		for _, c := range spoofed {
			_, err := c.WriteTo(hello, srv.hook.LocalAddr())
			require.NoError(t, err)
		}
		time.Sleep(20 * time.Millisecond) // let the server read them
	}
	for range 12 { // a minute of the hook's time, the hellos refreshed every 5 s
		refresh()
		clk.jump(5 * time.Second)
	}
	refresh()

	newcomer := newHookEndpoint(t, quichook.Config{})
	require.Equal(t, int64(1<<20), shortUpload(t, newcomer, srv))
	require.True(t, peerOf(t, srv.hook, newcomer.hook.LocalAddr()).Hooked, "a new real client is still hooked")
	require.Positive(t, newcomer.hook.Stats().ShimSent)

	require.Zero(t, srv.hook.Stats().PeersEvicted, "the quiet real peer kept its place")
	shimmed := srv.hook.Stats().ShimReceived
	require.Equal(t, int64(1<<20), shortUpload(t, old, srv), "the quiet real peer is not black-holed")
	require.True(t, peerOf(t, srv.hook, old.hook.LocalAddr()).Hooked)
	require.Greater(t, srv.hook.Stats().ShimReceived, shimmed, "and still hooked")
}

func peerOf(t *testing.T, h *quichook.PacketConn, a net.Addr) quichook.PeerStats {
	t.Helper()
	want := a.(*net.UDPAddr).AddrPort()
	for _, p := range h.Stats().Peers {
		if p.Addr == want {
			return p
		}
	}
	t.Fatalf("no peer %v", a)
	return quichook.PeerStats{}
}

// (c) Shim datagrams sent with a victim's address (data with gaps in its
// sequence numbers, the most feedback per byte, and hellos) must not make
// the hook send the victim more than 3 times the bytes "it" sent (RFC 9000
// §8's anti-amplification limit). Before the cookie, every data datagram
// was answered with feedback carrying up to 16 ranges: over 10 times the
// bytes.
func TestAttackNoReflectionToSpoofedAddress(t *testing.T) {
	h, err := quichook.ListenPacket("127.0.0.1:0", quichook.Config{})
	require.NoError(t, err)
	drained := readLoop(h) // quic-go's reader, which drops what it cannot decrypt
	defer func() { h.Close(); <-drained }()
	victim, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer victim.Close()
	var received atomic.Int64
	go func() {
		buf := make([]byte, 1<<16)
		for {
			n, _, err := victim.ReadFrom(buf)
			if err != nil {
				return
			}
			received.Add(int64(n))
		}
	}()
	sent := 0
	send := func(b []byte) {
		_, err := victim.WriteTo(b, h.LocalAddr())
		require.NoError(t, err)
		sent += len(b)
	}
	send(quichook.ForgeHello())
	for i := range 100 {
		send(quichook.ForgeData(uint64(2*i), []byte{0x40}))
		if i%10 == 0 {
			send(quichook.ForgeHello())
		}
		time.Sleep(3 * time.Millisecond) // past the feedback delay: one feedback each
	}
	time.Sleep(200 * time.Millisecond)
	t.Logf("victim sent %d bytes, received %d", sent, received.Load())
	require.LessOrEqual(t, received.Load(), int64(3*sent), "at most 3x reflected")
}
