package emu

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/internal/rusage"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/bench/traces"
)

// tracePath is a path replaying a trace given as its lines.
func tracePath(t *testing.T, lines string) scenario.Path {
	t.Helper()
	tr, err := traces.Parse(strings.NewReader(lines), "test")
	require.NoError(t, err)
	return scenario.Path{Trace: "test", TraceData: tr, Queue: scenario.Queue{Limit: 1000}}
}

// A trace with one 1500-byte opportunity every 2 ms (6 Mbit/s) carries one
// 1500-byte datagram (1472 B of payload + 28 B of IPv4/UDP) per
// opportunity: n of them take (n−1)·2 ms from first to last arrival.
func TestRelayTrace(t *testing.T) {
	const n = 200
	srv := startServer(t, false)
	r := newRelay(t, RelayConfig{Target: srv.addr(), Forward: tracePath(t, "2\n"), Reverse: path(100*mbps, 0)})
	c := dial(t, r)
	buf := make([]byte, 1472)
	for i := range n {
		_, err := c.Write(buf)
		require.NoError(t, err)
		if i%50 == 49 {
			time.Sleep(time.Millisecond)
		}
	}
	eventually(t, 5*time.Second, func() bool { return srv.count() == n }, "not every datagram arrived")
	want := (n - 1) * 2 * time.Millisecond
	spread := srv.spread()
	st := r.Stats().Forward.Link
	t.Logf("spread %v (emulated %v), trace time %v, offered %d B, carried %d B", spread, want, st.TraceTime, st.OfferedBytes, st.CarriedBytes)
	require.GreaterOrEqual(t, spread, want*8/10, "never faster than the trace")
	require.LessOrEqual(t, spread, want*15/10)
	require.Equal(t, uint64(n*1500), st.CarriedBytes)
}

// The relay sleeps between a trace's opportunities: idle, it does not wake
// every millisecond (NextEvent names no opportunity while nothing is
// queued), and with a packet waiting for a sparse trace it sleeps until
// the opportunity. A busy-spinning scheduler would burn the whole wait in
// CPU time.
func TestRelayTraceDoesNotSpin(t *testing.T) {
	srv := startServer(t, false)
	// One opportunity every 100 ms.
	r := newRelay(t, RelayConfig{Target: srv.addr(), Forward: tracePath(t, "100\n"), Reverse: path(100*mbps, 0)})
	c := dial(t, r)
	cpu0, err := rusage.Process()
	if err != nil {
		t.Skip(err)
	}
	start := time.Now()
	time.Sleep(300 * time.Millisecond) // idle
	for range 5 {                      // 500 ms of waiting for opportunities
		_, err := c.Write(make([]byte, 1000))
		require.NoError(t, err)
	}
	eventually(t, 5*time.Second, func() bool { return srv.count() == 5 }, "not every datagram arrived")
	cpu1, err := rusage.Process()
	require.NoError(t, err)
	wall := time.Since(start)
	t.Logf("%v of CPU in %v", cpu1-cpu0, wall)
	require.Greater(t, wall, 600*time.Millisecond)
	require.Less(t, cpu1-cpu0, wall/4, "the scheduler sleeps between opportunities")
}
