package session

import (
	"testing"
	"time"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/wire"
)

// sessionPair runs two sessions back to back in memory (no sockets), in
// virtual time: the sans-I/O core under test without the drivers.
type sessionPair struct {
	cli, srv  *Session
	now       clock.Mono
	buf, buf2 []byte
}

func newSessionPair(tb testing.TB) *sessionPair {
	var cfg Config
	cli, err := New(cfg, 1, true, 0)
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := New(cfg, 1, false, 0)
	if err != nil {
		tb.Fatal(err)
	}
	p := &sessionPair{cli: cli, srv: srv, buf: make([]byte, 0, 1500), buf2: make([]byte, 0, 1500)}
	p.exchange() // handshake
	return p
}

// exchange delivers everything each side has to send right now, both
// ways, until both are quiet; it returns the datagrams moved.
func (p *sessionPair) exchange() int {
	moved := 0
	for {
		n := 0
		for _, dir := range [2][2]*Session{{p.cli, p.srv}, {p.srv, p.cli}} {
			from, to := dir[0], dir[1]
			wall := int64(p.now) / 1000
			for {
				d, _, ok := from.poll(p.now, wall, p.buf)
				if !ok {
					break
				}
				h, body, err := wire.ParseHeader(d)
				if err != nil {
					panic(err)
				}
				to.handle(p.now, wall+5000, h, body, len(d)) // 5 ms one-way
				n++
			}
		}
		moved += n
		if n == 0 {
			return moved
		}
	}
}

// advance runs n steps of virtual time: each moves the clock by step, fires
// both sessions' due timers and exchanges what they send.
func (p *sessionPair) advance(n int, step time.Duration) {
	for range n {
		p.now = p.now.Add(step)
		for _, s := range []*Session{p.cli, p.srv} {
			if d := s.NextTimeout(p.now); d != 0 && !p.now.Before(d) {
				s.Timeout(p.now)
			}
		}
		p.exchange()
	}
}

// BenchmarkSessionStream measures the sans-I/O core per stream packet in
// steady state: the sender's poll, the receiver's handle and read, and the
// ACK's poll and handle. Allocations per packet must be 0.
func BenchmarkSessionStream(b *testing.B) {
	p := newSessionPair(b)
	chunk := make([]byte, p.cli.cfg.MSS())
	rd := make([]byte, 64<<10)
	b.ReportAllocs()
	b.SetBytes(int64(len(chunk)))
	b.ResetTimer()
	for range b.N {
		p.cli.out.write(chunk)
		p.now = p.now.Add(100 * time.Microsecond)
		p.exchange()
		p.srv.in.read(rd)
	}
}

// BenchmarkSessionUpdate is the same for one status update.
func BenchmarkSessionUpdate(b *testing.B) {
	p := newSessionPair(b)
	payload := make([]byte, 64)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		p.now = p.now.Add(time.Millisecond)
		_ = p.cli.sendUpdate(p.now, int64(p.now)/1000, payload)
		p.exchange()
	}
}

func TestSessionPairMovesData(t *testing.T) {
	p := newSessionPair(t)
	require := func(ok bool, msg string) {
		t.Helper()
		if !ok {
			t.Fatal(msg)
		}
	}
	require(p.cli.state == stateOpen && p.srv.state == stateOpen, "handshake")
	data := make([]byte, 100_000)
	for i := range data {
		data[i] = byte(i)
	}
	got := make([]byte, 0, len(data))
	rd := make([]byte, 4096)
	w := 0
	for i := 0; i < 10_000 && !p.srv.in.eof(); i++ {
		if w < len(data) { // the send buffer starts smaller than data
			w += p.cli.out.write(data[w:])
			p.cli.out.finSet = w == len(data)
		}
		p.now = p.now.Add(time.Millisecond)
		if t := p.cli.NextTimeout(p.now); t != 0 && !p.now.Before(t) {
			p.cli.Timeout(p.now)
		}
		p.exchange()
		n, _ := p.srv.Read(rd) // Read, not in.read: it schedules the window updates
		got = append(got, rd[:n]...)
	}
	require(p.srv.in.eof(), "FIN delivered")
	require(string(got) == string(data), "bytes exact")
}

func TestKeepAliveKeepsQuietConnectionOpen(t *testing.T) {
	p := newSessionPair(t)
	// 2 minutes of silence from the application, in 1 s steps: keep-alive
	// PINGs (every IdleTimeout/3 = 10 s) keep both ends from idling out.
	p.advance(120, time.Second)
	if p.cli.state != stateOpen || p.srv.state != stateOpen {
		t.Fatalf("idled out: client %v (%v), server %v (%v)", p.cli.state, p.cli.err, p.srv.state, p.srv.err)
	}
	// Without keep-alive they do idle out.
	p.cli.cfg.KeepAlive, p.srv.cfg.KeepAlive = -1, -1
	p.advance(40, time.Second)
	if p.cli.state != stateClosed || p.cli.err != ErrIdleTimeout {
		t.Fatalf("client should idle out, state %v err %v", p.cli.state, p.cli.err)
	}
}
