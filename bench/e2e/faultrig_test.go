package e2e_test

// The fault tests' rig: the shared one (e2e.Rig, e2e.Stream: a listener
// behind the relay, a client dialled through it, a stream of pseudo-random
// bytes that both ends hash) with the test's helpers around it, so every
// fault test ends with a byte-exact check. The stream's sampler records
// the bytes the server has read every e2e.SampleInterval, so goodput
// before and after a fault is measured over the same kind of window.

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/e2e"
	"github.com/fresh-udp/fresh/bench/emu"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/transport"
)

// faultSample is the sampler's period.
const faultSample = e2e.SampleInterval

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
	t *testing.T
	*e2e.Rig
	cli, srv *transport.Conn
	st       *e2e.Stream
}

// newFaultRig starts the listener (srvCfg), the relay (fwd, rev) and dials
// through it (cliCfg); the stream starts with startStream.
func newFaultRig(t *testing.T, fwd, rev scenario.Path, srvCfg, cliCfg transport.Config) *faultRig {
	t.Helper()
	r, err := e2e.NewRig(e2e.RigConfig{
		Relay:  emu.RelayConfig{Forward: fwd, Reverse: rev, Seed: 11},
		Server: srvCfg, StatelessResetKey: &rigResetKey,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	rig := &faultRig{t: t, Rig: r}
	rig.cli, rig.srv = rig.dial(cliCfg)
	return rig
}

// rigResetKey is the rig's listener's stateless reset key: a server
// restarted with it resets the connections of the rig's first life.
var rigResetKey = [32]byte{0x72, 0x69, 0x67}

// withTLS gives c the loopback development certificate unless it has TLS.
func withTLS(c transport.Config) transport.Config { return e2e.WithTLS(c) }

// dial opens a connection through the relay and accepts it.
func (rig *faultRig) dial(cliCfg transport.Config) (cli, srv *transport.Conn) {
	t := rig.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, srv, err := rig.Dial(ctx, cliCfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })
	t.Cleanup(func() { _ = srv.Close() })
	return cli, srv
}

// startStream starts the stream from the client to the server: the
// writer writes until finish, then CloseWrite.
func (rig *faultRig) startStream(seed uint64) {
	rig.st = e2e.StartStream(rig.cli, rig.srv, seed, 0)
	rig.t.Cleanup(rig.st.Close)
}

// got and sent are the stream's bytes read and written so far.
func (rig *faultRig) got() int64  { return rig.st.Got() }
func (rig *faultRig) sent() int64 { return rig.st.Sent() }

// finish ends the stream and requires it byte-exact: the writer closed
// cleanly, the reader saw io.EOF, and both hashes and counts agree.
func (rig *faultRig) finish(within time.Duration) {
	t := rig.t
	t.Helper()
	res, err := rig.st.Finish(within)
	require.NoError(t, err)
	t.Logf("stream byte-exact: %.1f MB, sha256 %x…", float64(res.Bytes)/1e6, res.SHA256[:6])
}

// goodput is the stream's goodput, bit/s, over [from, to].
func (rig *faultRig) goodput(from, to time.Time) float64 { return rig.st.Goodput(from, to) }

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
