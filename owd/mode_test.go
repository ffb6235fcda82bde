package owd

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock"
)

// transition is one row of modeTransitions.
type transition struct {
	from mode
	why  reason
	to   mode
}

func (t transition) String() string { return fmt.Sprintf("%v --%v--> %v", t.from, t.why, t.to) }

// modeTransitions is the package doc's diagram as a table: every mode
// change the controller may make, as (from, reason) → to. A change decided
// during a slowdown's hold is listed from the mode the hold interrupted
// (setMode), and the hold's end returns to whichever mode that left.
// That change, the drain verdict, comes with the first ACK of a packet
// sent after the hold, which is never before the hold is over: the same
// ACK ends the hold (reasonHoldOver), and a hold cut short gives no
// verdict, so a cut hold never resumes in slow start.
var modeTransitions = []transition{
	{modeSlowStart, reasonExitDelay, modeAvoidance},
	{modeSlowStart, reasonSsthresh, modeAvoidance},
	{modeSlowStart, reasonLoss, modeAvoidance},
	{modeSlowStart, reasonTimeout, modeAvoidance}, // the window was at the floor: ssthresh = cwnd

	{modeAvoidance, reasonRebase, modeSlowStart},
	{modeAvoidance, reasonTimeout, modeSlowStart},
	{modeAvoidance, reasonSlowdownDue, modeProbe},
	{modeAvoidance, reasonCopaAsks, modeProbe},
	{modeAvoidance, reasonQueueStayed, modeCompetitive},
	{modeAvoidance, reasonCopaStayed, modeCompetitive},
	{modeAvoidance, reasonRecall, modeCompetitive},
	{modeAvoidance, reasonStarved, modeCompetitive},
	{modeAvoidance, reasonElastic, modeCompetitive}, // Tuning.ElasticityTest
	{modeAvoidance, reasonPushBusy, modeCompetitive},

	{modeProbe, reasonHoldOver, modeAvoidance},
	{modeProbe, reasonHoldOver, modeCompetitive},
	{modeProbe, reasonHoldOver, modeSlowStart}, // a verdict during the hold left competitive mode
	{modeProbe, reasonHoldCut, modeAvoidance},
	{modeProbe, reasonHoldCut, modeCompetitive},

	{modeCompetitive, reasonSlowdownDue, modeProbe},
	{modeCompetitive, reasonQueueDrained, modeSlowStart},
}

// modeDrives are the paths the transition test drives a controller
// through, each from a fresh default controller (or the one it builds).
var modeDrives = []struct {
	name  string
	build func() *Controller
	drive func(h *harness)
}{
	{"exit on delay, slowdowns, rebase", nil, func(h *harness) {
		h.toAvoidance()
		h.ackN(2000, 50*time.Millisecond, 100*time.Millisecond)
		h.ackN(32000, 150*time.Millisecond, 300*time.Millisecond) // a longer path
	}},
	{"loss in slow start, timeouts", nil, func(h *harness) {
		h.lose() // loss in slow start, before any delay sample
		h.ackN(200, 50*time.Millisecond, 100*time.Millisecond)
		h.c.OnRetransmissionTimeout(h.now) // avoidance → slow start
		h.now = h.now.Add(time.Second)
		h.c.OnRetransmissionTimeout(h.now) // at the floor again: ssthresh = cwnd
	}},
	{"ssthresh", nil, func(h *harness) {
		h.ackN(30, 50*time.Millisecond, 100*time.Millisecond)
		h.c.OnRetransmissionTimeout(h.now) // ssthresh = half the window
		h.ackN(30, 50*time.Millisecond, 100*time.Millisecond)
	}},
	{"Copa's test refuted by the hold", nil, func(h *harness) {
		h.toAvoidance()
		h.ackN(1000, 50*time.Millisecond, 100*time.Millisecond)
		h.ownQueue(10 * time.Second)
	}},
	{"buffer filler: switch, holds, return, recall", nil, func(h *harness) {
		h.toAvoidance()
		h.ackN(1000, 50*time.Millisecond, 100*time.Millisecond)
		h.standingQueue(30*time.Second, 40*time.Millisecond, 80*time.Millisecond, time.Second)
		for deadline := h.now.Add(time.Minute); h.c.comp.cubic != nil && h.now.Before(deadline); {
			h.ownQueue(time.Millisecond)
		}
		h.ackN(8, 50*time.Millisecond, 100*time.Millisecond)
		h.ackN(4, 110*time.Millisecond, 220*time.Millisecond)
		h.standingQueue(10*time.Second, 40*time.Millisecond, 80*time.Millisecond, time.Second)
	}},
	{"regular slowdown finds the queue, then Copa's test", nil, func(h *harness) {
		h.toAvoidance()
		h.ackN(1000, 50*time.Millisecond, 100*time.Millisecond)
		h.sawtooth(40*time.Second, 40*time.Millisecond, 80*time.Millisecond, time.Second, false)
		require.Equal(h.t, modeCompetitive, h.c.mode)
		// A timeout in competitive mode, with a delay window (the one
		// the flow returns with) above the floor, as a switch from a
		// larger window leaves it: CUBIC handles its own timeout.
		h.c.cwnd = 20 * mss
		h.c.OnRetransmissionTimeout(h.now)
	}},
	{"Copa's test, its hold and an overflow", nil, func(h *harness) {
		h.toAvoidance()
		h.ackN(1000, 50*time.Millisecond, 100*time.Millisecond)
		h.sawtooth(time.Second, 40*time.Millisecond, 80*time.Millisecond, time.Second, false)
		h.lose() // the buffer overflowed once
		h.sawtooth(10*time.Second, 40*time.Millisecond, 80*time.Millisecond, time.Second, false)
	}},
	{"starved losses", func() *Controller { return mustNew(New(noProbe())) }, func(h *harness) {
		h.toAvoidance()
		h.ackN(200, 150*time.Millisecond, 300*time.Millisecond)
		h.lose()
		h.ackN(50, 150*time.Millisecond, 300*time.Millisecond)
		h.lose()
		h.ack(150*time.Millisecond, 300*time.Millisecond)
	}},
	{"holds cut by a loss and by a timeout", nil, func(h *harness) {
		h.toAvoidance()
		for h.c.mode != modeProbe {
			h.ack(50*time.Millisecond, 100*time.Millisecond)
		}
		h.lose()
		// A queue of 6 ms: samples at the base would re-arm the next
		// slowdown for ever (syncSlowdown).
		h.ackN(100, 56*time.Millisecond, 106*time.Millisecond)
		for h.c.mode != modeProbe {
			h.ack(56*time.Millisecond, 106*time.Millisecond)
		}
		h.c.OnRetransmissionTimeout(h.now)
	}},
	{"competitive holds cut", nil, func(h *harness) {
		h.toAvoidance()
		h.ackN(1000, 50*time.Millisecond, 100*time.Millisecond)
		h.standingQueue(5*time.Second, 40*time.Millisecond, 80*time.Millisecond, time.Second)
		require.Equal(h.t, modeCompetitive, h.c.mode)
		for h.c.mode != modeProbe {
			h.standingQueue(time.Millisecond, 40*time.Millisecond, 80*time.Millisecond, time.Second)
		}
		h.lose()
		for h.c.mode != modeProbe {
			h.standingQueue(time.Millisecond, 40*time.Millisecond, 80*time.Millisecond, time.Second)
		}
		h.c.OnRetransmissionTimeout(h.now)
	}},
	{"verdict at the hold's end: drained", nil, func(h *harness) {
		// The queue drains under the hold, and the first ACK after the
		// hold is of a packet sent after it: the verdict (back to slow
		// start) comes during the hold and takes effect as it ends.
		h.toAvoidance()
		h.ackN(1000, 50*time.Millisecond, 100*time.Millisecond)
		h.standingQueue(5*time.Second, 40*time.Millisecond, 80*time.Millisecond, time.Second)
		for h.c.mode != modeProbe {
			h.standingQueue(time.Millisecond, 40*time.Millisecond, 80*time.Millisecond, time.Second)
		}
		for h.now.Before(h.c.probe.holdUntil.Add(-2 * h.step)) {
			h.ack(50*time.Millisecond, 100*time.Millisecond)
		}
		h.now = h.c.probe.holdUntil
		h.ack(50*time.Millisecond, 100*time.Millisecond) // the verdict, then the hold's end
		require.Equal(h.t, ModeChange{At: h.now, From: ModeProbe, To: ModeSlowStart, Reason: "hold_over"}, h.c.LastModeChange())
	}},
	{"pulse test beside ACK-clocked traffic", func() *Controller { return mustNew(New(pulseConfig())) }, func(h *harness) {
		l := startPulse(h, pulseMu)
		l.mu, l.z = pulseMu, ackClocked(h)
		l.drive(h.t, h, 10*time.Second)
	}},
	{"push test beside a flat filler, and on a longer path", nil, func(h *harness) {
		l := newTestLink(10*time.Millisecond, 2000, func(clock.Mono) float64 { return 20e6 })
		l.run(h.c, 5*time.Second)
		l.addCross(l.now, 825, 20*time.Millisecond)
		l.run(h.c, 25*time.Second)
		h.c = mustNew(New(Config{MSS: mss}))
		h.c.onModeChange = h.onModeChange
		l = newTestLink(10*time.Millisecond, 2000, func(clock.Mono) float64 { return 20e6 })
		l.run(h.c, 5*time.Second)
		l.prop += 40 * time.Millisecond
		l.run(h.c, 8*time.Second)
	}},
	{"alone on changing capacity", nil, func(h *harness) {
		for _, rate := range []func(clock.Mono) float64{
			steps([]time.Duration{0, 15 * time.Second}, []float64{4e6, 1e6}),
			lteLike(1e6, 20e6, lteFoolingSeeds[0]),
		} {
			newTestLink(20*time.Millisecond, 200, rate).run(h.c, 40*time.Second)
			h.c = mustNew(New(Config{MSS: mss}))
			h.c.onModeChange = h.onModeChange
		}
	}},
}

// Every mode change the controller makes on the drives is in the table,
// and every row of the table is made on some drive: the table (and the
// diagram it copies) is what the code does.
func TestModeTransitionsFollowTheTable(t *testing.T) {
	allowed := map[transition]bool{}
	for _, tr := range modeTransitions {
		allowed[tr] = true
	}
	seen := map[transition]bool{}
	for _, d := range modeDrives {
		t.Run(d.name, func(t *testing.T) {
			c := mustNew(New(Config{MSS: mss}))
			if d.build != nil {
				c = d.build()
			}
			h := newHarness(c)
			h.t = t
			h.onModeChange = func(ch modeChange) {
				tr := transition{ch.from, ch.why, ch.to}
				require.True(t, allowed[tr], "%v (deferred %v) at %v is not in the table", tr, ch.deferred, ch.at)
				seen[tr] = true
			}
			c.onModeChange = h.onModeChange
			d.drive(h)
		})
	}
	for _, tr := range modeTransitions {
		require.True(t, seen[tr], "%v: no drive makes it", tr)
	}
}

// setMode's contract for a slowdown: entering it saves the interrupted
// mode, a change decided during the hold replaces the mode it returns to
// (and is reported from the interrupted mode), and the hold's end goes
// there.
func TestSetModeDefersDuringTheHold(t *testing.T) {
	c := mustNew(New(Config{MSS: mss}))
	var got []modeChange
	c.onModeChange = func(ch modeChange) { got = append(got, ch) }
	c.setMode(1, modeAvoidance, reasonExitDelay)
	c.setMode(2, modeProbe, reasonSlowdownDue)
	require.Equal(t, modeAvoidance, c.probe.resume)
	c.setMode(3, modeCompetitive, reasonQueueStayed)
	require.Equal(t, modeProbe, c.mode, "the hold goes on")
	require.Equal(t, modeCompetitive, c.probe.resume)
	require.Equal(t, modeChange{at: 3, from: modeAvoidance, to: modeCompetitive, why: reasonQueueStayed, deferred: true}, got[2])
	require.Equal(t, ModeChange{At: 3, From: ModeAvoidance, To: ModeCompetitive, Reason: "queue_stayed", Deferred: true}, c.LastModeChange())
	c.setMode(4, modeCompetitive, reasonQueueStayed)
	require.Len(t, got, 3, "a change to the mode the hold resumes is none")
	c.setMode(5, c.probe.resume, reasonHoldOver)
	require.Equal(t, modeCompetitive, c.mode)
	require.Equal(t, modeChange{at: 5, from: modeProbe, to: modeCompetitive, why: reasonHoldOver}, got[3])
}
