package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The paths: one bulk flow on 10 Mbit/s both ways, 40 ms RTT, 1400-byte
// segments (1482 bytes on the wire: one BDP is 33 packets), a FIFO of 10
// BDPs (bbr-10mbps-40ms-deep) or of one (tun-10mbps-40ms-bbr, which the TUN
// comparison with the kernel's BBR runs too).

// With a deep buffer CUBIC fills it; BBR paces at the bottleneck rate and
// keeps the queue far shorter at almost the same goodput.
func TestBBRQueueingFarBelowCubicOnADeepFIFO(t *testing.T) {
	s := load(t, "bbr-10mbps-40ms-deep", 20*time.Second)
	b := flowNamed(t, run(t, s, "bbr"), "bulk")
	c := flowNamed(t, run(t, s, "cubic"), "bulk")
	require.Less(t, b.QueueMs.P95, 0.25*c.QueueMs.P95, "bbr p95 queueing %v ms vs cubic %v ms", b.QueueMs.P95, c.QueueMs.P95)
	require.GreaterOrEqual(t, b.GoodputBps, 0.9*c.GoodputBps, "bbr goodput %v vs cubic %v bit/s", b.GoodputBps, c.GoodputBps)
}

// On a FIFO of one BDP a lone BBR flow keeps the link at least 90 % busy.
func TestBBRFillsABDPFifo(t *testing.T) {
	r := run(t, load(t, "tun-10mbps-40ms-bbr", 20*time.Second), "bbr")
	require.GreaterOrEqual(t, r.Utilization.Forward, 0.9)
	f := flowNamed(t, r, "bulk")
	require.Contains(t, f.ModeS, "probe_bw", "the run reached ProbeBW")
	require.Greater(t, f.ModeS["probe_bw"], 15.0, "and stayed there most of the time")
}
