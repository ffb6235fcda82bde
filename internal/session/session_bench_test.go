package session

import (
	"testing"
	"time"
)

// BenchmarkSessionStream measures the sans-I/O core per stream packet in
// steady state: the sender's poll, the receiver's handle and read, and the
// ACK's poll and handle. Allocations per packet must be 0.
func BenchmarkSessionStream(b *testing.B) {
	p := OpenPair(b, Config{}, Link{})
	chunk := make([]byte, p.Cli.cfg.MSS())
	rd := make([]byte, 64<<10)
	b.ReportAllocs()
	b.SetBytes(int64(len(chunk)))
	b.ResetTimer()
	for range b.N {
		p.Cli.out.write(chunk)
		p.Run(100 * time.Microsecond)
		p.Srv.in.read(rd)
	}
}

// BenchmarkSessionUpdate is the same for one status update.
func BenchmarkSessionUpdate(b *testing.B) {
	p := OpenPair(b, Config{}, Link{})
	payload := make([]byte, 64)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		p.Run(time.Millisecond)
		_ = p.Cli.sendUpdate(p.Now, p.Wall(p.Cli), payload)
		p.Run(0)
	}
}

func TestPairMovesData(t *testing.T) {
	p := OpenPair(t, Config{}, Link{})
	require := func(ok bool, msg string) {
		t.Helper()
		if !ok {
			t.Fatal(msg)
		}
	}
	require(p.Cli.state == stateOpen && p.Srv.state == stateOpen, "handshake")
	data := make([]byte, 100_000)
	for i := range data {
		data[i] = byte(i)
	}
	got := make([]byte, 0, len(data))
	rd := make([]byte, 4096)
	w := 0
	for i := 0; i < 10_000 && !p.Srv.in.eof(); i++ {
		if w < len(data) { // the send buffer starts smaller than data
			w += p.Cli.out.write(data[w:])
			p.Cli.out.finSet = w == len(data)
		}
		p.Run(time.Millisecond)
		n, _ := p.Srv.Read(rd) // Read, not in.read: it schedules the window updates
		got = append(got, rd[:n]...)
	}
	require(p.Srv.in.eof(), "FIN delivered")
	require(string(got) == string(data), "bytes exact")
}

func TestKeepAliveKeepsQuietConnectionOpen(t *testing.T) {
	p := OpenPair(t, Config{}, Link{})
	// 2 minutes of silence from the application, in 1 s steps: keep-alive
	// PINGs (every IdleTimeout/3 = 10 s) keep both ends from idling out.
	p.Run(120 * time.Second)
	if p.Cli.state != stateOpen || p.Srv.state != stateOpen {
		t.Fatalf("idled out: client %v (%v), server %v (%v)", p.Cli.state, p.Cli.err, p.Srv.state, p.Srv.err)
	}
	// Without keep-alive they do idle out.
	p.Cli.cfg.KeepAlive, p.Srv.cfg.KeepAlive = -1, -1
	p.Run(40 * time.Second)
	if p.Cli.state != stateClosed || p.Cli.err != ErrIdleTimeout {
		t.Fatalf("client should idle out, state %v err %v", p.Cli.state, p.Cli.err)
	}
}

// BenchmarkSessionHandshakeTLS measures one whole TLS handshake between two
// sessions in virtual time: both ends' CPU per connection (crypto/tls's
// key exchange and signature, the Initial keys and every seal and open),
// from the client's first Initial until both are open.
func BenchmarkSessionHandshakeTLS(b *testing.B) {
	cli, srv := secure(b), secure(b)
	b.ReportAllocs()
	for b.Loop() {
		p := NewPair(b, cli, srv, Link{})
		p.Open()
		p.Cli.Abort(ErrClosed)
		p.Srv.Abort(ErrClosed)
	}
}
