package e2e_test

// The rig the fault tests share: a listener behind the emulated bottleneck
// (bench/emu's relay), a client dialled through it, and a stream of
// pseudo-random bytes from the client to the server that both ends hash,
// so every fault test ends with a byte-exact check. A sampler records the
// bytes the server has read every faultSample, so goodput before and
// after a fault is measured over the same kind of window.

import (
	"context"
	"crypto/sha256"
	"errors"
	"hash"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/emu"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/transport"
	"github.com/fresh-udp/fresh/transport/devcert"
)

// faultSample is the sampler's period.
const faultSample = 100 * time.Millisecond

// faultPath is one direction of the fault tests' bottleneck: rate bit/s,
// one-way delay, a FIFO of a few BDPs.
func faultPath(rate float64, delay time.Duration) scenario.Path {
	return scenario.Path{
		Rate: scenario.Rate(rate), Delay: scenario.Duration(delay),
		Queue: scenario.Queue{Discipline: "fifo", Limit: 300},
	}
}

// faultRig is one listener, one relay and one connection with a stream
// running through them.
type faultRig struct {
	t     *testing.T
	l     *transport.Listener
	sock  net.PacketConn // the first listener's socket
	relay *emu.Relay
	cli   *transport.Conn
	srv   *transport.Conn

	sent, got atomic.Int64 // stream bytes written, read
	stop      chan struct{}
	stopOnce  sync.Once
	writerErr chan error
	readerErr chan error
	sentSum   []byte // the writer's hash, when writerErr has said nil
	gotSum    []byte // the reader's hash, when readerErr has said nil

	mu      sync.Mutex
	samples []rigSample
	doneS   chan struct{}
	wgS     sync.WaitGroup
}

type rigSample struct {
	at  time.Time
	got int64
}

// newFaultRig starts the listener (srvCfg), the relay (fwd, rev) and dials
// through it (cliCfg); the stream starts with startStream.
func newFaultRig(t *testing.T, fwd, rev scenario.Path, srvCfg, cliCfg transport.Config) *faultRig {
	t.Helper()
	// The listener's socket is the rig's own, so crash can close it alone.
	sock, err := transport.ListenUDP("127.0.0.1:0", false)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sock.Close() })
	tr := &transport.Transport{Conn: sock, StatelessResetKey: &rigResetKey}
	t.Cleanup(func() { _ = tr.Close() })
	l, err := tr.Listen(withTLS(srvCfg))
	require.NoError(t, err)
	r, err := emu.NewRelay(emu.RelayConfig{Target: l.Addr().String(), Forward: fwd, Reverse: rev, Seed: 11})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	rig := &faultRig{t: t, l: l, sock: sock, relay: r}
	rig.cli, rig.srv = rig.dial(cliCfg)
	return rig
}

// rigResetKey is the rig's listener's stateless reset key: a server
// restarted with it resets the connections of the rig's first life.
var rigResetKey = [32]byte{0x72, 0x69, 0x67}

// crash closes the listener's socket and nothing else, as a server process
// that dies does: its connections send no CLOSE and vanish.
func (rig *faultRig) crash() { _ = rig.sock.Close() }

// withTLS gives c the loopback development certificate unless it has TLS.
func withTLS(c transport.Config) transport.Config {
	if c.TLS == nil && !c.Insecure {
		conf, err := devcert.Loopback()
		if err != nil {
			panic(err)
		}
		c.TLS = conf
	}
	return c
}

// dial opens a connection through the relay and accepts it.
func (rig *faultRig) dial(cliCfg transport.Config) (cli, srv *transport.Conn) {
	t := rig.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, err := transport.Dial(ctx, rig.relay.Addr().String(), withTLS(cliCfg))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })
	srv, err = rig.l.Accept(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	return cli, srv
}

// streamBytes fills b with the stream's bytes: a seeded PCG, so writer and
// test need not keep the stream in memory.
type streamBytes struct{ r *rand.Rand }

func (s streamBytes) fill(b []byte) {
	for i := 0; i < len(b); i += 8 {
		v := s.r.Uint64()
		for j := 0; j < 8 && i+j < len(b); j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
}

// startStream starts the writer (client), the reader (server) and the
// sampler. The writer writes until stopStream, then CloseWrite.
func (rig *faultRig) startStream(seed uint64) {
	rig.stop = make(chan struct{})
	rig.writerErr = make(chan error, 1)
	rig.readerErr = make(chan error, 1)
	rig.doneS = make(chan struct{})
	cli, srv := rig.cli, rig.srv
	go func() {
		src := streamBytes{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
		h := sha256.New()
		buf := make([]byte, 32<<10)
		for {
			select {
			case <-rig.stop:
				rig.sentSum = h.Sum(nil)
				rig.writerErr <- cli.CloseWrite()
				return
			default:
			}
			src.fill(buf)
			n, err := cli.Write(buf)
			h.Write(buf[:n])
			rig.sent.Add(int64(n))
			if err != nil {
				rig.writerErr <- err
				return
			}
		}
	}()
	go func() {
		h := sha256.New()
		err := rig.readAll(srv, h)
		if err == nil {
			rig.gotSum = h.Sum(nil)
		}
		rig.readerErr <- err
	}()
	rig.wgS.Add(1)
	go func() {
		defer rig.wgS.Done()
		tk := time.NewTicker(faultSample)
		defer tk.Stop()
		for {
			rig.mu.Lock()
			rig.samples = append(rig.samples, rigSample{time.Now(), rig.got.Load()})
			rig.mu.Unlock()
			select {
			case <-rig.doneS:
				return
			case <-tk.C:
			}
		}
	}()
	rig.t.Cleanup(rig.stopSampler)
}

func (rig *faultRig) readAll(srv *transport.Conn, h hash.Hash) error {
	buf := make([]byte, 64<<10)
	for {
		n, err := srv.Read(buf)
		h.Write(buf[:n])
		rig.got.Add(int64(n))
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (rig *faultRig) stopSampler() {
	select {
	case <-rig.doneS:
	default:
		close(rig.doneS)
	}
	rig.wgS.Wait()
}

// finish ends the stream and requires it byte-exact: the writer closed
// cleanly, the reader saw io.EOF, and both hashes and counts agree.
func (rig *faultRig) finish(within time.Duration) {
	t := rig.t
	t.Helper()
	rig.stopOnce.Do(func() { close(rig.stop) })
	select {
	case err := <-rig.writerErr:
		require.NoError(t, err, "writer")
	case <-time.After(within):
		t.Fatalf("the writer did not end within %v", within)
	}
	select {
	case err := <-rig.readerErr:
		require.NoError(t, err, "reader")
	case <-time.After(within):
		t.Fatalf("the reader did not see the end of the stream within %v", within)
	}
	require.Equal(t, rig.sent.Load(), rig.got.Load(), "stream length")
	require.Equal(t, rig.sentSum, rig.gotSum, "stream sha256")
	t.Logf("stream byte-exact: %.1f MB, sha256 %x…", float64(rig.got.Load())/1e6, rig.gotSum[:6])
}

// goodput is the stream's goodput, bit/s, over [from, to], from the
// samples nearest inside it.
func (rig *faultRig) goodput(from, to time.Time) float64 {
	rig.mu.Lock()
	defer rig.mu.Unlock()
	var a, b *rigSample
	for i := range rig.samples {
		s := &rig.samples[i]
		if a == nil && !s.at.Before(from) {
			a = s
		}
		if !s.at.After(to) {
			b = s
		}
	}
	if a == nil || b == nil || !b.at.After(a.at) {
		return 0
	}
	return float64(b.got-a.got) * 8 / b.at.Sub(a.at).Seconds()
}

// recovery waits, from `from`, until the goodput over the trailing window
// reaches target bit/s, and returns how long after `from` that window
// ended (0, false if not within limit).
func (rig *faultRig) recovery(from time.Time, window time.Duration, target float64, limit time.Duration) (time.Duration, bool) {
	for end := from.Add(window); ; end = end.Add(faultSample) {
		if d := time.Until(end); d > 0 {
			time.Sleep(d + faultSample/2)
		}
		if end.Sub(from) > limit {
			return 0, false
		}
		if rig.goodput(end.Add(-window), end) >= target {
			return end.Sub(from), true
		}
	}
}

// waitFor polls cond every 10 ms for up to limit and returns how long it
// took to hold (false if it never did).
func waitFor(limit time.Duration, cond func() bool) (time.Duration, bool) {
	start := time.Now()
	for {
		if cond() {
			return time.Since(start), true
		}
		if time.Since(start) > limit {
			return 0, false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// mbit formats bit/s as Mbit/s for logs.
func mbit(bps float64) float64 { return bps / 1e6 }
