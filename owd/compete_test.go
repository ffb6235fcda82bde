package owd

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
)

// standingQueue feeds ACKs for d of a queue that never empties but moves,
// as a buffer filler's does: queueing delay sweeping lo…hi every period.
func (h *harness) standingQueue(d, lo, hi, period time.Duration) {
	base := 50 * time.Millisecond
	end := h.now.Add(d)
	for h.now.Before(end) {
		phase := float64(int64(h.now)%int64(period)) / float64(period)
		q := lo + time.Duration(phase*float64(hi-lo))
		h.ack(base+q, 2*(base+q))
	}
}

// competingHarness is a default controller switched to competitive mode by
// a moving standing queue after a queue-free start.
func competingHarness(t *testing.T) *harness {
	t.Helper()
	h := newHarness(New(Config{MSS: mss}))
	h.toAvoidance()
	h.ackN(1000, 50*time.Millisecond, 100*time.Millisecond)
	h.standingQueue(5*time.Second, 40*time.Millisecond, 80*time.Millisecond, time.Second)
	require.True(t, h.c.comp.on)
	return h
}

func TestCompetitiveModeOnStandingQueue(t *testing.T) {
	h := newHarness(New(Config{MSS: mss}))
	h.toAvoidance()
	h.ackN(1000, 50*time.Millisecond, 100*time.Millisecond) // queue-free first
	require.False(t, h.c.comp.on)
	h.standingQueue(5*time.Second, 40*time.Millisecond, 80*time.Millisecond, time.Second)
	require.True(t, h.c.comp.on, "a queue that never nearly empties and moves is a buffer filler's")
	require.Equal(t, h.c.comp.cubic.Window(), h.c.Window(), "the window is CUBIC's, not the delay rule's")
	require.Greater(t, h.c.Window(), cc.ByteCount(h.c.cwnd))

	// The same without competitive mode: the delay rule holds the floor.
	cfg := Config{MSS: mss}
	cfg.Tuning.DisableCompetitiveMode = true
	h2 := newHarness(New(cfg))
	h2.toAvoidance()
	h2.ackN(1000, 50*time.Millisecond, 100*time.Millisecond)
	h2.standingQueue(5*time.Second, 40*time.Millisecond, 80*time.Millisecond, time.Second)
	require.False(t, h2.c.comp.on)
	require.Less(t, h2.c.Window(), h.c.Window()/4)
}

func TestNoCompetitiveModeWhenQueueEmpties(t *testing.T) {
	h := newHarness(New(Config{MSS: mss}))
	h.toAvoidance()
	// A queue of the flow's own: rises to 30 ms and drains to nothing
	// every 200 ms (well within 5 RTTs).
	h.standingQueue(10*time.Second, 0, 30*time.Millisecond, 200*time.Millisecond)
	require.False(t, h.c.comp.on)
}

func TestNoCompetitiveModeOnRouteChange(t *testing.T) {
	// +100 ms each way: the delay steps up and stays flat. Copa's test
	// alone calls that a queue that never empties.
	h := newHarness(New(Config{MSS: mss}))
	h.toAvoidance()
	h.ackN(2000, 50*time.Millisecond, 100*time.Millisecond)
	h.ackN(10000, 150*time.Millisecond, 300*time.Millisecond)
	require.False(t, h.c.comp.on, "a flat step is a longer path, not a competitor")
}

func TestStarvedLossesSwitch(t *testing.T) {
	h := newHarness(New(noProbe()))
	h.toAvoidance()
	h.ackN(200, 150*time.Millisecond, 300*time.Millisecond) // deep queue: window to the floor
	require.InDelta(t, 2.0, h.cwndPackets(), 0.01)
	h.lose()
	require.False(t, h.c.comp.on, "one loss is not enough")
	h.ackN(50, 150*time.Millisecond, 300*time.Millisecond) // ends recovery
	h.lose()
	require.True(t, h.c.comp.on, "a second congestive loss at the floor within 30 s")
}

func TestStarvedLossesExpire(t *testing.T) {
	h := newHarness(New(noProbe()))
	h.toAvoidance()
	h.ackN(200, 150*time.Millisecond, 300*time.Millisecond)
	h.lose()
	h.step = 100 * time.Millisecond
	h.ackN(400, 150*time.Millisecond, 300*time.Millisecond) // 40 s later
	h.step = time.Millisecond
	h.lose()
	require.False(t, h.c.comp.on, "losses 40 s apart are not a buffer filler")
}

func TestRandomLossesDoNotSwitch(t *testing.T) {
	h := newHarness(New(noProbe()))
	h.toAvoidance()
	for range 20 {
		h.ackN(100, 50*time.Millisecond, 100*time.Millisecond) // no queue
		h.lose()
	}
	require.False(t, h.c.comp.on)
}

func TestHoldDrainSwitchesBack(t *testing.T) {
	h := competingHarness(t)

	// The competitor leaves: the queue is the flow's own CUBIC queue, which
	// a slowdown drains. Run until the next slowdown has come and gone.
	deadline := h.now.Add(60 * time.Second)
	for h.c.comp.on && h.now.Before(deadline) {
		q := 60 * time.Millisecond
		if h.c.probe.active {
			q = 0 // the hold drained it
		}
		h.ack(50*time.Millisecond+q, 2*(50*time.Millisecond+q))
	}
	require.False(t, h.c.comp.on, "the hold drained the queue: back to the delay target")
	require.True(t, h.c.Metrics().InSlowStart, "through slow start")
}

func TestHoldWithoutDrainStaysCompetitive(t *testing.T) {
	h := competingHarness(t)
	holds := 0
	was := false
	for range 60000 { // 60 s: at least two slowdowns
		h.standingQueue(time.Millisecond, 40*time.Millisecond, 80*time.Millisecond, time.Second)
		if h.c.probe.active && !was {
			holds++
		}
		was = h.c.probe.active
	}
	require.GreaterOrEqual(t, holds, 2)
	require.True(t, h.c.comp.on, "the buffer filler kept the queue through the holds")
}

func TestWrongReturnResumesCubicWindow(t *testing.T) {
	h := competingHarness(t)
	// Let CUBIC's window grow, then a hold drains the queue (as one CUBIC
	// flow's queue does after its cut): the flow returns to the delay target.
	h.standingQueue(10*time.Second, 40*time.Millisecond, 80*time.Millisecond, time.Second)
	for h.c.comp.on {
		q := 60 * time.Millisecond
		if h.c.probe.active {
			q = 0
		}
		h.ack(50*time.Millisecond+q, 2*(50*time.Millisecond+q))
	}
	left := h.c.comp.leftWindow
	require.Greater(t, left, float64(10*mss))
	// The competitor was there all along: the queue is back at once.
	start := h.now
	for !h.c.comp.on && h.now.Sub(start) < competeRecall {
		h.standingQueue(time.Millisecond, 40*time.Millisecond, 80*time.Millisecond, time.Second)
	}
	require.True(t, h.c.comp.on, "back within the recall span")
	require.GreaterOrEqual(t, float64(h.c.comp.cubic.Window()), cubicRecallFactor*left-1,
		"resumes at CUBIC's β of the window it had, not from the floor")
}
