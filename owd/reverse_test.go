package owd

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
)

func TestReverseScale(t *testing.T) {
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	tests := []struct {
		name                                   string
		rttHalfCur, rttHalfMin, owdCur, owdMin time.Duration
		want                                   float64
	}{
		{"no queueing", ms(50), ms(50), ms(50), ms(50), 1},
		{"forward queueing only: no compensation", ms(60), ms(50), ms(70), ms(50), 1},
		// RTT 300 ms against 100 ms, forward OWD unchanged: 200 ms of ACK-path
		// queue, W = cwnd · 300/100.
		{"reverse queueing", ms(150), ms(50), ms(50), ms(50), 3},
		// RTT 300, forward queue 20 ms: revQ = 200 − 20 = 180, W = 300/120.
		{"both", ms(150), ms(50), ms(70), ms(50), 2.5},
		{"capped", ms(1000), ms(50), ms(50), ms(50), maxReverseScale},
		{"no samples", 0, 0, 0, 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.InDelta(t, tc.want, reverseScale(tc.rttHalfCur, tc.rttHalfMin, tc.owdCur, tc.owdMin), 1e-9)
		})
	}
}

func TestWindowFollowsReverseQueueing(t *testing.T) {
	for _, disabled := range []bool{false, true} {
		cfg := noProbe()
		cfg.Tuning.DisableReverseCompensation = disabled
		h := newHarness(mustNew(NewEq2(cfg)))
		h.toAvoidance()
		h.ackN(8, 55*time.Millisecond, 100*time.Millisecond) // RTT back to base
		base := h.c.cwnd
		// The ACK path queues 200 ms; the forward path does not.
		h.ackN(4, 55*time.Millisecond, 300*time.Millisecond)
		got := float64(h.c.Window())
		if disabled {
			require.InDelta(t, h.c.cwnd, got, 1, "off: the window is cwnd")
			continue
		}
		// OWD 55 ms on a 50 ms base: 5 ms forward queue, so revQ = 195 ms.
		require.InDelta(t, h.c.cwnd*300/105, got, 3, "W = cwnd·RTT/(RTT − revQ)")
		require.InDelta(t, base, h.c.cwnd, 0.1*base, "the internal window itself barely moved")
		// In RTT fallback the two queues cannot be told apart.
		h.ackSample(cc.AckSample{OWD: 55 * time.Millisecond, OWDValid: true, ClockSynced: false, RTT: 300 * time.Millisecond})
		require.InDelta(t, h.c.cwnd, float64(h.c.Window()), 1)
	}
}

// The base-delay probe holds for ProbeHoldRTTs round trips of the forward
// loop only: what it waits for is the forward queue to drain, and an ACK
// path queued behind someone else's bulk flow would otherwise stretch every
// hold (2 × 300 ms instead of 2 × 105 ms here) and cost that much goodput.
func TestProbeHoldExcludesReverseQueueing(t *testing.T) {
	for _, disabled := range []bool{false, true} {
		cfg := Config{MSS: mss, Tuning: Tuning{DisableReverseCompensation: disabled}}
		h := newHarness(mustNew(NewEq2(cfg)))
		h.toAvoidance()
		h.ackN(8, 55*time.Millisecond, 100*time.Millisecond)
		h.ackN(100, 55*time.Millisecond, 300*time.Millisecond) // ACK path queues 200 ms
		require.NotEqual(t, modeProbe, h.c.mode)
		srtt := h.c.rtt.Smoothed()
		h.c.probe.schedule(h.now.Add(h.step))
		h.ack(55*time.Millisecond, 300*time.Millisecond)
		require.Equal(t, modeProbe, h.c.mode)
		hold := h.c.probe.holdUntil.Sub(h.c.probe.start)
		if disabled {
			require.InDelta(t, float64(2*srtt), float64(hold), float64(time.Millisecond), "without compensation: 2 SRTT")
			continue
		}
		// revQ = 195 ms of the 300 ms RTT: hold 2·SRTT·105/300.
		require.InDelta(t, float64(2*srtt)*105/300, float64(hold), float64(5*time.Millisecond))
	}
}

// With the ACK path queued, each per-ACK step is divided by the reverse
// scale: the feedback loop is RTT/(RTT − revQ) times longer than the
// forward loop, so undivided steps would over-correct by that factor.
func TestStepsScaledByReverseQueueing(t *testing.T) {
	for _, tc := range []struct {
		name string
		owd  time.Duration // forward: base 50 ms
	}{
		{"increase (empty forward queue)", 50 * time.Millisecond},
		{"Eq. 7 decrease (forward queue 25 ms)", 75 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			step := func(disabled bool) float64 {
				cfg := noProbe()
				cfg.Tuning.DisableReverseCompensation = disabled
				h := newHarness(mustNew(New(cfg)))
				h.toAvoidance()
				// Forward queueing as given, plus 200 ms on the ACK path.
				rtt := 300*time.Millisecond + tc.owd - 50*time.Millisecond
				h.ackN(4, tc.owd, rtt)
				before := h.c.cwnd
				h.ack(tc.owd, rtt)
				return h.c.cwnd - before
			}
			off, on := step(true), step(false)
			require.NotZero(t, off)
			// revQ = 200 ms of the RTT: scale = RTT/(RTT − 200 ms).
			rtt := 300*time.Millisecond + tc.owd - 50*time.Millisecond
			scale := float64(rtt) / float64(rtt-200*time.Millisecond)
			// (1 %: the steps before this one were scaled too, so the
			// windows the two steps start from differ slightly.)
			require.InEpsilon(t, off/scale, on, 0.01)
			require.Greater(t, scale, 2.0)
		})
	}
}
