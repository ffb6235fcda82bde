package owd

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pastFirstSlowdown takes h to congestion avoidance on a path of base
// delay base and runs it at base+q for 3 s, past its first slowdown.
func pastFirstSlowdown(t *testing.T, h *harness, base, q time.Duration) {
	h.ackN(8, base, 2*base)
	h.ackN(4, base+10*time.Millisecond, 2*base+10*time.Millisecond)
	h.ackN(3000, base+q, 2*base+q)
	require.True(t, h.c.probe.done, "the first slowdown is over")
	require.Equal(t, modeAvoidance, h.c.mode)
}

// A flow whose base held another flow's queue joins that flow's hold when
// the queue drains under it: a sample that lowers OWDmin past half the
// noise floor makes its own slowdown due at once.
func TestSlowdownJoinsAnotherFlowsDrain(t *testing.T) {
	run := func(disable bool) mode {
		cfg := Config{MSS: mss}
		cfg.Tuning.DisableSlowdownSync = disable
		h := newHarness(mustNew(New(cfg)))
		// The base it measured, 60 ms, holds 8 ms of another flow's queue.
		pastFirstSlowdown(t, h, 60*time.Millisecond, 3*time.Millisecond)
		require.Greater(t, h.c.probe.at, h.now.Add(10*time.Second))
		h.ack(52*time.Millisecond, 112*time.Millisecond) // the other flow drains
		return h.c.mode
	}
	require.Equal(t, modeProbe, run(false))
	require.Equal(t, modeAvoidance, run(true))
}

// A sample at the base delay re-arms the next slowdown one interval after
// it, as BBR's min-RTT expiry: flows that saw the queue empty at the same
// moment fall due together.
func TestSlowdownRearmedBySampleAtBase(t *testing.T) {
	run := func(disable bool) (before, after time.Duration) {
		cfg := Config{MSS: mss}
		cfg.Tuning.DisableSlowdownSync = disable
		h := newHarness(mustNew(New(cfg)))
		pastFirstSlowdown(t, h, 50*time.Millisecond, 6*time.Millisecond)
		before = h.c.probe.at.Sub(h.now)
		h.ack(51*time.Millisecond, 101*time.Millisecond) // the queue emptied
		return before, h.c.probe.at.Sub(h.now)
	}
	before, after := run(false)
	require.Less(t, before, 20*time.Second)
	require.Equal(t, 20*time.Second, after, "one interval after the sample at the base")
	before, after = run(true)
	require.Equal(t, before-time.Millisecond, after)
}

// A sample within the queue the flow keeps moves nothing.
func TestSlowdownNotRearmedAboveBase(t *testing.T) {
	h := newHarness(mustNew(New(Config{MSS: mss})))
	pastFirstSlowdown(t, h, 50*time.Millisecond, 6*time.Millisecond)
	at := h.c.probe.at
	h.ack(56*time.Millisecond, 106*time.Millisecond)
	require.Equal(t, at, h.c.probe.at)
}

// Another flow's slow start passes through the queue this flow shares:
// with OWDv_max raised by samples in congestion avoidance, μ would stand
// at half that spike for seconds and this flow would take the queue from
// flows that did not see it. By default only slow start seeds OWDv_max.
func TestAvoidanceSpikeLeavesMuAlone(t *testing.T) {
	run := func(raise bool) float64 {
		cfg := Config{MSS: mss}
		cfg.Tuning.AvoidanceRaisesMax = raise
		cfg.Tuning.DisableBaseDelayProbe = true
		h := newHarness(mustNew(New(cfg)))
		h.toAvoidance()
		h.ackN(2000, 52*time.Millisecond, 102*time.Millisecond)
		h.ackN(20, 90*time.Millisecond, 140*time.Millisecond) // a latecomer's slow start
		h.ackN(200, 52*time.Millisecond, 102*time.Millisecond)
		return h.c.Delays().Mu * 50 // in ms of queueing at the 50 ms base
	}
	require.InDelta(t, 5, run(false), 0.01, "μ is the 5 ms floor")
	require.Greater(t, run(true), 15.0)
}
