package transport

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/seal"
	"github.com/fresh-udp/fresh/internal/session"
	"github.com/fresh-udp/fresh/internal/wire"
)

// helloOnce is a real TLS client's ClientHello (the Initial-level bytes
// of its first flight), made once: an attacker replays a genuine one, or
// the server would reject the Initial at once.
var helloOnce = sync.OnceValue(func() []byte {
	s, err := session.New(testConfig(Config{}).sessionConfigOrPanic(), 1, true, 0)
	if err != nil {
		panic(err)
	}
	defer s.Abort(ErrClosed)
	var hello []byte
	buf := make([]byte, 0, 1500)
	for {
		d, _, ok := s.Poll(0, 0, buf)
		if !ok {
			return hello
		}
		h, _, err := wire.ParseHeader(d)
		if err != nil || h.Type != wire.TypeInitial {
			panic("not an Initial")
		}
		body, err := session.OpenInitial(nil, &h, d)
		var in wire.Initial
		if err != nil || wire.ParseInitial(body, len(d), &in) != nil {
			panic("not an Initial")
		}
		hello = append(hello, in.Crypto...)
	}
})

// sealedInitial is an Initial datagram for connID carrying token and
// crypto from off, sealed as a TLS client seals it (under the Initial
// keys of connID, its token in the clear, packet number pn): anyone who
// saw a connection ID can make one.
func sealedInitial(connID uint64, pn int64, token []byte, off int, crypto []byte) []byte {
	k, err := seal.NewInitial(connID, true)
	if err != nil {
		panic(err)
	}
	b := wire.AppendHeader(nil, wire.Header{Type: wire.TypeInitial, Flags: wire.FlagProtected, Epoch: wire.EpochInitial, ConnID: connID, PN: pn})
	b = wire.AppendSealedInitial(b, wire.Initial{Token: token, CryptoOffset: int64(off), Crypto: crypto})
	return k.Seal(b, wire.HeaderLen+wire.InitialClearLen(token), uint64(pn), true)
}

// initialDatagrams is a client's first flight for connID carrying token:
// a genuine ClientHello in as many sealed Initials as it takes (two with
// the default post-quantum key share).
func initialDatagrams(connID uint64, token []byte) [][]byte {
	hello := helloOnce()
	var dgs [][]byte
	for off := 0; off < len(hello); {
		n := min(len(hello)-off, wire.MinInitialSize-wire.HeaderLen-12-len(token)-wire.ProtectedOverhead)
		dgs = append(dgs, sealedInitial(connID, int64(len(dgs)), token, off, hello[off:off+n]))
		off += n
	}
	return dgs
}

// initialDatagram is the first datagram of initialDatagrams.
func initialDatagram(connID uint64, token []byte) []byte { return initialDatagrams(connID, token)[0] }

// sendAll sends every datagram of dgs from the victim's address.
func (v *victim) sendAll(t *testing.T, dgs [][]byte, addr net.Addr) {
	for _, d := range dgs {
		v.send(t, d, addr)
	}
}

// victim is a UDP socket on loopback that never answers: it stands for
// the owner of a forged source address and counts what reaches it.
type victim struct {
	conn  *net.UDPConn
	n     atomic.Int64 // datagrams received
	bytes atomic.Int64
	mu    sync.Mutex
	dgs   [][]byte
	done  chan struct{}
}

func newVictim(t *testing.T) *victim {
	t.Helper()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	v := &victim{conn: conn, done: make(chan struct{})}
	go func() {
		defer close(v.done)
		buf := make([]byte, 65536)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			v.n.Add(1)
			v.bytes.Add(int64(n))
			v.mu.Lock()
			v.dgs = append(v.dgs, append([]byte(nil), buf[:n]...))
			v.mu.Unlock()
		}
	}()
	t.Cleanup(func() { conn.Close(); <-v.done })
	return v
}

// send sends b from the victim's address to addr, as an attacker forging
// that source address would.
func (v *victim) send(t *testing.T, b []byte, addr net.Addr) {
	t.Helper()
	_, err := v.conn.WriteTo(b, addr)
	require.NoError(t, err)
}

func (v *victim) datagrams() [][]byte {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([][]byte(nil), v.dgs...)
}

func (v *victim) addrPort() netip.AddrPort { return v.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

func listen(t *testing.T, cfg Config) *Listener {
	t.Helper()
	l, err := Listen("127.0.0.1:0", testConfig(cfg))
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l
}

// listenWith listens on a loopback socket of its own through a Transport
// with tr's settings.
func listenWith(t *testing.T, tr *Transport, cfg Config) *Listener {
	t.Helper()
	udp, err := ListenUDP("127.0.0.1:0", false)
	require.NoError(t, err)
	tr.Conn = udp
	l, err := tr.Listen(testConfig(cfg))
	require.NoError(t, err)
	t.Cleanup(func() {
		l.t.Close()
		udp.Close()
	})
	return l
}

// With Retry on (the default), a forged Initial draws exactly one Retry,
// smaller than the Initial, and the listener keeps nothing for it.
func TestSpoofedInitialDrawsOneRetry(t *testing.T) {
	l := listen(t, Config{})
	v := newVictim(t)
	initial := initialDatagram(0xabc, nil)
	v.send(t, initial, l.Addr())
	require.Eventually(t, func() bool { return v.n.Load() == 1 }, 5*time.Second, 5*time.Millisecond)
	// The test itself: an absence (no second datagram) cannot be waited
	// for, only watched for a while; a second Retry would come at once.
	time.Sleep(300 * time.Millisecond)
	dgs := v.datagrams()
	require.Len(t, dgs, 1)
	h, body, err := wire.ParseHeader(dgs[0])
	require.NoError(t, err)
	require.Equal(t, wire.TypeRetry, h.Type)
	require.Equal(t, uint64(0xabc), h.ConnID)
	var r wire.Retry
	require.NoError(t, wire.ParseRetry(body, &r))
	require.Less(t, len(dgs[0]), len(initial), "a Retry never amplifies")
	t.Logf("%d-byte Initial drew one %d-byte Retry", len(initial), len(dgs[0]))

	st := l.Stats()
	require.Equal(t, int64(1), st.RetriesSent)
	require.Zero(t, st.Connections)
	l.t.mu.Lock()
	require.Empty(t, l.t.conns)
	l.t.mu.Unlock()
	l.mu.Lock()
	require.Empty(t, l.sources.m)
	l.mu.Unlock()

	// Echoing the token from the same address opens the connection; this
	// is what a real client does, and what the forger cannot.
	v.sendAll(t, initialDatagrams(0xabc, r.Token), l.Addr())
	require.Eventually(t, func() bool { return l.Stats().Connections == 1 }, 5*time.Second, 5*time.Millisecond)
}

// An Initial whose token is not ours, or is ours but issued to another
// address or connection, is counted and answered with one Close that says
// why (RFC 9000 §8.1.3's INVALID_TOKEN, so the client fails at once rather
// than resend the token until it times out), smaller than the Initial and
// sealed under the server's Initial keys; no state is kept. An Initial
// damaged on the way fails to open and gets no answer: the client's
// retransmission repairs it.
func TestBadTokenRefused(t *testing.T) {
	l := listen(t, Config{})
	v, other := newVictim(t), newVictim(t)
	v.send(t, initialDatagram(1, nil), l.Addr())
	require.Eventually(t, func() bool { return v.n.Load() == 1 }, 5*time.Second, 5*time.Millisecond)
	_, body, err := wire.ParseHeader(v.datagrams()[0])
	require.NoError(t, err)
	var r wire.Retry
	require.NoError(t, wire.ParseRetry(body, &r))

	damaged := initialDatagram(1, r.Token)
	damaged[len(damaged)-40] ^= 1
	v.send(t, damaged, l.Addr())
	require.Eventually(t, func() bool { return l.Stats().InitialsUnauthenticated == 1 }, 5*time.Second, 5*time.Millisecond)

	other.send(t, initialDatagram(1, r.Token), l.Addr())                 // another address
	v.send(t, initialDatagram(2, r.Token), l.Addr())                     // another connection
	v.send(t, initialDatagram(3, make([]byte, retryTokenLen)), l.Addr()) // not ours
	require.Eventually(t, func() bool { return l.Stats().InitialsBadToken == 3 }, 5*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { return v.n.Load() == 3 && other.n.Load() == 1 }, 5*time.Second, 5*time.Millisecond,
		"one refusal per bad token: %d and %d datagrams", v.n.Load(), other.n.Load())
	// The test itself: watch a while for what must not come (a connection,
	// another answer); an absence cannot be waited for.
	time.Sleep(100 * time.Millisecond)
	require.Zero(t, l.Stats().Connections)
	require.Equal(t, int64(3), v.n.Load(), "the Retry and two refusals, none for the damaged Initial")
	for _, d := range append(v.datagrams()[1:], other.datagrams()...) {
		require.Less(t, len(d), wire.MinInitialSize/3, "a refusal never amplifies")
		h, _, err := wire.ParseHeader(d)
		require.NoError(t, err)
		require.Equal(t, wire.TypeClose, h.Type)
		require.Equal(t, wire.EpochInitial, h.Epoch)
		k, err := seal.NewInitial(h.ConnID, false)
		require.NoError(t, err)
		pt, err := k.Open(d, wire.HeaderLen, uint64(h.PN), true)
		require.NoError(t, err, "sealed under the server's Initial keys")
		var c wire.Close
		require.NoError(t, wire.ParseClose(pt, &c))
		require.Equal(t, uint32(0x0b), c.Code, "INVALID_TOKEN")
		require.Contains(t, string(c.Reason), "not issued by this server for this address")
	}
}

// With Retry off, a forged Initial opens a connection, but the server
// sends its address at most three times the Initial's bytes (RFC 9000
// §8.1), though the application writes a megabyte at once and the
// attacker sends blind ACKs for the connection from its own address, until
// the connection idles out.
func TestSpoofedInitialWithoutRetryIsLimited(t *testing.T) {
	l := listenWith(t, &Transport{DisableRetry: true}, Config{IdleTimeout: 1500 * time.Millisecond, HandshakeTimeout: 1500 * time.Millisecond})
	v, attacker := newVictim(t), newVictim(t)
	accepted := make(chan *Conn, 1)
	go func() {
		c, err := l.Accept(context.Background())
		if err != nil {
			return
		}
		accepted <- c
		_ = c.SendUpdate([]byte("status"))
		_, _ = c.Write(make([]byte, 1<<20)) // blocks until the connection ends
	}()
	initials := initialDatagrams(0xdef, nil)
	v.sendAll(t, initials, l.Addr())
	received := 0
	for _, d := range initials {
		received += len(d)
	}
	require.Eventually(t, func() bool { return l.Stats().Connections == 1 }, 5*time.Second, 5*time.Millisecond,
		"the forged Initial opened no connection")
	for pn := range 100 {
		ack := &wire.Ack{NRanges: 1, MaxData: 1 << 40}
		ack.Ranges[0] = wire.AckRange{Largest: int64(pn), Smallest: 0}
		attacker.send(t, wire.AppendAck(wire.AppendHeader(nil, wire.Header{Type: wire.TypeAck, ConnID: 0xdef}), ack), l.Addr())
		// One at a time, each read and refused before the next: spread
		// over the connection's life rather than a burst the socket drops.
		require.Eventually(t, func() bool { return l.Stats().WrongAddress == int64(pn+1) }, 5*time.Second, time.Millisecond)
	}
	// The handshake never completes (the forger cannot answer the
	// server's flight), so the connection never reaches Accept and ends
	// at the handshake timeout.
	require.Eventually(t, func() bool { return l.Stats().Connections == 0 }, 15*time.Second, 5*time.Millisecond)
	select {
	case <-accepted:
		t.Fatal("a connection that never completed its handshake was accepted")
	default:
	}
	sent := v.bytes.Load()
	t.Logf("without Retry: %d bytes in %d datagrams for a %d-byte forged first flight", sent, v.n.Load(), received)
	require.Positive(t, sent, "the server's flight went out")
	require.LessOrEqual(t, sent, int64(3*received))
	require.Equal(t, int64(100), l.Stats().WrongAddress)
	require.Zero(t, attacker.n.Load())
}

// A datagram with a live connection's ID from another address that does
// not authenticate is dropped and counted (RFC 9000 §9: only an authentic
// packet may move a connection): blind ACKs and PINGs from a forged source
// draw nothing to it, and the connection carries on.
func TestBlindPacketsFromAnotherAddressDrawNothing(t *testing.T) {
	l, cli, srv := pair(t, testConfig(Config{}), testConfig(Config{}))
	defer l.Close()
	defer cli.Close()
	srv.mu.Lock()
	id := srv.s.ConnID()
	srv.mu.Unlock()

	attacker := newVictim(t)
	ack := &wire.Ack{NRanges: 1, MaxData: 1 << 40}
	ack.Ranges[0] = wire.AckRange{Largest: 1 << 20, Smallest: 0}
	blindAck := wire.AppendAck(wire.AppendHeader(nil, wire.Header{Type: wire.TypeAck, ConnID: id}), ack)
	ping := wire.AppendHeader(nil, wire.Header{Type: wire.TypePing, ConnID: id, PN: 1 << 30})
	const n = 200
	for range n {
		attacker.send(t, blindAck, l.Addr())
		attacker.send(t, ping, l.Addr())
	}
	require.Eventually(t, func() bool { return l.Stats().WrongAddress == 2*n }, 5*time.Second, 5*time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, cli.SendUpdate([]byte("still here")))
	u, err := srv.ReadUpdate(ctx)
	require.NoError(t, err)
	require.Equal(t, "still here", string(u.Payload))
	require.NoError(t, srv.Err())
	// The test itself: watch a while for traffic that must not come to
	// the attacker's address; an absence cannot be waited for.
	time.Sleep(200 * time.Millisecond)
	require.Zero(t, attacker.n.Load(), "the attacker's address got traffic")

	// Past the binding (an attacker on the path, sending from the
	// client's address) the session's packet protection drops it.
	before := srv.Stats().Unauthenticated
	srv.mu.Lock()
	from := srv.paths.cur.ap
	srv.mu.Unlock()
	srv.handleDatagram(blindAck, from)
	require.Equal(t, before+1, srv.Stats().Unauthenticated)
	require.NoError(t, srv.Err())
}

// floodInitials sends n token-less Initials with random connection IDs to
// addr from sockets source ports, as fast as it can.
func floodInitials(t *testing.T, addr net.Addr, n, sockets int) {
	t.Helper()
	var wg sync.WaitGroup
	for i := range sockets {
		conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Error(err) // may run on another goroutine than the test's
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			for j := i; j < n; j += sockets {
				for _, d := range initialDatagrams(randomID(), nil) {
					_, _ = conn.WriteTo(d, addr)
				}
			}
		}()
	}
	wg.Wait()
}

// An Initial flood from many source ports against a listener whose
// application accepts slowly does not stop legitimate Dials, and keeps no
// state: with Retry every forged Initial gets a Retry and nothing else.
func TestInitialFloodDoesNotStopDial(t *testing.T) {
	l := listen(t, Config{})
	stop := make(chan struct{})
	var accepted []*Conn
	acceptDone := make(chan struct{})
	go func() { // an application that accepts 10 connections a second
		defer close(acceptDone)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			c, err := l.Accept(ctx)
			cancel()
			if err == nil {
				accepted = append(accepted, c)
			}
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()

	const dials = 6
	flooded := make(chan struct{})
	go func() {
		defer close(flooded)
		floodInitials(t, l.Addr(), 5000, 50)
	}()
	var ok atomic.Int64
	var wg sync.WaitGroup
	for i := range dials {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The Dials spread over the flood: the i-th starts once the
			// listener has answered i×400 of its Initials, however fast
			// the machine runs it.
			pollUntil(10*time.Second, func() bool { return l.Stats().RetriesSent >= int64(i)*400 })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := Dial(ctx, l.Addr().String(), testConfig(Config{}))
			if err == nil {
				ok.Add(1)
				c.Close()
			}
		}()
	}
	wg.Wait()
	<-flooded
	close(stop)
	<-acceptDone
	for _, c := range accepted {
		c.Close()
	}
	st := l.Stats()
	t.Logf("%d/%d Dials succeeded during the flood; %+v", ok.Load(), dials, st)
	require.Equal(t, int64(dials), ok.Load())
	require.Positive(t, st.RetriesSent)
	require.LessOrEqual(t, st.Connections, dials, "forged Initials created state")
	require.Zero(t, st.InitialsBacklogFull+st.InitialsTotalLimit)
}

// Without Retry the same flood does create connections: the defence
// above is what keeps them out. (A small flood: each costs real memory.)
func TestInitialFloodWithoutRetryCreatesState(t *testing.T) {
	l := listenWith(t, &Transport{DisableRetry: true}, Config{})
	floodInitials(t, l.Addr(), 20, 4)
	require.Eventually(t, func() bool { return l.Stats().Connections >= 15 }, 5*time.Second, 5*time.Millisecond)
}

// dialWithin dials l with a short handshake timeout.
func dialWithin(l *Listener, d time.Duration) (*Conn, error) {
	return Dial(context.Background(), l.Addr().String(), testConfig(Config{HandshakeTimeout: d}))
}

// acceptAll accepts every connection of l until it closes (its Close
// closes them).
func acceptAll(l *Listener) {
	go func() {
		for {
			if _, err := l.Accept(context.Background()); err != nil {
				return
			}
		}
	}()
}

// One source may hold MaxConnectionsPerSource connections; a slot frees
// when one of them ends.
func TestPerSourceConnectionLimit(t *testing.T) {
	l := listenWith(t, &Transport{LimitLoopback: true, MaxConnectionsPerSource: 2}, Config{})
	acceptAll(l)
	a, err := dialWithin(l, 5*time.Second)
	require.NoError(t, err)
	b, err := dialWithin(l, 5*time.Second)
	require.NoError(t, err)
	defer b.Close()
	_, err = dialWithin(l, 700*time.Millisecond)
	require.ErrorIs(t, err, ErrHandshake)
	require.Positive(t, l.Stats().InitialsSourceLimit)

	require.NoError(t, a.Close())
	require.Eventually(t, func() bool { return l.Stats().Connections == 1 }, 5*time.Second, 5*time.Millisecond)
	c, err := dialWithin(l, 5*time.Second)
	require.NoError(t, err)
	c.Close()
}

// Loopback sources are exempt from the per-source limits by default.
func TestLoopbackExemptByDefault(t *testing.T) {
	l := listenWith(t, &Transport{MaxConnectionsPerSource: 1, HandshakeBurst: 1, HandshakeRate: 0.001}, Config{})
	acceptAll(l)
	for range 3 {
		c, err := dialWithin(l, 5*time.Second)
		require.NoError(t, err)
		defer c.Close()
	}
	st := l.Stats()
	require.Zero(t, st.InitialsSourceLimit+st.InitialsRateLimited)
}

// A source opens at most HandshakeBurst connections at once and then
// HandshakeRate per second; forged token-less Initials from its address
// use none of that budget (only an Initial with a valid token counts).
func TestHandshakeRateLimit(t *testing.T) {
	l := listenWith(t, &Transport{LimitLoopback: true, HandshakeRate: 0.5, HandshakeBurst: 2}, Config{})
	acceptAll(l)
	floodInitials(t, l.Addr(), 100, 4) // same source (127.0.0.1): Retries only
	dialsThenRefused(t, l, 2)
	require.Positive(t, l.Stats().InitialsRateLimited)
}

// dialsThenRefused dials l n times successfully (closing the connections
// when the test ends), then once more, which the limit must refuse.
func dialsThenRefused(t *testing.T, l *Listener, n int) {
	t.Helper()
	for range n {
		c, err := dialWithin(l, 5*time.Second)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
	}
	_, err := dialWithin(l, 700*time.Millisecond)
	require.ErrorIs(t, err, ErrHandshake)
}

// MaxConnections bounds the connections of all sources together.
func TestMaxConnections(t *testing.T) {
	l := listenWith(t, &Transport{MaxConnections: 2}, Config{})
	acceptAll(l)
	dialsThenRefused(t, l, 2)
	require.Positive(t, l.Stats().InitialsTotalLimit)
}

// A connection whose handshake does not complete within HandshakeTimeout
// is dropped without ever reaching Accept. (The plaintext handshake
// completes on the server at once, so the test holds a session that stays
// handshaking: a client-side one.)
func TestHandshakeTimeoutNeverAccepted(t *testing.T) {
	l := listen(t, Config{HandshakeTimeout: 300 * time.Millisecond})
	v := newVictim(t)
	s, err := session.New(l.cfg.sessionConfig(), 77, true, l.cfg.Clock.Now())
	require.NoError(t, err)
	l.mu.Lock()
	e, err := l.track(77, 0, v.addrPort(), netip.Addr{}, false, s)
	l.mu.Unlock()
	require.NoError(t, err)
	l.deliverIfOpen(e)
	require.Equal(t, 1, l.Stats().Connections)

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = l.Accept(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a handshaking connection was accepted")
	st := l.Stats()
	require.Equal(t, int64(1), st.HandshakeTimeouts)
	require.Equal(t, HandshakeFailures{Timeout: 1}, st.HandshakeFailures, "counted once, as a timeout")
	require.Equal(t, int64(1), st.HandshakesStarted)
	require.Zero(t, st.HandshakesCompleted)
	require.Zero(t, st.Connections)
	require.ErrorIs(t, e.c.Err(), ErrHandshake)
}

// The limits' settings are validated.
func TestListenLimitsValidation(t *testing.T) {
	udp, err := ListenUDP("127.0.0.1:0", false)
	require.NoError(t, err)
	defer udp.Close()
	for _, tr := range []*Transport{
		{Conn: udp, MaxConnections: -1}, {Conn: udp, MaxConnectionsPerSource: -1},
		{Conn: udp, HandshakeRate: -1}, {Conn: udp, HandshakeBurst: -1}, {},
		{Conn: udp, MaxHandshakesPerSource: -1}, {Conn: udp, MaxHandshakesPerSource: 1001},
		{Conn: udp, MaxHandshakes: 5, MaxHandshakesPerSource: 6},
	} {
		_, err := tr.Listen(testConfig(Config{}))
		require.ErrorIs(t, err, ErrInvalidConfig, "%+v", tr)
		tr.Close()
	}
	maxConns, perSource, rate, burst := (&Transport{}).limits()
	require.Equal(t, 100_000, maxConns)
	require.Equal(t, 1024, perSource)
	require.Equal(t, 100.0, rate)
	require.Equal(t, 100, burst)
	require.Equal(t, 100, (&Transport{}).maxHandshakesPerSource(), "a tenth of MaxHandshakes")
	require.Equal(t, 5, (&Transport{MaxHandshakes: 50}).maxHandshakesPerSource())
	require.Equal(t, 1, (&Transport{MaxHandshakes: 5}).maxHandshakesPerSource(), "at least 1")
	require.Equal(t, 1000, (&Transport{MaxHandshakesPerSource: 1000}).maxHandshakesPerSource())
}

// The per-source table counts IPv6 sources by /64 and IPv4 ones by
// address, and forgets a source once it holds nothing and its bucket has
// refilled.
func TestSourceTable(t *testing.T) {
	require.Equal(t, sourceOf(netip.MustParseAddr("2001:db8:1:2::1")), sourceOf(netip.MustParseAddr("2001:db8:1:2:ffff::9")))
	require.NotEqual(t, sourceOf(netip.MustParseAddr("2001:db8:1:2::1")), sourceOf(netip.MustParseAddr("2001:db8:1:3::1")))
	require.Equal(t, netip.MustParseAddr("192.0.2.1"), sourceOf(netip.MustParseAddr("::ffff:192.0.2.1")))

	tab := newSourceTable(10, 100, 1, 2, 0)
	a := netip.MustParseAddr("192.0.2.1")
	require.NoError(t, tab.admit(a, true, false, 0))
	require.NoError(t, tab.admit(a, true, false, 0))
	require.ErrorIs(t, tab.admit(a, true, false, 0), errRateLimit)
	require.NoError(t, tab.admit(a, true, false, clockSeconds(1)), "one more a second later")
	for range 3 {
		tab.handshakeEnded(a)
		tab.release(a)
	}
	require.Len(t, tab.m, 1)
	_ = tab.admit(netip.MustParseAddr("192.0.2.2"), true, false, clockSeconds(20)) // prunes
	require.NotContains(t, tab.m, a, "an idle source is forgotten")
}

// Every source, exempt loopback ones too, has at most hsPerSource
// handshakes in progress; one that ends gives its place back, and another
// source has places of its own. A source with handshakes under way is
// not forgotten.
func TestSourceTableHandshakes(t *testing.T) {
	tab := newSourceTable(10, 2, 1, 100, 0)
	lo, lo2 := netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.1")
	for _, limited := range []bool{false, true} {
		a := netip.MustParseAddr("192.0.2.1")
		if !limited {
			a = lo
		}
		require.NoError(t, tab.admit(a, limited, false, 0))
		require.NoError(t, tab.admit(a, limited, false, 0))
		require.ErrorIs(t, tab.admit(a, limited, false, 0), errSourceHandshakes, "limited %v", limited)
		require.NoError(t, tab.admit(lo2, false, false, 0), "another source has its own places")
		tab.handshakeEnded(lo2)
		tab.handshakeEnded(a)
		require.NoError(t, tab.admit(a, limited, false, 0), "a handshake that ended gives its place back")
	}
	_ = tab.admit(lo2, false, false, clockSeconds(20)) // prunes
	require.Contains(t, tab.m, lo, "a source with handshakes under way stays")

	// Crowded: only a source with none under way gets a place.
	one := netip.MustParseAddr("192.0.2.8")
	require.NoError(t, tab.admit(one, true, false, clockSeconds(20)))
	require.ErrorIs(t, tab.admit(one, true, true, clockSeconds(20)), errHandshakes, "one under way")
	fresh := netip.MustParseAddr("192.0.2.9")
	require.NoError(t, tab.admit(fresh, true, true, clockSeconds(20)), "none under way")
	require.ErrorIs(t, tab.admit(fresh, true, true, clockSeconds(20)), errHandshakes, "now one")
	require.NoError(t, tab.admit(fresh, true, false, clockSeconds(20)), "not crowded: up to its part")
}

func clockSeconds(s float64) clock.Mono { return clock.Mono(s * float64(time.Second)) }

// offsetClock is the system clock read ahead by an offset a test moves
// forward (a listener's clock, jumped past a token's lifetime).
type offsetClock struct {
	*clock.System
	offset atomic.Int64 // ns
}

func (c *offsetClock) Now() clock.Mono {
	return c.System.Now().Add(time.Duration(c.offset.Load()))
}

// The interop suite's stranded Dial (a 60 s HandshakeTimeout through 30 %
// loss in bursts): the Retry arrives, the Initials carrying its token are
// lost until the token has expired, and the listener dropped the late one
// without a word, so the client, which takes one Retry per connection,
// resent it until it gave up — Dial failed with "handshake failed" and no
// reason, the listener's only trace InitialsBadToken. Here the listener's
// clock jumps past the token's lifetime as the first such Initial is lost:
// the next one draws a Close saying the token expired (INVALID_TOKEN, RFC
// 9000 §8.1.3), and Dial fails at once with ErrInvalidToken and the
// reason, not at its HandshakeTimeout.
func TestExpiredRetryTokenFailsDialAtOnce(t *testing.T) {
	clk := &offsetClock{System: clock.NewSystem()}
	l := listen(t, Config{Clock: clk})
	relay := newCapturingRelay(t, l.Addr().(*net.UDPAddr), 0)
	var lost atomic.Int32 // written by the relay's goroutine
	relay.setDrop(func(b []byte) bool {
		h, body, err := wire.ParseHeader(b)
		if err != nil || h.Type != wire.TypeInitial {
			return false
		}
		if tok, _, err := wire.ParseInitialToken(body, len(b)); err != nil || tok == nil || lost.Load() > 0 {
			return false
		}
		lost.Add(1)
		clk.offset.Add(int64(retryTokenLifetime + time.Second)) // the token expires while it is lost
		return true
	})
	const hsTimeout = 5 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 2*hsTimeout)
	defer cancel()
	start := time.Now()
	c, err := Dial(ctx, relay.addr().String(), testConfig(Config{HandshakeTimeout: hsTimeout}))
	took := time.Since(start)
	if c != nil {
		c.Close()
	}
	t.Logf("Dial failed after %v: %v", took.Round(time.Millisecond), err)
	require.Equal(t, int32(1), lost.Load())
	require.ErrorIs(t, err, ErrHandshake)
	require.ErrorIs(t, err, ErrInvalidToken)
	require.ErrorContains(t, err, "the address-validation token of its Retry (expired: issued 11")
	require.Less(t, took, hsTimeout/2, "Dial waited for its HandshakeTimeout")
	st := l.Stats()
	require.Equal(t, int64(1), st.InitialsBadToken)
	require.Zero(t, st.HandshakesStarted, "no state for the refused Initial")
}

// A TLS listener takes an unsealed Initial only from a plaintext client
// (no ClientHello: it gets its Retry, then the session tells it the
// listener runs TLS). One carrying a ClientHello in the clear is no TLS
// client's of this version: dropped and counted, no Retry, no state.
func TestListenerDropsClientHelloInTheClear(t *testing.T) {
	l := listen(t, Config{})
	v := newVictim(t)
	hello := helloOnce()
	clear := wire.AppendInitial(wire.AppendHeader(nil, wire.Header{Type: wire.TypeInitial, ConnID: 0x77}), wire.Initial{Crypto: hello[:600]})
	v.send(t, clear, l.Addr())
	require.Eventually(t, func() bool { return l.Stats().InitialsUnauthenticated == 1 }, 5*time.Second, 5*time.Millisecond)
	probe := wire.AppendInitial(wire.AppendHeader(nil, wire.Header{Type: wire.TypeInitial, ConnID: 0x78}), wire.Initial{})
	v.send(t, probe, l.Addr())
	require.Eventually(t, func() bool { return l.Stats().RetriesSent == 1 }, 5*time.Second, 5*time.Millisecond)
	time.Sleep(100 * time.Millisecond) // what must not come: an answer to the first
	require.Equal(t, int64(1), v.n.Load(), "only the plaintext probe's Retry")
	require.Zero(t, l.Stats().Connections)
}

// A Dial that reaches its HandshakeTimeout says what it heard, not only
// that the deadline passed: here a Retry, then nothing (every Initial
// carrying its token lost). TestDialTimeoutError: nothing at all.
func TestDialTimeoutSaysWhatItHeard(t *testing.T) {
	l := listen(t, Config{})
	relay := newCapturingRelay(t, l.Addr().(*net.UDPAddr), 0)
	relay.setDrop(func(b []byte) bool {
		h, body, err := wire.ParseHeader(b)
		if err != nil || h.Type != wire.TypeInitial {
			return false
		}
		tok, _, err := wire.ParseInitialToken(body, len(b))
		return err == nil && tok != nil // every Initial after the Retry lost
	})
	_, err := Dial(t.Context(), relay.addr().String(), testConfig(Config{HandshakeTimeout: 500 * time.Millisecond}))
	require.ErrorIs(t, err, ErrHandshake)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "the server answered with a Retry, then nothing for")
}
