package e2e_test

// End-to-end tests of the endpoints through the userspace bottleneck
// (bench/emu): real UDP sockets on loopback, real time. They assert outcomes
// (bytes exact, bounds, orderings), never absolute times.

import (
	"context"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/e2e"
	"github.com/fresh-udp/fresh/bench/emu"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/transport"
)

// path is one direction of the emulated bottleneck.
func path(rateBps float64, delay time.Duration, loss float64, limit int) scenario.Path {
	return scenario.Path{
		Rate: scenario.Rate(rateBps), Delay: scenario.Duration(delay), Loss: loss,
		Queue: scenario.Queue{Discipline: "fifo", Limit: limit},
	}
}

// overRelay starts a listener, a relay in front of it and a client dialled
// through the relay.
func overRelay(t *testing.T, fwd, rev scenario.Path, srvCfg, cliCfg transport.Config) (cli, srv *transport.Conn) {
	t.Helper()
	r, err := e2e.NewRig(e2e.RigConfig{Relay: emu.RelayConfig{Forward: fwd, Reverse: rev, Seed: 7}, Server: srvCfg})
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, srv, err = r.Dial(ctx, cliCfg)
	require.NoError(t, err)
	t.Cleanup(func() { cli.Close() })
	return cli, srv
}

func randomBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, seed+1))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestTransfer20MBThroughLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("20 MB transfer")
	}
	fwd := path(200e6, time.Millisecond, 0.02, 1000)
	rev := path(200e6, time.Millisecond, 0.02, 1000)
	cli, srv := overRelay(t, fwd, rev, transport.Config{}, transport.Config{})
	data := randomBytes(20<<20, 3)
	errc := make(chan error, 1)
	go func() {
		_, err := cli.Write(data)
		if err == nil {
			err = cli.CloseWrite()
		}
		errc <- err
	}()
	got, err := io.ReadAll(srv)
	require.NoError(t, err)
	require.NoError(t, <-errc)
	require.Equal(t, sha256.Sum256(data), sha256.Sum256(got), "byte-exact")
	st := cli.Stats()
	require.Greater(t, st.PacketsLost, int64(0), "2 %% loss must have cost packets")
	require.Greater(t, st.Retransmitted, int64(0))
	t.Logf("20 MB: %d packets lost, %d retransmitted, srtt %v", st.PacketsLost, st.Retransmitted, st.SRTT)
}

func TestSlowReaderBoundsSender(t *testing.T) {
	const sendBuf, window = 256 << 10, 128 << 10
	cfg := withTLS(transport.Config{SendBuffer: sendBuf, ReceiveWindow: window, Linger: -1})
	cli, srv := overRelay(t, path(50e6, 2*time.Millisecond, 0, 1000), path(50e6, 2*time.Millisecond, 0, 1000), cfg, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var total atomic.Int64
	go func() {
		chunk := make([]byte, 16<<10)
		for ctx.Err() == nil {
			n, err := cli.Write(chunk)
			total.Add(int64(n))
			if err != nil {
				return
			}
		}
	}()
	// Read 64 KiB every 50 ms: far slower than the path.
	var read int64
	buf := make([]byte, 64<<10)
	for range 20 {
		time.Sleep(50 * time.Millisecond)
		n, err := io.ReadFull(srv, buf)
		require.NoError(t, err)
		read += int64(n)
	}
	time.Sleep(100 * time.Millisecond)
	w := total.Load()
	// The writer can be ahead of the reader by the receive window (held by
	// the receiver) plus the send buffer (held by the sender), no more.
	require.LessOrEqual(t, w-read, int64(sendBuf+window+16<<10), "written %d, read %d", w, read)
	require.Greater(t, w, read, "the writer did get ahead")
}

func TestUpdatesFreshestFirstNeverRetransmitted(t *testing.T) {
	// 1 Mbit/s with 5 % loss; the source offers an update every 2 ms,
	// more than the path carries, so most are superseded and some lost.
	cli, srv := overRelay(t, path(1e6, 20*time.Millisecond, 0.05, 50), path(1e6, 20*time.Millisecond, 0, 50),
		transport.Config{}, transport.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	go func() {
		for i := 0; ctx.Err() == nil; i++ {
			p := make([]byte, 100)
			p[0], p[1] = byte(i>>8), byte(i)
			_ = cli.SendUpdate(p)
			time.Sleep(2 * time.Millisecond)
		}
	}()
	var last time.Time
	seen := map[int]bool{}
	for {
		u, err := srv.ReadUpdate(ctx)
		if err != nil {
			break
		}
		require.True(t, u.Generated.After(last), "freshest-first: generation times strictly increase")
		last = u.Generated
		id := int(u.Payload[0])<<8 | int(u.Payload[1])
		require.False(t, seen[id], "update %d delivered twice", id)
		seen[id] = true
	}
	st, sr := cli.Stats(), srv.Stats()
	require.Greater(t, len(seen), 20)
	require.Greater(t, st.UpdatesSuperseded, int64(0), "older unsent updates were replaced")
	require.Zero(t, sr.UpdatesStale+sr.Duplicates, "nothing arrived twice: no retransmission")
	require.Greater(t, sr.Age.Mean, time.Duration(0))
	t.Logf("updates: sent %d, superseded %d, lost %d, received %d; rate %.1f Hz; mean age %v",
		st.UpdatesSent, st.UpdatesSuperseded, st.UpdatesLost, sr.UpdatesReceived, st.UpdateRate, sr.Age.Mean)
}

// offsetClock is a system clock whose wall clock is off by offset.
type offsetClock struct {
	*clock.System
	offset time.Duration
}

func (c offsetClock) Wall() time.Time { return c.System.Wall().Add(c.offset) }

func TestClockOffsetEstimatedAndOWDTrue(t *testing.T) {
	const delay = 20 * time.Millisecond
	srvCfg := transport.Config{Clock: offsetClock{clock.NewSystem(), 700 * time.Millisecond}}
	cli, srv := overRelay(t, path(100e6, delay, 0, 1000), path(100e6, delay, 0, 1000), srvCfg, transport.Config{})
	// A paced trickle of data for a few seconds so the receiver (server)
	// collects forward and echoed reverse samples.
	deadline := time.Now().Add(4 * time.Second)
	go io.Copy(io.Discard, srv)
	chunk := make([]byte, 4096)
	for time.Now().Before(deadline) {
		_, err := cli.Write(chunk)
		require.NoError(t, err)
		time.Sleep(5 * time.Millisecond)
	}
	ss, cs := srv.Stats(), cli.Stats()
	require.True(t, ss.ClockSynced, "in-band estimator synchronised")
	// θ = receiver − sender = +700 ms, within the asymmetry bound.
	require.InDelta(t, float64(700*time.Millisecond), float64(ss.ClockOffset), float64(2*time.Millisecond))
	// The sender's controller sees the true one-way delay: the relay's
	// 20 ms (serialisation at 100 Mbit/s is 0.1 ms).
	require.InDelta(t, float64(delay), float64(cs.MinOWD), float64(2*time.Millisecond), "OWDmin %v", cs.MinOWD)
	require.Equal(t, "owd", cs.Signal.String(), "the controller trusts OWD")
	require.True(t, cs.PeerClockSynced, "the sender knows the receiver trusts its estimate")
	require.False(t, cs.NTP.Enabled, "no NTP server configured")
}

func TestCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		l, err := transport.Listen("127.0.0.1:0", withTLS(transport.Config{}))
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := transport.Dial(ctx, l.Addr().String(), withTLS(transport.Config{}))
		require.NoError(t, err)
		s, err := l.Accept(ctx)
		require.NoError(t, err)
		_, err = c.Write([]byte("hello"))
		require.NoError(t, err)
		require.NoError(t, c.Close())
		require.NoError(t, c.Close(), "idempotent")
		b, err := io.ReadAll(s)
		require.NoError(t, err)
		require.Equal(t, "hello", string(b))
		require.NoError(t, l.Close())
		require.NoError(t, l.Close(), "idempotent")
		<-s.Done()
	}()
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	require.LessOrEqual(t, runtime.NumGoroutine(), before)
}

// Updates share ACKs with the stream: the regulator must still get RTT
// samples and leave its 1 s initial RTT at once (regression test).
func TestUpdatesRegulatedDuringUpload(t *testing.T) {
	cli, srv := overRelay(t, path(50e6, 5*time.Millisecond, 0, 1000), path(50e6, 5*time.Millisecond, 0, 1000),
		transport.Config{}, transport.Config{MaxUpdateRate: 200, Linger: -1})
	go io.Copy(io.Discard, srv)
	go func() {
		b := make([]byte, 64<<10)
		for {
			if _, err := cli.Write(b); err != nil {
				return
			}
		}
	}()
	for t0 := time.Now(); time.Since(t0) < 500*time.Millisecond; {
		require.NoError(t, cli.SendUpdate([]byte("x")))
		time.Sleep(5 * time.Millisecond)
	}
	st := cli.Stats()
	require.Greater(t, st.UpdatesSent, int64(10), "rate %v Hz", st.UpdateRate)
}

// TestCloseDeliversEOF writes and closes at once (no CloseWrite) through a
// lossy path: the reader must still end with io.EOF after every byte, never
// with ErrPeerClosed. Close used to wait for the data's ACKs but not the
// FIN's, so a CLOSE could overtake a paced or lost FIN.
func TestCloseDeliversEOF(t *testing.T) {
	for i := range 5 {
		fwd := path(20e6, 5*time.Millisecond, 0.05, 200)
		rev := path(20e6, 5*time.Millisecond, 0.05, 200)
		cli, srv := overRelay(t, fwd, rev, transport.Config{}, transport.Config{})
		data := randomBytes(30_000+i*7_000, uint64(10+i))
		_, err := cli.Write(data)
		require.NoError(t, err)
		// Let the data leave first, so that the FIN goes in a packet of
		// its own, the one a CLOSE could overtake.
		time.Sleep(time.Duration(i) * 10 * time.Millisecond)
		closed := make(chan error, 1)
		go func() { closed <- cli.Close() }()
		got, err := io.ReadAll(srv)
		require.NoError(t, err, "run %d: the reader must see io.EOF, not an error", i)
		require.Equal(t, sha256.Sum256(data), sha256.Sum256(got))
		require.NoError(t, <-closed)
	}
}
