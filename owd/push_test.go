package owd

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock"
)

// The verdict's rules, one row each.
func TestPushVerdict(t *testing.T) {
	ms := time.Millisecond
	base := pushTest{k: 40, p: 500 * time.Microsecond, w0: 2, before: 100 * ms, samples: 10} // k·p = 20 ms
	for _, tc := range []struct {
		name string
		edit func(*pushTest)
		want pushVerdict
	}{
		{"rose by k·p, queue far above the own window: busy", func(t *pushTest) { t.minQ = 120 * ms }, pushBusy},
		{"rose by half of k·p: busy", func(t *pushTest) { t.minQ = 110 * ms }, pushBusy},
		{"rose by a third of k·p: no verdict", func(t *pushTest) { t.minQ = 107 * ms }, pushNone},
		{"flat: idle", func(t *pushTest) { t.minQ = 101 * ms }, pushIdle},
		{"fell by a quarter of k·p: still flat", func(t *pushTest) { t.minQ = 95 * ms }, pushIdle},
		{"fell by more (a filler's cut): no verdict", func(t *pushTest) { t.minQ = 80 * ms }, pushNone},
		{"a loss: no verdict", func(t *pushTest) { t.minQ = 120 * ms; t.lost = true }, pushNone},
		{"one sample: no verdict", func(t *pushTest) { t.minQ = 120 * ms; t.samples = 1 }, pushNone},
		// A link that slowed: the rise says its packet time is 5 ms, and
		// three of them (w0+1) twice over explain a 30 ms queue.
		{"own window explains the queue: own", func(t *pushTest) { t.before = 30 * ms; t.minQ = 230 * ms }, pushOwn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := base
			tc.edit(&p)
			v, _ := p.verdict()
			require.Equal(t, tc.want, v)
		})
	}
}

// fillerRun runs owd alone for 5 s on a 20 Mbit/s link (30 ms round trip,
// 2 000-packet FIFO), then beside a window-limited flow that keeps 310 ms
// of flat queue and never loses, for 25 s. It returns the share of the
// link's packets the flow got beside the filler and its seconds in
// competitive mode.
func fillerRun(t *testing.T, tuning Tuning) (share, competitive float64) {
	t.Helper()
	l := newTestLink(10*time.Millisecond, 2000, func(clock.Mono) float64 { return 20e6 })
	c := mustNew(New(Config{MSS: mss, Tuning: tuning}))
	l.run(c, 5*time.Second)
	// 20 Mbit/s of 1 000-byte packets is 2 500 packets/s (0.4 ms each):
	// 825 packets are 330 ms, 310 ms of queue beside the cross flow's
	// 20 ms outside it.
	l.addCross(l.now, 825, 20*time.Millisecond)
	before := l.acked
	l.run(c, 25*time.Second)
	return float64(l.acked-before) / (25 * 2500), l.modeTime[ModeCompetitive].Seconds()
}

// Beside a buffer filler that keeps a flat queue and loses nothing, Copa's
// test sees no movement and no overflow corroborates the drain test: only
// the push test finds it (the window at the floor, a queue that rises by
// the pushed packets' serialisation).
func TestPushTestFindsFlatFiller(t *testing.T) {
	share, comp := fillerRun(t, Tuning{})
	var off Tuning
	off.DisablePushTest = true
	shareOff, compOff := fillerRun(t, off)
	t.Logf("push test on: share %.3f, %.1f s competitive; off: %.3f, %.1f s", share, comp, shareOff, compOff)
	require.Zero(t, compOff, "without the push test nothing switches")
	require.Greater(t, comp, 10.0, "the push test switched within the first half")
	require.Greater(t, share, 3*shareOff)
}

// A longer path: the push finds the link idle under the extra delay and
// restarts the base-delay history, so the window grows back within a few
// seconds instead of the history's 30.
func TestPushTestFollowsLongerPath(t *testing.T) {
	run := func(tuning Tuning) (time.Duration, float64) {
		l := newTestLink(10*time.Millisecond, 2000, func(clock.Mono) float64 { return 20e6 })
		c := mustNew(New(Config{MSS: mss, Tuning: tuning}))
		l.run(c, 5*time.Second)
		before := l.acked
		l.prop += 40 * time.Millisecond // +80 ms one way and +40 ms of ACK path
		l.run(c, 8*time.Second)
		return c.owdA.Min(), float64(l.acked-before) / (8 * 2500)
	}
	base, util := run(Tuning{})
	var off Tuning
	off.DisablePushTest = true
	baseOff, utilOff := run(off)
	t.Logf("push test on: OWDmin %v, utilisation %.2f; off: %v, %.2f", base, util, baseOff, utilOff)
	require.Greater(t, base, 90*time.Millisecond, "OWDmin followed the longer path")
	require.Less(t, baseOff, 30*time.Millisecond, "without it the old base stays for the history's length")
	require.Greater(t, util, 2*utilOff)
}

// A flat queue no longer than what delay-based neighbours keep (about
// their threshold, no less than two noise floors) is no buffer filler's:
// the push test does not run, and the flow stays on its delay target.
func TestPushTestLeavesNeighboursQueue(t *testing.T) {
	l := newTestLink(10*time.Millisecond, 2000, func(clock.Mono) float64 { return 20e6 })
	c := mustNew(New(Config{MSS: mss}))
	l.run(c, 5*time.Second)
	// 8 ms of standing queue: 70 packets of 0.4 ms, less the cross
	// flow's 20 ms outside the queue.
	l.addCross(l.now, 70, 20*time.Millisecond)
	l.run(c, 25*time.Second)
	require.Zero(t, l.modeTime[ModeCompetitive].Seconds())
}

// A push that gives no verdict (here the filler's queue fell during it, as
// a loss-based filler's does at its cut) is asked again pushSpacing round
// trips later, not at the next regular slowdown 20 s on.
func TestPushRetriedSoon(t *testing.T) {
	l := newTestLink(10*time.Millisecond, 2000, func(clock.Mono) float64 { return 20e6 })
	c := mustNew(New(Config{MSS: mss}))
	l.run(c, 5*time.Second)
	l.addCross(l.now, 825, 20*time.Millisecond)
	for !c.push.active {
		l.run(c, time.Millisecond)
	}
	first := l.now
	// The filler cuts: 600 of its packets leave for good.
	l.cross = l.cross[:len(l.cross)-600]
	for c.push.active {
		l.run(c, time.Millisecond)
	}
	t.Logf("first push: before %v, lowest %v, k %.0f, p %v, %d samples", c.push.before, c.push.minQ, c.push.k, c.push.p, c.push.samples)
	require.NotEqual(t, modeCompetitive, c.mode, "a queue that fell gives no verdict")
	l.addCross(l.now, 600, 20*time.Millisecond) // and grows back
	for c.mode != modeCompetitive && l.now.Sub(first) < 10*time.Second {
		l.run(c, time.Millisecond)
	}
	require.Equal(t, modeCompetitive, c.mode)
	require.Equal(t, "push_busy", c.LastModeChange().Reason)
	t.Logf("second push switched %v after the first began", l.now.Sub(first))
}

// The push test starts from Copa's test inside onAckAvoidance; on that
// same ACK, with a filler's queue of several base delays, the queue drain
// cut the raised window back to the floor, so the push measured nothing
// but its floor and called a busy link idle (dev fillers draw 38: a CUBIC
// filler's 386 ms queue on a 33 ms path became the base delay).
func TestPushWindowStandsOnTheACKThatStartsIt(t *testing.T) {
	h := newHarness(mustNew(New(noProbe())))
	h.toAvoidance()
	h.c.disp.cur, h.c.disp.nCur = 400*time.Microsecond, dispersionPairs
	for i := 0; i < 20000 && !h.c.push.active; i++ {
		// A filler's flat queue of 200 ms on a 50 ms base.
		h.ack(250*time.Millisecond, 300*time.Millisecond)
	}
	require.True(t, h.c.push.active, "Copa's test started a push at the floor")
	require.InDelta(t, h.c.push.w0+h.c.push.k, h.cwndPackets(), 1e-9, "the raised window stands")
}

// An idle verdict restarts the base-delay history only after a queue that
// did not move (a longer path). Beside a filler whose queue moved, a flat
// push is that queue falling while the push raised it; a restart there
// made the filler's standing queue the base delay (dev fillers draw 51: a
// BBR filler's, 25.9 → 89.2 ms).
func TestPushIdleRebasesOnlyAFlatQueue(t *testing.T) {
	for _, flat := range []bool{true, false} {
		c := mustNew(New(Config{MSS: mss}))
		c.mode = modeAvoidance
		c.push = pushTest{active: true, k: 40, p: 500 * time.Microsecond, w0: 2,
			before: 100 * time.Millisecond, minQ: 101 * time.Millisecond, samples: 10, flat: flat}
		v, _ := c.push.verdict()
		require.Equal(t, pushIdle, v)
		c.finishPush(clock.Mono(time.Second))
		require.Equal(t, flat, c.rebase, "flat queue before the push: %v", flat)
	}
}
