package e2e_test

// The house rule for every mechanism that switches a mode (path MTU
// discovery's black-hole fallback, connection migration, dead-path
// detection): show that it does NOT switch where it must not. A cellular
// link changes its capacity all the time, by a factor of ten within a
// second and down to nothing for seconds in a fade, but never its MTU and
// never the addresses: a transfer alone on each committed trace must end
// with the datagram size at the ceiling, no black hole, no migration, and
// the path never declared dead while packets still cross it.

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/emu"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/bench/traces"
	"github.com/fresh-udp/fresh/transport"
)

const (
	// modesRun is how long each upload writes: the LTE traces swing by
	// 10× in it, and the AT&T uplink has a 2.2 s fade without a single
	// delivery opportunity three seconds in.
	modesRun = 4 * time.Second
	// modesFadeRun is how long the upload of a fade's window writes: the
	// fades sit in stretches of seconds at a few packets a second, and what
	// is written must drain through them.
	modesFadeRun = 2 * time.Second
	// modesPoll is the Stats sampling period: fine enough to see a
	// transient PathDead (it takes four timeouts, ≥ 3 s, to set).
	modesPoll = 100 * time.Millisecond
	// modesLead is how long before its deepest fade a trace's second
	// window starts: the upload is under way when the fade begins.
	modesLead = time.Second
	// modesDeadWindow is how many polls (300 ms) an end may stay dead
	// after datagrams crossed both ways and reached it before that counts
	// as false: an RTT and a delayed ACK on these paths, with room.
	modesDeadWindow = 3
	// modesFade is the shortest gap between delivery opportunities taken
	// for a fade when choosing where that window starts.
	modesFade = time.Second
)

// modesSample is one poll of both ends and the relay.
type modesSample struct {
	at       time.Duration // since the upload started
	cli, srv transport.Stats
	relay    emu.RelayStats
}

// TestModesDoNotSwitchOnTraces replays each committed trace from its
// start, as mm-link does: a few seconds of a cellular link's capacity
// swinging (the AT&T uplink's 2.2 s fade included).
func TestModesDoNotSwitchOnTraces(t *testing.T) {
	if testing.Short() {
		t.Skip("about 6 s of real time per committed trace")
	}
	modesOnEveryTrace(t, func(string, *traces.Trace, *traces.Trace) (string, time.Duration, time.Duration) {
		return "start", 0, modesRun
	})
}

// TestModesDoNotSwitchInFades replays each committed trace from just
// before its longest stretch without a delivery opportunity (4 s on the
// AT&T uplink, 5.8 s on T-Mobile UMTS, 11.2 s on Verizon EVDO, each inside
// a fade of the downlink too): there a mode that switches on timeouts
// alone has every reason to.
func TestModesDoNotSwitchInFades(t *testing.T) {
	if testing.Short() {
		t.Skip("up to 30 s of real time per committed trace")
	}
	modesOnEveryTrace(t, func(_ string, up, down *traces.Trace) (string, time.Duration, time.Duration) {
		at, gap := deepestFade(up)
		// A drive's coverage holes fade both directions: start before
		// whichever of the two fades began first, so the handshake and
		// the upload are under way when the link goes.
		from := at - modesLead
		for from > 0 {
			f := min(fadeStart(up, from), fadeStart(down, from))
			if f >= from {
				break
			}
			from = f - modesLead
		}
		from = max(0, from)
		return fmt.Sprintf("fade %v at %v from %v", gap, at, from), from, modesFadeRun
	})
}

// modesOnEveryTrace runs modesOnTrace on every committed *.up trace with
// its .down as the reverse direction, in the window window chooses (its
// name, where the replay starts, how long the upload writes), and logs
// the table of the results. The traces run side by side, each through
// its own relay: a run is mostly waiting out a trace's fades (a few
// Mbit/s at most), so together they take the longest one's time, not the
// sum.
func modesOnEveryTrace(t *testing.T, window func(name string, up, down *traces.Trace) (string, time.Duration, time.Duration)) {
	dir := filepath.Join(traces.RepoRoot("."), "bench", "traces")
	ups, err := filepath.Glob(filepath.Join(dir, "*.up"))
	require.NoError(t, err)
	require.NotEmpty(t, ups, "no *.up trace in %s", dir)
	table := make([]string, len(ups))
	t.Run("traces", func(t *testing.T) {
		for i, up := range ups {
			name := strings.TrimSuffix(filepath.Base(up), ".up")
			down := strings.TrimSuffix(up, ".up") + ".down"
			trUp, err := traces.Load(up)
			require.NoError(t, err)
			trDown, err := traces.Load(down)
			require.NoError(t, err)
			w, start, run := window(name, trUp, trDown)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				table[i] = modesOnTrace(t, w, up, down, start, run)
			})
		}
	})
	t.Logf("\n| trace | window | longest silence to the server | goodput | datagram | probes sent/lost | black holes | migrations/reverted/resets | polls with PathDead (of them still dead 300 ms after datagrams crossed both ways) | lost/retx |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n%s",
		strings.Join(table, "\n"))
}

// fadeStart is the start of the gap between delivery opportunities of at
// least modesFade that holds t, or t if none does.
func fadeStart(tr *traces.Trace, t time.Duration) time.Duration {
	c, _ := tr.Start(0)
	var prev time.Duration
	for {
		ms, _ := c.Next()
		next := time.Duration(ms) * time.Millisecond
		if next > t {
			if next-prev >= modesFade && prev <= t {
				return prev
			}
			return t
		}
		prev = next
	}
}

// deepestFade is where the trace's longest gap between delivery
// opportunities starts, and how long it is.
func deepestFade(tr *traces.Trace) (at, gap time.Duration) {
	c, _ := tr.Start(0)
	var prev uint64
	for n := int64(0); n < tr.Opportunities(); {
		ms, k := c.Next()
		if g := time.Duration(ms-prev) * time.Millisecond; g > gap {
			at, gap = time.Duration(prev)*time.Millisecond, g
		}
		prev, n = ms, n+k
	}
	return at, gap
}

// tracePathFrom is one direction replaying file from start (the .up and
// .down of a trace were recorded together, so both start at the same
// offset): 20 ms one way, a FIFO of
// 100 packets (a cellular base station's per-user buffer is of that order).
func tracePathFrom(t *testing.T, file string, start time.Duration) scenario.Path {
	t.Helper()
	tr, err := traces.Load(file)
	require.NoError(t, err)
	return scenario.Path{
		Trace: file, TraceData: tr, TraceStart: scenario.TraceStart{Offset: scenario.Duration(start)},
		Delay: scenario.Duration(20 * time.Millisecond), Queue: scenario.Queue{Discipline: "fifo", Limit: 100},
	}
}

// modesOnTrace runs one upload through the trace pair and checks that no
// mode switched; it returns the trace's row of the summary table.
func modesOnTrace(t *testing.T, window, up, down string, traceStart, run time.Duration) string {
	l, err := transport.Listen("127.0.0.1:0", withTLS(transport.Config{}))
	require.NoError(t, err)
	defer l.Close()
	r, err := emu.NewRelay(emu.RelayConfig{Target: l.Addr().String(),
		Forward: tracePathFrom(t, up, traceStart), Reverse: tracePathFrom(t, down, traceStart), Seed: 5})
	require.NoError(t, err)
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, err := transport.Dial(ctx, r.Addr().String(), withTLS(transport.Config{}))
	require.NoError(t, err)
	defer cli.Close()
	srv, err := l.Accept(ctx)
	require.NoError(t, err)
	defer srv.Close()

	// The writer: pseudo-random chunks for modesRun, hashed as written.
	start := time.Now()
	var written atomic.Int64
	writerDone := make(chan [32]byte, 1)
	writerErr := make(chan error, 1)
	go func() {
		h := sha256.New()
		for i := uint64(0); time.Since(start) < run; i++ {
			chunk := randomBytes(16<<10, i)
			if _, err := cli.Write(chunk); err != nil {
				writerErr <- err
				return
			}
			h.Write(chunk)
			written.Add(int64(len(chunk)))
		}
		writerErr <- cli.CloseWrite()
		writerDone <- [32]byte(h.Sum(nil))
	}()
	var read atomic.Int64
	readerDone := make(chan [32]byte, 1)
	readerErr := make(chan error, 1)
	go func() {
		h := sha256.New()
		n, err := io.Copy(h, srv)
		read.Store(n)
		readerErr <- err
		readerDone <- [32]byte(h.Sum(nil))
	}()

	// Poll both ends every modesPoll until the reader has everything.
	var samples []modesSample
	tick := time.NewTicker(modesPoll)
	defer tick.Stop()
	drainBy := start.Add(run + 30*time.Second)
	var rerr error
	readerFinished := false
	for !readerFinished {
		select {
		case rerr = <-readerErr:
			readerFinished = true
		case <-tick.C:
			require.True(t, time.Now().Before(drainBy), "the upload did not drain 30 s after the writer stopped")
		}
		samples = append(samples, modesSample{at: time.Since(start), cli: cli.Stats(), srv: srv.Stats(), relay: r.Stats()})
	}
	elapsed := time.Since(start)
	require.NoError(t, <-writerErr)
	require.NoError(t, rerr)
	sentSum, gotSum := <-writerDone, <-readerDone
	require.Equal(t, written.Load(), read.Load(), "bytes read")
	require.Equal(t, sentSum, gotSum, "byte-exact (SHA-256 of what was written and what was read)")

	// The sequence of switches, logged whatever the outcome.
	deadPolls, deadWhileFlowing := 0, 0
	var silence, longest time.Duration // without a datagram to the server
	prev := samples[0]
	for i, s := range samples {
		if i > 0 && s.relay.Forward.DatagramsOut == prev.relay.Forward.DatagramsOut {
			silence += s.at - prev.at
			longest = max(longest, silence)
		} else {
			silence = 0
		}
		if s.cli.DatagramSize != prev.cli.DatagramSize || s.cli.PMTUBlackHoles != prev.cli.PMTUBlackHoles || i == 0 {
			t.Logf("%6.1fs datagram %d B (probes %d sent, %d lost; black holes %d; lost %d pkts)", s.at.Seconds(),
				s.cli.DatagramSize, s.cli.PMTUProbesSent, s.cli.PMTUProbesLost, s.cli.PMTUBlackHoles, s.cli.PacketsLost)
		}
		if s.cli.PMTUProbesSent != prev.cli.PMTUProbesSent || s.cli.PMTUProbesLost != prev.cli.PMTUProbesLost {
			t.Logf("%6.1fs probes %d sent, %d lost", s.at.Seconds(), s.cli.PMTUProbesSent, s.cli.PMTUProbesLost)
		}
		if s.cli.PathDead != prev.cli.PathDead || s.srv.PathDead != prev.srv.PathDead {
			t.Logf("%6.1fs PathDead client %v server %v", s.at.Seconds(), s.cli.PathDead, s.srv.PathDead)
		}
		if s.cli.PathDead || s.srv.PathDead {
			deadPolls++
		}
		// Dead while packets flow: an end dead at a poll at which, since
		// the poll before, datagrams had crossed the relay both ways and
		// reached it, and still dead modesDeadWindow polls later. The
		// first acknowledgement clears PathDead, and that is time for one
		// to come.
		if k := i - modesDeadWindow; k >= 1 {
			old, before := samples[k], samples[k-1]
			both := old.relay.Forward.DatagramsOut > before.relay.Forward.DatagramsOut && old.relay.Reverse.DatagramsOut > before.relay.Reverse.DatagramsOut
			for _, end := range []struct {
				dead func(modesSample) bool
				rcvd func(modesSample) int64
			}{
				{func(m modesSample) bool { return m.cli.PathDead }, func(m modesSample) int64 { return m.cli.PacketsReceived }},
				{func(m modesSample) bool { return m.srv.PathDead }, func(m modesSample) int64 { return m.srv.PacketsReceived }},
			} {
				dead := true
				for _, m := range samples[k : i+1] {
					dead = dead && end.dead(m)
				}
				if dead && both && end.rcvd(old) > end.rcvd(before) {
					deadWhileFlowing++
					t.Logf("%6.1fs dead %v after datagrams crossed both ways and reached it", s.at.Seconds(), s.at-old.at)
				}
			}
		}
		prev = s
	}
	cs, ss := samples[len(samples)-1].cli, samples[len(samples)-1].srv
	t.Logf("client: %v", cs)
	t.Logf("server: %v", ss)
	goodput := float64(read.Load()*8) / elapsed.Seconds() / 1e6
	row := fmt.Sprintf("| %s | %s | %.1f s | %.2f Mbit/s | %d B | %d / %d | %d | %d / %d / %d | %d (%d) | %d / %d |",
		filepath.Base(up), window, longest.Seconds(), goodput, cs.DatagramSize, cs.PMTUProbesSent, cs.PMTUProbesLost, cs.PMTUBlackHoles,
		ss.Migrations, ss.MigrationsReverted, ss.PathResets, deadPolls, deadWhileFlowing, cs.PacketsLost, cs.Retransmitted)
	t.Log(row)

	require.Equal(t, transport.DefaultMaxDatagram, cs.DatagramSize, "discovery reached the ceiling and stayed there")
	require.Zero(t, cs.PMTUBlackHoles, "a black hole on a path whose MTU never changed")
	require.Zero(t, ss.PMTUBlackHoles)
	for _, st := range []transport.Stats{cs, ss} {
		require.Zero(t, st.Migrations, "no address ever changed")
		require.Zero(t, st.MigrationsReverted)
		require.Zero(t, st.PathResets)
	}
	require.False(t, cs.PathDead, "dead at the end")
	require.False(t, ss.PathDead, "dead at the end")
	require.Zero(t, deadWhileFlowing, "declared dead while packets crossed both ways")
	return row
}
