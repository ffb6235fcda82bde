package session

import (
	"bytes"
	"crypto/tls"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/transport/devcert"
)

// Pair is the one harness of this package's tests, as quinn-proto's are
// built: a client and a server session joined by a simulated link, in
// virtual time. Nothing sleeps and nothing ticks: Step jumps the clock to
// the earliest thing due (either end's NextTimeout or a datagram's
// arrival) and does all that is due then, so a test's result depends on
// the protocol alone, never on the machine's speed or load.
//
// Both ends run through the public API the drivers use (Handle, Poll,
// NextTimeout, Timeout), so with TLS the packet protection is on the path.
// Their wall clocks are the virtual clock in µs (the server's SrvAhead µs
// ahead), so round trips and one-way delays agree with what the link does.
type Pair struct {
	Cli, Srv *Session
	Now      clock.Mono
	Link     Link
	// SrvAhead is the server's wall clock minus the client's, µs.
	SrvAhead int64
	// Filter, if set, sees a copy of every datagram as it is sent and
	// reports whether it goes on; it may change the bytes.
	Filter func(from *Session, d []byte) bool
	// Deliver, if set, hands each arriving datagram to its end instead of
	// Handle (a test that models addresses calls HandleFrom).
	Deliver func(to *Session, b []byte)
	// Record keeps every datagram sent, as sent, in Sent.
	Record bool
	Sent   []Datagram
	// Granularity is how far the clock moves when an end asks to be woken
	// at an instant it was just woken at and then had nothing to do (a
	// driver's timer would not fire twice at once either). Default 100 µs.
	Granularity time.Duration
	// Spurious counts those wake-ups.
	Spurious int
	// Reordered counts the datagrams that overtook one sent before them
	// the same way (Jitter).
	Reordered int

	tb     testing.TB
	rng    *rand.Rand
	q      []flight // in flight, by arrival time; FIFO among equal times
	free   [][]byte // buffers of delivered flights, for reuse: no allocation per datagram
	busy   [2]clock.Mono
	buf    []byte
	idleAt clock.Mono // the last instant at which nothing moved, or -1
}

// Link is the simulated path, the same both ways.
type Link struct {
	// Delay is the one-way propagation delay.
	Delay time.Duration
	// Jitter adds a delay uniform in [0, Jitter) to each datagram, so
	// datagrams sent closer together than that may arrive reordered.
	Jitter time.Duration
	// Rate is the bottleneck's rate, bit/s (0: unlimited): each datagram
	// takes its size at Rate to leave, behind those queued before it. The
	// queue is unbounded: the sessions' controllers keep it short.
	Rate int64
	// Loss is the probability that a datagram is lost, 0 to 1.
	Loss float64
	// Seed seeds the random loss and jitter.
	Seed uint64
}

// Datagram is one datagram sent, as Record keeps it.
type Datagram struct {
	From *Session
	At   clock.Mono
	B    []byte
}

type flight struct {
	at clock.Mono
	to *Session
	b  []byte
}

// pairConnID is the connection ID of every Pair's sessions (and so of the
// fuzz seeds recorded from one).
const pairConnID = 7

// NewPair builds a client with cli and a server with srv over a link l.
// Nothing has been sent yet: Run or DriveUntil the handshake.
func NewPair(tb testing.TB, cli, srv Config, l Link) *Pair {
	tb.Helper()
	c, err := New(cli, pairConnID, true, 0)
	require.NoError(tb, err)
	s, err := New(srv, pairConnID, false, 0)
	require.NoError(tb, err)
	// A session in the middle of a TLS handshake holds a crypto/tls
	// goroutine: release it whatever the test left behind.
	tb.Cleanup(func() { c.Abort(ErrClosed); s.Abort(ErrClosed) })
	return &Pair{
		Cli: c, Srv: s, Link: l, Granularity: 100 * time.Microsecond,
		tb: tb, rng: rand.New(rand.NewPCG(l.Seed, 0x9a1)), buf: make([]byte, 0, 65536), idleAt: -1,
	}
}

// OpenPair is NewPair with cfg on both ends, driven through the handshake;
// it fails tb unless both ends are open within 10 s of virtual time.
func OpenPair(tb testing.TB, cfg Config, l Link) *Pair {
	tb.Helper()
	p := NewPair(tb, cfg, cfg, l)
	p.Open()
	return p
}

// OpenTLSPair is OpenPair with TLS on both ends (the loopback
// development certificate).
func OpenTLSPair(tb testing.TB, l Link) *Pair {
	tb.Helper()
	p := NewPair(tb, secure(tb), secure(tb), l)
	p.Open()
	return p
}

// Open drives the handshake until both ends are open; it fails the test
// if they are not within 10 s of virtual time.
func (p *Pair) Open() {
	p.tb.Helper()
	ok := p.DriveUntil(func() bool { return p.Cli.state == stateOpen && p.Srv.state == stateOpen }, 10*time.Second)
	require.True(p.tb, ok, "handshake: client %v (%v), server %v (%v)", p.Cli.state, p.Cli.err, p.Srv.state, p.Srv.err)
}

func secure(tb testing.TB) Config { return Config{TLS: loopbackTLS(tb)} }

func loopbackTLS(tb testing.TB) *tls.Config {
	c, err := devcert.Loopback()
	require.NoError(tb, err)
	return c
}

// Wall is s's wall clock now, µs.
func (p *Pair) Wall(s *Session) int64 {
	w := int64(p.Now) / 1000
	if s == p.Srv {
		w += p.SrvAhead
	}
	return w
}

func (p *Pair) peer(s *Session) *Session {
	if s == p.Cli {
		return p.Srv
	}
	return p.Cli
}

// next is the earliest instant something is due: a datagram's arrival or
// an open end's wake-up; ok is false when nothing is.
func (p *Pair) next() (t clock.Mono, ok bool) {
	if len(p.q) > 0 {
		t, ok = p.q[0].at, true
	}
	for _, s := range []*Session{p.Cli, p.Srv} {
		if d := s.NextTimeout(p.Now); d != 0 && (!ok || d.Before(t)) {
			t, ok = d, true
		}
	}
	return t, ok
}

// Step does what is due now (what the test just did, such as a Write,
// goes out), then advances the clock to the earliest thing due (an open
// end's wake-up or a datagram's arrival) and does everything due at that
// instant. It reports false when nothing is due ever again.
func (p *Pair) Step() bool {
	p.settle()
	t, ok := p.wake()
	if !ok {
		return false
	}
	p.Now = t
	p.settle()
	return true
}

// wake is the instant to advance to: the earliest thing due, or, when
// that is now and now was idle, one Granularity later.
func (p *Pair) wake() (clock.Mono, bool) {
	t, ok := p.next()
	if !ok {
		return 0, false
	}
	if !t.After(p.Now) {
		if p.idleAt != p.Now {
			return p.Now, true
		}
		p.Spurious++
		return p.Now.Add(p.Granularity), true
	}
	return t, true
}

// settle does everything due at Now: it delivers the datagrams that
// arrived, fires the ends' due timers and sends what they have to send,
// until both ends are quiet (datagrams over a zero-delay link arrive
// within the same instant). Each session call may make something
// sendable, so it polls whatever NextTimeout says, as a driver does.
func (p *Pair) settle() {
	moved := false
	for round := 0; ; round++ {
		// Two ends that answer each other at once without end would be a
		// protocol bug; fail rather than spin.
		if round == 100_000 { // not require.Less: its arguments would allocate on every round
			p.tb.Fatalf("the ends never go quiet at %v", p.Now)
		}
		n := 0
		for len(p.q) > 0 && !p.Now.Before(p.q[0].at) {
			f := p.q[0]
			p.q = p.q[:copy(p.q, p.q[1:])]
			if p.Deliver != nil {
				p.Deliver(f.to, f.b)
			} else {
				f.to.Handle(p.Now, p.Wall(f.to), f.b)
			}
			p.free = append(p.free, f.b[:0])
			n++
		}
		for _, s := range []*Session{p.Cli, p.Srv} {
			if d := s.NextTimeout(p.Now); d != 0 && !p.Now.Before(d) {
				s.Timeout(p.Now)
			}
			for {
				d, _, ok := s.Poll(p.Now, p.Wall(s), p.buf)
				if !ok {
					break
				}
				p.send(s, d)
				n++
			}
		}
		if n == 0 {
			break
		}
		moved = true
	}
	if moved {
		p.idleAt = -1
	} else {
		p.idleAt = p.Now
	}
}

// send puts d, just polled from from, on the link.
func (p *Pair) send(from *Session, d []byte) {
	if p.Record {
		p.Sent = append(p.Sent, Datagram{From: from, At: p.Now, B: bytes.Clone(d)})
	}
	var b []byte
	if n := len(p.free); n > 0 {
		b, p.free = p.free[n-1], p.free[:n-1]
	}
	b = append(b, d...)
	if p.Filter != nil && !p.Filter(from, b) {
		p.free = append(p.free, b[:0])
		return
	}
	dir := 0
	if from == p.Srv {
		dir = 1
	}
	depart := p.Now
	if p.Link.Rate > 0 {
		depart = max(depart, p.busy[dir]).Add(time.Duration(int64(len(b)) * 8 * int64(time.Second) / p.Link.Rate))
		p.busy[dir] = depart
	}
	if p.Link.Loss > 0 && p.rng.Float64() < p.Link.Loss {
		p.free = append(p.free, b[:0])
		return // lost after taking its time on the bottleneck, as on a real path
	}
	at := depart.Add(p.Link.Delay)
	if p.Link.Jitter > 0 {
		at = at.Add(time.Duration(p.rng.Int64N(int64(p.Link.Jitter))))
	}
	i, _ := slices.BinarySearchFunc(p.q, at, func(f flight, at clock.Mono) int {
		if f.at.After(at) {
			return 1
		}
		return -1 // equal times: after those already queued
	})
	to := p.peer(from)
	for _, f := range p.q[i:] {
		if f.to == to {
			p.Reordered++
			break
		}
	}
	p.q = slices.Insert(p.q, i, flight{at: at, to: to, b: b})
}

// Run steps through d of virtual time and leaves the clock at its end.
func (p *Pair) Run(d time.Duration) {
	end := p.Now.Add(d)
	p.until(end, nil)
	p.Now = max(p.Now, end)
}

// DriveUntil steps until cond holds, for at most limit of virtual time,
// and reports whether it held. The clock stays where cond became true.
func (p *Pair) DriveUntil(cond func() bool, limit time.Duration) bool {
	return p.until(p.Now.Add(limit), cond)
}

func (p *Pair) until(end clock.Mono, cond func() bool) bool {
	for {
		p.settle()
		if cond != nil && cond() {
			return true
		}
		t, ok := p.wake()
		if !ok || t.After(end) || (t == end && p.idleAt == end) {
			return false
		}
		p.Now = t
	}
}

// Take polls one datagram from from at Now and keeps it off the link: it
// is neither filtered, recorded nor delivered, and the test decides its
// fate (drop it, or Inject it). It aliases the pair's buffer until the
// next call into the pair.
func (p *Pair) Take(from *Session) ([]byte, bool) {
	d, _, ok := from.Poll(p.Now, p.Wall(from), p.buf)
	return d, ok
}

// Later puts b on its way to to, arriving at at, outside the link: a
// datagram of a path of the test's own (Deliver still hands it over).
func (p *Pair) Later(at clock.Mono, to *Session, b []byte) {
	i, _ := slices.BinarySearchFunc(p.q, at, func(f flight, at clock.Mono) int {
		if f.at.After(at) {
			return 1
		}
		return -1
	})
	p.q = slices.Insert(p.q, i, flight{at: at, to: to, b: b})
}

// Inject hands d to to at Now, as if it had just arrived, and reports
// what Handle did.
func (p *Pair) Inject(to *Session, d []byte) bool {
	return to.Handle(p.Now, p.Wall(to), d)
}

// The link delays, paces, reorders and loses as configured, and a Pair
// moves a stream exactly whatever it does. Virtual time makes the times
// exact: a 5 ms link's first data arrives 5 ms after it is sent.
func TestPairLink(t *testing.T) {
	for _, l := range []Link{
		{},
		{Delay: 5 * time.Millisecond},
		{Delay: 10 * time.Millisecond, Rate: 10e6},
		{Delay: 2 * time.Millisecond, Jitter: 3 * time.Millisecond, Loss: 0.05, Seed: 3},
	} {
		p := NewPair(t, Config{}, Config{}, l)
		p.Record = true
		p.Open()
		data := make([]byte, 300_000)
		for i := range data {
			data[i] = byte(i * 5)
		}
		var got []byte
		rd := make([]byte, 64<<10)
		w := 0
		start := p.Now
		ok := p.DriveUntil(func() bool {
			if w < len(data) {
				w += p.Cli.out.write(data[w:])
				p.Cli.out.finSet = w == len(data)
			}
			n, _ := p.Srv.Read(rd)
			got = append(got, rd[:n]...)
			return p.Srv.in.eof()
		}, time.Minute)
		require.True(t, ok, "%+v: FIN delivered", l)
		require.Equal(t, data, got, "%+v", l)
		took := p.Now.Sub(start)
		if l.Rate > 0 {
			// 300 kB at 10 Mbit/s take at least 240 ms on the wire.
			require.GreaterOrEqual(t, took, time.Duration(int64(len(data))*8*int64(time.Second)/l.Rate), "%+v", l)
		}
		st := p.Cli.Stats(p.Now)
		require.Equal(t, l.Jitter > 0, p.Reordered > 0, "%+v: %d reordered", l, p.Reordered)
		switch {
		case l.Loss > 0:
			require.Positive(t, st.PacketsLost, "%+v: loss happens", l)
			reordered := false
			for i := 1; i < len(p.Sent); i++ {
				reordered = reordered || p.Sent[i].At.Before(p.Sent[i-1].At)
			}
			require.False(t, reordered, "Sent is in sending order")
			require.Positive(t, st.Retransmitted, "%+v: lost bytes are resent", l)
		case l.Delay > 0:
			require.GreaterOrEqual(t, st.MinRTT, 2*l.Delay, "%+v", l)
		}
	}
}

// A Pair's step is exact: the first datagram arrives Delay after it is
// sent, not at the next tick.
func TestPairStepsToArrival(t *testing.T) {
	p := NewPair(t, Config{}, Config{}, Link{Delay: 7 * time.Millisecond})
	require.True(t, p.Step())
	require.Equal(t, clock.Mono(7*time.Millisecond), p.Now, "the client's Initial, sent at 0, arrives 7 ms later")
	require.EqualValues(t, 1, p.Srv.Stats(p.Now).PacketsReceived)
	require.Zero(t, p.Cli.Stats(p.Now).PacketsReceived)
	require.True(t, p.Step())
	require.Equal(t, clock.Mono(14*time.Millisecond), p.Now, "the answer 7 ms after that")
	require.Positive(t, p.Cli.Stats(p.Now).PacketsReceived)
}
