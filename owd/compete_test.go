package owd

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// standingQueue feeds ACKs for d of a queue that never empties but moves,
// as a buffer filler's does: queueing delay sweeping lo…hi every period,
// whatever this flow's window (the filler takes any room the flow leaves),
// and at every peak the buffer overflows and this flow loses a packet.
func (h *harness) standingQueue(d, lo, hi, period time.Duration) { h.sawtooth(d, lo, hi, period, true) }

// sawtooth feeds ACKs for d of queueing delay sweeping lo…hi every period,
// with a loss at every peak if overflow.
func (h *harness) sawtooth(d, lo, hi, period time.Duration, overflow bool) {
	base := 50 * time.Millisecond
	end := h.now.Add(d)
	for h.now.Before(end) {
		phase := float64(int64(h.now)%int64(period)) / float64(period)
		q := lo + time.Duration(phase*float64(hi-lo))
		if overflow && int64(h.now)%int64(period) < int64(h.step) {
			h.lose() // the overflow at the peak the period just ended with
		}
		h.ack(base+q, 2*(base+q))
	}
}

// ownQueue feeds ACKs for d of a queue this flow alone builds: it moves
// between 40 and 80 ms every second while the window is above the floor
// (a link whose capacity changes) and drains under a slowdown's hold (the
// window at the probe window).
func (h *harness) ownQueue(d time.Duration) {
	base := 50 * time.Millisecond
	end := h.now.Add(d)
	for h.now.Before(end) {
		phase := float64(int64(h.now)%int64(time.Second)) / float64(time.Second)
		q := 40*time.Millisecond + time.Duration(phase*float64(40*time.Millisecond))
		if h.c.mode == modeProbe {
			q = 0
		}
		h.ack(base+q, 2*(base+q))
	}
}

// competingHarness is a default controller switched to competitive mode by
// a moving standing queue after a queue-free start.
func competingHarness(t *testing.T) *harness {
	t.Helper()
	h := newHarness(mustNew(New(Config{MSS: mss})))
	h.toAvoidance()
	h.ackN(1000, 50*time.Millisecond, 100*time.Millisecond)
	h.standingQueue(5*time.Second, 40*time.Millisecond, 80*time.Millisecond, time.Second)
	require.Equal(t, modeCompetitive, h.c.mode)
	return h
}

func TestCompetitiveModeOnStandingQueue(t *testing.T) {
	h := newHarness(mustNew(New(Config{MSS: mss})))
	h.toAvoidance()
	h.ackN(1000, 50*time.Millisecond, 100*time.Millisecond) // queue-free first
	require.Equal(t, modeAvoidance, h.c.mode)
	h.standingQueue(5*time.Second, 40*time.Millisecond, 80*time.Millisecond, time.Second)
	require.Equal(t, modeCompetitive, h.c.mode, "a queue that never nearly empties, moves and stays under a slowdown is a buffer filler's")
	require.Equal(t, ModeCompetitive, h.c.Metrics().Mode)
	require.Equal(t, h.c.competitiveWindow(), h.c.Window(), "the window is competitive mode's, not the delay rule's")
	require.GreaterOrEqual(t, h.c.Window(), h.c.comp.cubic.Window())
	require.GreaterOrEqual(t, h.c.Window(), h.c.comp.bbr.Window())
	require.Greater(t, h.c.Window(), cc.ByteCount(h.c.cwnd))

	// The same without competitive mode: the delay rule holds the floor.
	cfg := Config{MSS: mss}
	cfg.Tuning.DisableCompetitiveMode = true
	h2 := newHarness(mustNew(New(cfg)))
	h2.toAvoidance()
	h2.ackN(1000, 50*time.Millisecond, 100*time.Millisecond)
	h2.standingQueue(5*time.Second, 40*time.Millisecond, 80*time.Millisecond, time.Second)
	require.NotEqual(t, modeCompetitive, h2.c.mode)
	require.Less(t, h2.c.Window(), h.c.Window()/4)
}

// Copa's test alone only asks for the drain test: a queue that never
// empties between slowdowns but is the flow's own (it drains under the
// hold) is no competitor, and the test does not ask again before the next
// regular slowdown.
func TestDrainTestDecides(t *testing.T) {
	h := newHarness(mustNew(New(Config{MSS: mss})))
	h.toAvoidance()
	h.ackN(1000, 50*time.Millisecond, 100*time.Millisecond)
	holds := 0
	was := false
	for range 10000 { // 10 s, within one regular slowdown interval
		h.ownQueue(time.Millisecond)
		if h.c.mode == modeProbe && !was {
			holds++
		}
		was = h.c.mode == modeProbe
		require.NotEqual(t, modeCompetitive, h.c.mode, "the hold drained the queue: it is the flow's own")
	}
	require.Equal(t, 1, holds, "Copa's test fired, its drain test refuted it, and it stays quiet until the next regular slowdown")
	require.True(t, h.c.comp.quiet)

	// Without the drain test's verdict (a queue that stays), the same
	// evidence switches.
	h2 := newHarness(mustNew(New(Config{MSS: mss})))
	h2.toAvoidance()
	h2.ackN(1000, 50*time.Millisecond, 100*time.Millisecond)
	h2.standingQueue(10*time.Second, 55*time.Millisecond, 65*time.Millisecond+3*time.Millisecond, 300*time.Millisecond)
	require.Equal(t, modeCompetitive, h2.c.mode)
}

// A queue that stands under the hold Copa's test asked for, with no
// overflow of the buffer and no regular slowdown that found the same, is
// not enough: beside delay-based flows on a link that keeps losing
// capacity, the queue they drain may stand through one hold. Nor does that
// hold's finding count as half of later evidence.
func TestSuspicionNeedsCorroboration(t *testing.T) {
	h := newHarness(mustNew(New(Config{MSS: mss})))
	h.toAvoidance()
	h.ackN(1000, 50*time.Millisecond, 100*time.Millisecond)
	verdicts := 0
	for range 15000 { // 15 s: Copa's test fires, its hold finds the queue staying
		was := h.c.probe.test.active
		h.sawtooth(time.Millisecond, 40*time.Millisecond, 80*time.Millisecond, time.Second, false)
		if was && !h.c.probe.test.active {
			verdicts++
		}
		require.NotEqual(t, modeCompetitive, h.c.mode, "no overflow, no second hold")
	}
	require.Positive(t, verdicts)
	require.False(t, h.c.comp.stayed, "the suspicion's finding is not carried over")
}

// A queue that grows back under the hold is a competitor's growing window,
// even when the hold's lowest sample is near the base.
func TestDrainTestRiseCountsAsStayed(t *testing.T) {
	h := competingHarness(t)
	for range 3 {
		// Run to the next slowdown, then let the queue fall to nothing
		// and grow again during the hold (a filler's cut and regrowth).
		for h.c.mode != modeProbe {
			h.standingQueue(time.Millisecond, 40*time.Millisecond, 80*time.Millisecond, time.Second)
		}
		start := h.now
		for h.c.mode == modeProbe || h.c.probe.test.active {
			q := time.Duration(float64(h.now.Sub(start)) * 0.3) // 0 → 30 % of the elapsed time
			h.ack(50*time.Millisecond+q, 2*(50*time.Millisecond+q))
		}
		require.Equal(t, modeCompetitive, h.c.mode, "the queue grew back under the hold")
	}
}

func TestNoCompetitiveModeWhenQueueEmpties(t *testing.T) {
	h := newHarness(mustNew(New(Config{MSS: mss})))
	h.toAvoidance()
	// A queue of the flow's own: rises to 30 ms and drains to nothing
	// every 200 ms (well within 5 RTTs).
	h.sawtooth(10*time.Second, 0, 30*time.Millisecond, 200*time.Millisecond, false)
	require.NotEqual(t, modeCompetitive, h.c.mode)
	require.False(t, h.c.comp.suspect)
}

func TestNoCompetitiveModeOnRouteChange(t *testing.T) {
	// +100 ms each way: the delay steps up and stays flat. Copa's test
	// alone calls that a queue that never empties.
	h := newHarness(mustNew(New(Config{MSS: mss})))
	h.toAvoidance()
	h.ackN(2000, 50*time.Millisecond, 100*time.Millisecond)
	h.ackN(10000, 150*time.Millisecond, 300*time.Millisecond)
	require.NotEqual(t, modeCompetitive, h.c.mode, "a flat step is a longer path, not a competitor")
}

// Alone on a link whose capacity changes — a step down, a flap, an
// LTE-like rate re-drawn every few hundred milliseconds — the queue a drop
// leaves behind does not empty for many round trips and does not follow
// the window, which is what Copa's test sees beside a buffer filler. The
// drain test must refute it every time: not a second in competitive mode,
// and the queue held far below the buffer.
func TestNoCompetitiveModeAloneOnCapacityChanges(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rate  func(clock.Mono) float64
		limit int
	}{
		{"step 4 to 1 Mbit/s", steps([]time.Duration{0, 15 * time.Second}, []float64{4e6, 1e6}), 60},
		{"flap 4 and 1 Mbit/s", steps([]time.Duration{0, 10 * time.Second, 20 * time.Second, 30 * time.Second, 40 * time.Second, 50 * time.Second},
			[]float64{4e6, 1e6, 4e6, 1e6, 4e6, 1e6}), 60},
		{"LTE-like 1 to 20 Mbit/s, walk 13", lteLike(1e6, 20e6, lteFoolingSeeds[0]), 400},
		{"LTE-like 1 to 20 Mbit/s, walk 75", lteLike(1e6, 20e6, lteFoolingSeeds[1]), 400},
	} {
		// Without the fair-share term too: there Copa's test fires on
		// the two walks, and the drain test must refute it.
		for _, tuning := range []Tuning{{}, {DisableFairShare: true}} {
			t.Run(fmt.Sprintf("%s, DisableFairShare=%v", tc.name, tuning.DisableFairShare), func(t *testing.T) {
				c := mustNew(New(Config{MSS: mss, Tuning: tuning}))
				l := newTestLink(20*time.Millisecond, tc.limit, tc.rate)
				p95 := l.run(c, 60*time.Second)
				require.Zero(t, l.modeTime[ModeCompetitive], "alone: never competitive")
				require.Positive(t, l.modeTime[ModeProbe], "the slowdowns ran")
				// A CUBIC flow on the same link fills the buffer.
				cubic := newTestLink(20*time.Millisecond, tc.limit, tc.rate)
				p95Cubic := cubic.run(cc.NewCubic(cc.CubicConfig{MSS: mss}), 60*time.Second)
				require.Less(t, p95, p95Cubic/2, "p95 queueing %v against CUBIC's %v", p95, p95Cubic)
			})
		}
	}
}

// The same paths with the drain test's verdict ignored (Copa's test
// switching on its own) do switch, without the fair-share term: the test
// above can fail.
func TestCapacityChangesFoolCopaAlone(t *testing.T) {
	for _, seed := range lteFoolingSeeds {
		c := mustNew(New(Config{MSS: mss, Tuning: Tuning{DisableFairShare: true}}))
		c.comp.trustCopa = true
		l := newTestLink(20*time.Millisecond, 400, lteLike(1e6, 20e6, seed))
		l.run(c, 60*time.Second)
		require.Greater(t, l.modeTime[ModeCompetitive], 5*time.Second, "rate walk %d", seed)
	}
}

// With the fair-share term Copa's test does not even fire alone on those
// walks: the term's extra is queue the flow keeps on purpose, and counts
// as nearly empty (observeEmptiness); it is zero while Copa's test counts
// (fairshare.go). None of the first 300 walks switches on Copa's test
// alone, against 2 of 200 without the term.
func TestFairShareKeepsCopaQuietAlone(t *testing.T) {
	for _, seed := range lteFoolingSeeds {
		c := mustNew(New(Config{MSS: mss}))
		c.comp.trustCopa = true
		l := newTestLink(20*time.Millisecond, 400, lteLike(1e6, 20e6, seed))
		l.run(c, 60*time.Second)
		require.Zero(t, l.modeTime[ModeCompetitive], "rate walk %d", seed)
	}
}

// lteFoolingSeeds are rate walks on which Copa's test alone, without the
// fair-share term, switches to competitive mode for more than 5 s of 60: 2
// of the first 200 do. (15 of the first 30 did while samples in congestion
// avoidance raised OWDv_max, Tuning.AvoidanceRaisesMax: μ, and the queue
// the flow kept, were higher.)
var lteFoolingSeeds = []uint64{13, 75}

func TestStarvedLossesSwitch(t *testing.T) {
	h := newHarness(mustNew(New(noProbe())))
	h.toAvoidance()
	h.ackN(200, 150*time.Millisecond, 300*time.Millisecond) // deep queue: window to the floor
	require.InDelta(t, 2.0, h.cwndPackets(), 0.01)
	h.lose()
	require.NotEqual(t, modeCompetitive, h.c.mode, "one loss is not enough")
	h.ackN(50, 150*time.Millisecond, 300*time.Millisecond) // ends recovery
	h.lose()
	h.ack(150*time.Millisecond, 300*time.Millisecond) // a loss counts at the next ACK
	require.Equal(t, modeCompetitive, h.c.mode, "a second congestive loss at the floor within 30 s")
}

// Losses a retransmission timeout declares do not count: in a cellular
// fade the timeouts come one after another at the floor the previous one
// set, and the buffer is not full, the link is silent.
func TestTimeoutLossesDoNotStarve(t *testing.T) {
	h := newHarness(mustNew(New(noProbe())))
	h.toAvoidance()
	h.ackN(200, 150*time.Millisecond, 300*time.Millisecond) // deep queue: window to the floor
	for range 5 {
		h.lose()
		h.c.OnRetransmissionTimeout(h.now)
		h.now = h.now.Add(time.Second)
	}
	h.ack(150*time.Millisecond, 300*time.Millisecond)
	require.NotEqual(t, modeCompetitive, h.c.mode)
	require.Zero(t, h.c.comp.nStarved)
}

func TestStarvedLossesExpire(t *testing.T) {
	h := newHarness(mustNew(New(noProbe())))
	h.toAvoidance()
	h.ackN(200, 150*time.Millisecond, 300*time.Millisecond)
	h.lose()
	h.step = 100 * time.Millisecond
	h.ackN(400, 150*time.Millisecond, 300*time.Millisecond) // 40 s later
	h.step = time.Millisecond
	h.lose()
	require.NotEqual(t, modeCompetitive, h.c.mode, "losses 40 s apart are not a buffer filler")
}

func TestRandomLossesDoNotSwitch(t *testing.T) {
	h := newHarness(mustNew(New(noProbe())))
	h.toAvoidance()
	for range 20 {
		h.ackN(100, 50*time.Millisecond, 100*time.Millisecond) // no queue
		h.lose()
	}
	require.NotEqual(t, modeCompetitive, h.c.mode)
}

// A slowdown cut short by a loss gives no verdict: the hold did not last
// long enough to drain anything, and the packets sent after it are not
// the hold's.
func TestShortHoldGivesNoVerdict(t *testing.T) { shortCopaHold(t) }

// shortCopaHold runs a slowdown Copa's test asked for into a loss that
// cuts it short, checks that it gave no verdict, and returns the harness
// with Copa's test quiet.
func shortCopaHold(t *testing.T) *harness {
	h := newHarness(mustNew(New(Config{MSS: mss})))
	h.toAvoidance()
	h.ackN(1000, 50*time.Millisecond, 100*time.Millisecond)
	for h.c.mode != modeProbe {
		h.sawtooth(time.Millisecond, 40*time.Millisecond, 80*time.Millisecond, time.Second, false)
	}
	require.True(t, h.c.probe.test.suspect, "Copa's test asked for this slowdown")
	h.ackN(50, 110*time.Millisecond, 220*time.Millisecond) // part of the hold: the queue stands
	require.Equal(t, modeProbe, h.c.mode)
	h.lose()
	require.NotEqual(t, modeProbe, h.c.mode, "the loss ended the hold")
	require.True(t, h.c.probe.test.short)
	h.standingQueue(500*time.Millisecond, 60*time.Millisecond, 61*time.Millisecond, time.Second)
	require.NotEqual(t, modeCompetitive, h.c.mode, "a queue that stays after the hold is no verdict")
	require.True(t, h.c.copaQuiet(h.now), "and Copa's test waits for the next regular slowdown")
	return h
}

// Copa's test stays quiet after a verdict until the next regular slowdown,
// but no longer than one slowdown interval: beside a buffer filler whose
// troughs touch the base a latecomer measured, every trough postpones the
// regular slowdown (syncSlowdown), and a flow waiting for it would stay at
// its floor for good.
func TestCopaQuietEndsAfterOneInterval(t *testing.T) {
	h := shortCopaHold(t)
	until := h.c.comp.quietUntil
	require.GreaterOrEqual(t, until.Sub(h.now), h.c.cfg.Tuning.ProbeMinInterval-time.Second)
	// The regular slowdown keeps being postponed (as syncSlowdown does on
	// every sample at the base): only the quiet's own end lets Copa's test
	// ask again.
	asked := false
	for !asked && h.now.Before(until.Add(10*time.Second)) {
		h.c.probe.at = h.now.Add(time.Hour)
		h.sawtooth(100*time.Millisecond, 40*time.Millisecond, 80*time.Millisecond, time.Second, false)
		asked = h.c.mode == modeProbe && h.c.probe.test.suspect
		require.False(t, asked && h.now.Before(until), "Copa's test asked while quiet")
	}
	require.True(t, asked, "Copa's test asks again once the quiet is over")
}

// A Copa window that spans a delivery gap (an outage) closes only on
// copaMinSamples samples: the first ACKs after the gap carry the backlog
// the outage built, and alone they would make a window whose queue did
// not empty. The samples sent after the link came back decide.
func TestCopaWindowSpanningGapNeedsSamples(t *testing.T) {
	ms := time.Millisecond
	srtt, floor := 40*ms, 10*ms
	var e emptiness
	now := clock.Mono(0)
	sample := func(q time.Duration) bool {
		closed := e.observe(now, q, floor, srtt)
		now = now.Add(10 * ms)
		return closed
	}
	for range 25 { // windows that empty: 5 ms of queue
		sample(5 * ms)
	}
	for now.Sub(e.start) < 5*srtt {
		sample(5 * ms)
	}
	// The link slows before the outage: the sample that closes this
	// window starts the next on 60 ms.
	require.True(t, sample(60*ms))
	require.Zero(t, e.full)
	now = now.Add(5 * time.Second) // the outage: no ACK
	require.False(t, sample(400*ms), "one backlog sample closed the window")
	require.False(t, sample(380*ms), "two backlog samples closed the window")
	require.Zero(t, e.full)
	for !sample(5 * ms) { // sent after the link came back: the queue empties
	}
	require.Zero(t, e.full, "the window that spans the outage saw the queue empty")
}

// A queue that falls under the hold is someone draining it — slow
// start's own queue behind the first slowdown, or delay-based flows after
// a capacity drop — and no evidence of a buffer filler, however high it
// stood; the same queue standing still is.
func TestFallingQueueIsNoEvidence(t *testing.T) {
	for _, tc := range []struct {
		name    string
		falling bool
	}{{"falling", true}, {"standing", false}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(mustNew(New(Config{MSS: mss})))
			h.toAvoidance()
			for h.c.mode != modeProbe {
				h.ack(60*time.Millisecond, 120*time.Millisecond)
			}
			start := h.now
			for h.c.mode == modeProbe || h.c.probe.test.active {
				q := 90 * time.Millisecond // 40 ms over the base under the hold
				if tc.falling {
					q -= h.now.Sub(start) / 8 // draining
				}
				h.ack(q, 2*q)
			}
			require.Equal(t, !tc.falling, h.c.comp.stayed)
		})
	}
}

// Within competeRecall of a return, Copa's test alone switches back, with
// no slowdown first: the drain test found the filler before.
func TestRecallNeedsNoSlowdown(t *testing.T) {
	h := competingHarness(t)
	h.standingQueue(25*time.Second, 40*time.Millisecond, 80*time.Millisecond, time.Second)
	for h.c.comp.cubic != nil {
		h.ownQueue(time.Millisecond)
	}
	for range 8 {
		h.ack(50*time.Millisecond, 100*time.Millisecond) // slow start back
	}
	h.ackN(4, 110*time.Millisecond, 220*time.Millisecond) // and out of it
	require.Equal(t, modeAvoidance, h.c.mode)
	for h.c.mode != modeCompetitive {
		h.standingQueue(time.Millisecond, 40*time.Millisecond, 80*time.Millisecond, time.Second)
		require.NotEqual(t, modeProbe, h.c.mode, "no drain test before the recall")
		require.True(t, h.c.recentlyLeft(h.now))
	}
}

func TestHoldDrainSwitchesBack(t *testing.T) {
	h := competingHarness(t)

	// The competitor leaves: the queue is the flow's own CUBIC queue, which
	// a slowdown drains. Run until the next slowdown has come and gone.
	deadline := h.now.Add(60 * time.Second)
	for h.c.comp.cubic != nil && h.now.Before(deadline) {
		h.ownQueue(time.Millisecond)
	}
	require.Nil(t, h.c.comp.cubic, "the hold drained the queue: back to the delay target")
	require.Equal(t, modeSlowStart, h.c.mode, "through slow start")
}

func TestHoldWithoutDrainStaysCompetitive(t *testing.T) {
	h := competingHarness(t)
	holds := 0
	was := false
	for range 60000 { // 60 s: at least two slowdowns
		h.standingQueue(time.Millisecond, 40*time.Millisecond, 80*time.Millisecond, time.Second)
		if h.c.mode == modeProbe && !was {
			holds++
		}
		was = h.c.mode == modeProbe
	}
	require.GreaterOrEqual(t, holds, 2)
	require.Equal(t, modeCompetitive, h.c.mode, "the buffer filler kept the queue through the holds")
}

func TestWrongReturnResumesCubicWindow(t *testing.T) {
	h := competingHarness(t)
	// Let CUBIC's window grow through a slowdown that finds the filler
	// still there, then a hold drains the queue (as one CUBIC flow's queue
	// does after its cut): the flow returns to the delay target.
	h.standingQueue(25*time.Second, 40*time.Millisecond, 80*time.Millisecond, time.Second)
	for h.c.comp.cubic != nil {
		h.ownQueue(time.Millisecond)
	}
	left := h.c.comp.leftWindow
	require.Greater(t, left, float64(10*mss))
	// The competitor was there all along: the queue is back at once.
	start := h.now
	for h.c.mode != modeCompetitive && h.now.Sub(start) < competeRecall {
		h.standingQueue(time.Millisecond, 40*time.Millisecond, 80*time.Millisecond, time.Second)
	}
	require.Equal(t, modeCompetitive, h.c.mode, "back within the recall span")
	// CUBIC's β is 0.7 (RFC 9438 §4.6): it resumes there, not at the floor.
	require.InDelta(t, 0.7*left, float64(h.c.comp.cubic.Window()), 0.1*left,
		"resumes at CUBIC's β of the window it had, not from the floor")
}

// A slowdown's verdict comes with the first ACK of a packet sent after
// its hold, a round trip after the hold ends. Copa's test, whose quiet
// ends one slowdown interval after its last verdict, may close a window
// on the very ACK that ends a regular hold (fillers draw 2052: 32.93 s);
// it must not start its own slowdown while a verdict is pending, which
// would restart the drain test and drop the regular one's finding (that
// the queue stayed: half the evidence).
func TestPendingVerdictNotOverwritten(t *testing.T) {
	h := newHarness(mustNew(New(Config{MSS: mss})))
	h.toAvoidance()
	h.ackN(1000, 50*time.Millisecond, 100*time.Millisecond)
	h.c.probe.at = h.now.Add(time.Hour) // no regular slowdown in this test
	// A drain test whose verdict is still to come.
	h.c.probe.test = drainTest{active: true, from: h.now, to: h.now.Add(time.Hour), base: h.c.owdA.Min(), minQ: -1}
	for range 100 { // 10 s of a standing queue that moves: Copa's test would ask
		h.sawtooth(100*time.Millisecond, 40*time.Millisecond, 80*time.Millisecond, time.Second, false)
		require.NotEqual(t, modeProbe, h.c.mode, "Copa's test started a slowdown over a pending verdict")
	}
	require.True(t, h.c.probe.test.active)
	require.Positive(t, h.c.comp.empty.full, "Copa's windows did not empty")
}
