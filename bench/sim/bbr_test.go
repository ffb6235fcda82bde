package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/scenario"
)

// bbrPath is one bulk flow on 10 Mbit/s both ways, 40 ms RTT, a FIFO of
// limit packets each way, 1400-byte segments (1482 bytes on the wire: one
// BDP is 33 packets).
func bbrPath(t *testing.T, limit int, d time.Duration) *scenario.Scenario {
	t.Helper()
	p := scenario.Path{Rate: scenario.Rate(10e6), Delay: scenario.Duration(20 * time.Millisecond), Queue: scenario.Queue{Limit: limit}}
	s := &scenario.Scenario{
		Name: "bbr-10mbps-40ms", Duration: scenario.Duration(d), Seed: 1, MSS: 1400,
		Forward: p, Reverse: p,
		Flows: []scenario.Flow{{Name: "bulk", Kind: scenario.KindBulk}},
	}
	require.NoError(t, s.Validate())
	return s
}

// With a deep buffer (10 BDPs) CUBIC fills it; BBR paces at the bottleneck
// rate and keeps the queue far shorter at almost the same goodput.
func TestBBRQueueingFarBelowCubicOnADeepFIFO(t *testing.T) {
	s := bbrPath(t, 330, 20*time.Second)
	b := flowNamed(t, run(t, s, "bbr"), "bulk")
	c := flowNamed(t, run(t, s, "cubic"), "bulk")
	require.Less(t, b.QueueMs.P95, 0.25*c.QueueMs.P95, "bbr p95 queueing %v ms vs cubic %v ms", b.QueueMs.P95, c.QueueMs.P95)
	require.GreaterOrEqual(t, b.GoodputBps, 0.9*c.GoodputBps, "bbr goodput %v vs cubic %v bit/s", b.GoodputBps, c.GoodputBps)
}

// On a FIFO of one BDP a lone BBR flow keeps the link at least 90 % busy.
func TestBBRFillsABDPFifo(t *testing.T) {
	r := run(t, bbrPath(t, 33, 20*time.Second), "bbr")
	require.GreaterOrEqual(t, r.Utilization.Forward, 0.9)
	f := flowNamed(t, r, "bulk")
	require.Contains(t, f.ModeS, "probe_bw", "the run reached ProbeBW")
	require.Greater(t, f.ModeS["probe_bw"], 15.0, "and stayed there most of the time")
}
