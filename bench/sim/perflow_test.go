package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/scenario"
)

// perFlowPath is a 10 Mbit/s, 20 ms path whose FIFO holds limit packets.
func perFlowPath(limit int) scenario.Path {
	return scenario.Path{Rate: scenario.Rate(10e6), Delay: scenario.Duration(20 * time.Millisecond), Queue: scenario.Queue{Limit: limit}}
}

// TestExtraDelayLengthensOnlyItsFlow: a flow's extra_delay adds to its own
// one-way delay, not to the other flows'. Two light CBR flows see no
// queue, so their median OWD is the propagation delay.
func TestExtraDelayLengthensOnlyItsFlow(t *testing.T) {
	mk := func(extra time.Duration) *scenario.Scenario {
		s := &scenario.Scenario{
			Name: "extra", Duration: scenario.Duration(5 * time.Second), Seed: 1,
			Forward: perFlowPath(1000), Reverse: perFlowPath(1000),
			Flows: []scenario.Flow{
				{Name: "near", Kind: scenario.KindCBR, Rate: scenario.Rate(100e3)},
				{Name: "far", Kind: scenario.KindCBR, Rate: scenario.Rate(100e3), ExtraDelay: scenario.Duration(extra)},
			},
		}
		require.NoError(t, s.Validate())
		return s
	}
	a, b := run(t, mk(0), ""), run(t, mk(30*time.Millisecond), "")
	require.InDelta(t, flowNamed(t, a, "near").OWDms.P50, flowNamed(t, b, "near").OWDms.P50, 1, "(the two flows send at the same instants without the extra delay: one waits a packet time, 0.8 ms)")
	require.InDelta(t, flowNamed(t, a, "far").OWDms.P50+30, flowNamed(t, b, "far").OWDms.P50, 1)
}

// TestExtraDelayLengthensTheRoundTrip: extra_delay delays the flow's ACKs
// too. A flow held to a 20 kB window moves one window per round trip, so
// 20 ms more each way (40 → 80 ms) halves its goodput.
func TestExtraDelayLengthensTheRoundTrip(t *testing.T) {
	mk := func(extra time.Duration) *scenario.Scenario {
		s := &scenario.Scenario{
			Name: "rtt", Duration: scenario.Duration(20 * time.Second), Seed: 1,
			Forward: perFlowPath(100), Reverse: perFlowPath(100),
			Flows: []scenario.Flow{{Name: "bulk", Kind: scenario.KindBulk, CC: "cubic", MaxWindow: 20_000, ExtraDelay: scenario.Duration(extra)}},
		}
		require.NoError(t, s.Validate())
		return s
	}
	near := flowNamed(t, run(t, mk(0), ""), "bulk").GoodputBps
	far := flowNamed(t, run(t, mk(20*time.Millisecond), ""), "bulk").GoodputBps
	require.InDelta(t, 20_000*8/0.040, near, 0.1*20_000*8/0.040, "one 20 kB window per 40 ms")
	require.InDelta(t, 0.5, far/near, 0.05, "twice the round trip, half the goodput")
}

// TestExtraDelayDrawsRTTUnfairness: two Reno flows through one FIFO, one
// with a 4× longer round trip, split the link unevenly in the longer
// one's disfavour (Reno's throughput goes as 1/RTT: Mathis et al., "The
// Macroscopic Behavior of the TCP Congestion Avoidance Algorithm"); with
// equal round trips they split it evenly.
func TestExtraDelayDrawsRTTUnfairness(t *testing.T) {
	mk := func(extra time.Duration) *scenario.Scenario {
		s := &scenario.Scenario{
			Name: "rtt", Duration: scenario.Duration(60 * time.Second), Seed: 1,
			Forward: perFlowPath(100), Reverse: perFlowPath(100),
			Flows: []scenario.Flow{
				{Name: "short", Kind: scenario.KindBulk, CC: "reno"},
				{Name: "long", Kind: scenario.KindBulk, CC: "reno", ExtraDelay: scenario.Duration(extra)},
			},
		}
		require.NoError(t, s.Validate())
		return s
	}
	even := run(t, mk(0), "")
	uneven := run(t, mk(60*time.Millisecond), "")
	e := flowNamed(t, even, "long").GoodputBps / flowNamed(t, even, "short").GoodputBps
	u := flowNamed(t, uneven, "long").GoodputBps / flowNamed(t, uneven, "short").GoodputBps
	require.Greater(t, e, 0.8)
	require.Less(t, u, 0.6, "the flow with 4× the RTT gets clearly less")
}

// TestMaxWindowKeepsAStandingQueueWithoutLoss: a CUBIC flow whose receive
// window is 1.5 BDP on a path with a 2-BDP FIFO never fills the buffer:
// no loss, the queue stands at about the half BDP beyond the pipe, and
// the link stays full. Without the cap the same flow fills the buffer
// and loses packets.
func TestMaxWindowKeepsAStandingQueueWithoutLoss(t *testing.T) {
	const bdp = 10e6 / 8 * 0.040 // 50 kB: 10 Mbit/s × 40 ms
	mk := func(window int) *scenario.Scenario {
		s := &scenario.Scenario{
			Name: "rwnd", Duration: scenario.Duration(30 * time.Second), Seed: 1,
			Forward: perFlowPath(100), Reverse: perFlowPath(100), // 100 kB: 2 BDP
			Flows: []scenario.Flow{{Name: "bulk", Kind: scenario.KindBulk, CC: "cubic", MaxWindow: window}},
		}
		require.NoError(t, s.Validate())
		return s
	}
	capped := flowNamed(t, run(t, mk(int(1.5*bdp)), ""), "bulk")
	require.Zero(t, capped.Lost, "a window below BDP + buffer never overflows it")
	require.Greater(t, capped.GoodputBps, 0.9*10e6*1000/1040, "1.5 BDP keeps the link busy")
	// 0.5 BDP of standing queue is 20 ms at 10 Mbit/s (less the bytes in
	// the ACK clock's gaps).
	require.InDelta(t, 20, capped.QueueMs.P50, 6)

	free := flowNamed(t, run(t, mk(0), ""), "bulk")
	require.Positive(t, free.Lost, "uncapped CUBIC fills the buffer until it loses")
	require.Greater(t, free.QueueMs.P95, 60.0)
}
