package owd

import (
	"math"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// Competitive mode (our addition; Tuning.DisableCompetitiveMode).
//
// A delay-based flow beside a loss-based one in a drop-tail buffer backs
// off from the queue the other flow builds on purpose and is left with
// almost nothing (Vegas against Reno). Copa's answer is a mode switch
// (Arun and Balakrishnan, "Copa: Practical Delay-Based Congestion Control
// for the Internet", NSDI 2018, §2.2): a flow among delay-based flows sees
// the queue nearly empty at least once every five RTTs; when it does not,
// a buffer filler is present and the flow turns competitive. Its critique
// (Copa+, IEEE/ACM ToN 2023) is false switches, and the worst false switch
// is the common one on the links IoT devices use: alone on a link whose
// capacity drops, the queue the drop leaves behind does not empty for many
// round trips and does not follow the window either (the capacity, not
// the window, moved it), so every passive sign of a competitor is there,
// and a flow that turns competitive on them fills the buffer it was built
// to keep short.
//
// So passive signs only ask; an experiment decides. Entering competitive
// mode (the window of competitiveWindow: CUBIC's and BBR's, both started as
// new flows from the current window) takes one of:
//
//   - Copa's test (the smallest one-way queueing delay of a window of
//     5·SRTT stayed above max(noise floor, two packet times, a tenth of
//     the largest recent queueing delay) in competeWindows windows in a
//     row, and the queue moved meanwhile, which a longer path after a
//     route change does not) *and* the drain test (drain.go) of a slowdown
//     finding that the queue stayed when the flow held its window at the
//     floor. Copa's test starts that slowdown at once; or a regular
//     slowdown's finding within competeEvidenceSpan before Copa's test
//     fires counts too. A refuted test keeps Copa's test quiet until the
//     next regular slowdown, or one slowdown interval (quietCopa).
//   - two congestive losses (OWDv > μ when they happen) within
//     competeLossSpan while the window sat within a packet of the floor
//     ("starved losses"). Physics alone is evidence here: a delay-based
//     flow whose window is two packets cannot overflow a buffer, so
//     someone else keeps it full. Random losses do not count: they come
//     with a short queue.
//
// The way back is the same experiment: every slowdown in competitive mode
// is a drain test, and a queue that drained under it returns the flow to
// its delay target through slow start (the delay rule would take hundreds
// of round trips to drain a full buffer). A wrong return costs little:
// within competeRecall, Copa's test alone switches back, to 0.7 of the
// CUBIC window the flow had (the drain test found the filler once; one
// CUBIC flow's queue does drain after its cut).
//
// In competitive mode the delay analyzers keep running, so the signal is
// warm on the way back.
type compete struct {
	// cubic and bbr run side by side in competitive mode (nil outside it);
	// the window is the larger of theirs (competitiveWindow). bbr is nil
	// with Tuning.DisableCompetitiveBBR.
	cubic *cc.Cubic
	bbr   *cc.BBR
	base  time.Duration // base delay the episode's drain tests measure against
	// prevBase is the last episode's base, kept at its end (baseAt).
	prevBase time.Duration
	baseAt   clock.Mono

	empty emptiness
	// suspect: Copa's test fired; the slowdown it started decides.
	suspect bool
	// quiet: a slowdown Copa's test started has given its verdict; the
	// test waits for the next regular slowdown, or until quietUntil
	// (quietCopa).
	quiet      bool
	quietUntil clock.Mono
	// stayedAt is when a regular slowdown last found the queue staying
	// (drain.go); stayed says there was one.
	stayedAt clock.Mono
	stayed   bool
	// trustCopa switches on Copa's test alone, without the drain test:
	// only tests set it, to show what the drain test prevents.
	trustCopa bool

	// Starved losses; pendingStarved: one was noted and counts at the
	// next ACK unless a retransmission timeout comes first.
	lastStarved    clock.Mono
	nStarved       int
	pendingStarved bool
	// The last congestive loss in congestion avoidance that no timeout
	// declared (an overflow of the buffer), as for starved losses.
	lastOverflow    clock.Mono
	overflowed      bool
	pendingOverflow bool

	// The last return to the delay target: when, and CUBIC's window at
	// the start of the hold that decided it.
	leftWindow float64
	leftAt     clock.Mono
	left       bool
}

const (
	// competeRecall is how long after a return to the delay target a
	// switch back counts as undoing a wrong return; cubicRecallFactor is
	// CUBIC's β (RFC 9438 §4.6), the share of its window it resumes with.
	competeRecall     = 10 * time.Second
	cubicRecallFactor = 0.7
	// competeWindows is how many 5·SRTT windows in a row without a nearly
	// empty queue ask for a drain test.
	competeWindows = 2
	// competeEvidenceSpan is how long a regular slowdown's finding that
	// the queue stayed counts as the drain test's half of the evidence.
	competeEvidenceSpan = 30 * time.Second
	// competeBaseMemory is how long an episode's base delay is carried
	// into the next one: long enough for recalls, short enough that a
	// longer path (a route change) is soon measured against its own base.
	competeBaseMemory = 2 * time.Minute
	// competeLosses starved losses within competeLossSpan switch too.
	competeLosses   = 2
	competeLossSpan = 30 * time.Second
	// competeFloorSlack: "at the floor" is within this many packets of it.
	competeFloorSlack = 1
	// copaMinSamples is the fewest samples a Copa window closes on: two
	// round trips of a window at its floor. A flow at its floor still
	// gets about ten in 5·SRTT; a window that spans a delivery gap may
	// get one or two, all from the backlog (see emptiness).
	copaMinSamples = 2 * cc.MinWindowPackets
)

// recentlyLeft reports whether competitive mode ended within competeRecall.
func (c *Controller) recentlyLeft(now clock.Mono) bool {
	return c.comp.left && now.Sub(c.comp.leftAt) < competeRecall
}

// emptiness is Copa's "does the queue nearly empty once every 5 RTTs"
// test on one-way queueing delay.
//
// A window closes after 5·SRTT and at least copaMinSamples samples. The
// count matters after a delivery gap (a cellular outage): the first ACKs
// after it close a window that began before it, and alone they carry the
// backlog the outage built — a queue that did not empty, of the flow's own
// packets. On ATT-LTE-driving up under CoDel such a window of two samples
// started a push test sized from the link's peak rate, and the queue grew
// many times over (bench/results/owd-round6.md, "1. A Copa window closes
// only on four samples"). The samples that follow, sent after the link
// came back, show whether the queue empties.
type emptiness struct {
	start  clock.Mono
	n      int // samples in the current window
	minQ   time.Duration
	winMax time.Duration // largest queueing delay of the window
	maxQ   time.Duration // largest queueing delay, decayed by 10 % a window
	full   int           // windows in a row in which it did not
	// lo and hi bound the queueing delay over those windows: a standing
	// queue held by a buffer filler moves (the filler grows and cuts),
	// a longer path after a route change does not.
	lo, hi  time.Duration
	started bool
}

// observe folds one queueing-delay sample q; floor is the noise floor.
// It reports whether a window just closed.
func (e *emptiness) observe(now clock.Mono, q, floor, srtt time.Duration) bool {
	if !e.started {
		e.started, e.start, e.minQ = true, now, q
	}
	e.minQ = min(e.minQ, q)
	e.winMax = max(e.winMax, q)
	e.maxQ = max(e.maxQ, q)
	e.n++
	if now.Sub(e.start) < 5*srtt || e.n < copaMinSamples {
		return false
	}
	if e.minQ <= max(floor, e.maxQ/10) {
		e.full = 0
	} else {
		if e.full == 0 {
			e.lo, e.hi = e.minQ, e.winMax
		}
		e.lo, e.hi = min(e.lo, e.minQ), max(e.hi, e.winMax)
		e.full++
	}
	e.start, e.minQ, e.winMax, e.n = now, q, q, 1
	e.maxQ = e.maxQ * 9 / 10
	return true
}

// queueMoved reports whether the queueing delay moved over the windows in
// which Copa's test found it standing: a buffer filler's queue does (it
// grows and cuts), a longer path's does not. Copa's test needs it to ask
// for a drain test, and the push test to call a flat queue a longer path.
func (c *Controller) queueMoved() bool {
	e := &c.comp.empty
	return e.hi-e.lo > 2*c.owdA.cfg.MuFloorDelay
}

// observeEmptiness runs Copa's test on the OWD sample of ack in
// congestion avoidance, from the end of the first slowdown on (slow
// start's own overshoot is gone by then; see probe.go). When the queue
// did not nearly empty for competeWindows windows, and moved meanwhile (a
// longer path after a route change does not), it asks for a drain test:
// a slowdown now, whose verdict decides (drain.go).
func (c *Controller) observeEmptiness(now clock.Mono, ack cc.AckSample) {
	armed := c.probe.done || c.cfg.Tuning.DisableBaseDelayProbe && c.ssExited
	if c.cfg.Tuning.DisableCompetitiveMode || !armed || !c.rtt.HasSample() || !c.trustedOWD(ack) {
		return
	}
	a := &c.owdA
	// "Nearly empty" allows for the noise floor and for two packets of the
	// bottleneck (a queue that exists in whole packets — 5.8 ms each at
	// 1.5 Mbit/s — with another flow's packets interleaved rarely falls
	// below one or two).
	// The fair-share term's extra is queue the flow keeps on purpose too.
	t := c.targets(now)
	floor := max(t.noise+t.fair, 2*c.disp.packetTime())
	if !c.comp.empty.observe(now, max(ack.OWD-a.Min(), 0), floor, c.rtt.Smoothed()) {
		return
	}
	e := &c.comp.empty
	// Soon after a return to the delay target one window of evidence is
	// enough: the return was most likely wrong (see enterCompetitive).
	need := competeWindows
	if c.recentlyLeft(now) {
		need = 1
	}
	if c.mode != modeAvoidance {
		return
	}
	if e.full >= pushWindows && c.pushAllowed(now) && c.atFloor(now) && c.startPush(now, e.lo) {
		// At the floor the flow already holds its window: whether the
		// link is busy decides, moving queue or flat (push.go).
		return
	}
	if e.full < need || !c.queueMoved() {
		return
	}
	if c.recentlyLeft(now) {
		// Back within competeRecall of a return to the delay target:
		// the drain test found a buffer filler before, and the return
		// was most likely wrong (the filler's queue drained under the
		// hold, as one CUBIC flow's does after its cut).
		c.enterCompetitive(now, reasonRecall)
		return
	}
	if c.comp.trustCopa || c.comp.stayed && now.Sub(c.comp.stayedAt) < competeEvidenceSpan {
		// The drain test already found the queue staying under a
		// slowdown: with Copa's test that is both halves of the evidence.
		// (trustCopa, tests only, counts as the other half.)
		c.enterCompetitive(now, reasonCopaStayed)
		return
	}
	if !c.comp.suspect && !c.copaQuiet(now) && !c.probe.test.active {
		// (Not while the last slowdown's verdict is pending: a new
		// slowdown would restart the drain test and drop its finding.
		// The verdict comes a round trip after the hold; the next window
		// asks again.)
		c.comp.suspect = true
		c.startProbe(now, reasonCopaAsks)
	}
}

// quietCopa keeps Copa's test from asking for another slowdown until the
// next regular one: on a path where it fires on the flow's own queue
// (short, slow paths) it would otherwise ask every few round trips. But
// for at most one slowdown interval: a regular slowdown is postponed by
// every sample at the base (syncSlowdown), and when the base holds a
// buffer filler's trough (a latecomer's) that is every sawtooth, so the
// regular slowdown never comes, and a flow whose test was refuted or
// unconfirmed once would stay at its floor beside the filler for good.
func (c *Controller) quietCopa(now clock.Mono) {
	c.comp.suspect, c.comp.quiet = false, true
	c.comp.quietUntil = now.Add(max(c.probe.gap, c.cfg.Tuning.ProbeMinInterval))
}

// copaQuiet reports whether Copa's test may not ask now (quietCopa).
func (c *Controller) copaQuiet(now clock.Mono) bool {
	return c.comp.quiet && now.Before(c.comp.quietUntil)
}

// onCongestiveLoss notes a loss that may be a starved one (see the type
// doc): in congestion avoidance only, where the delay rule, not a
// retransmission timeout, put the window at its floor. It counts at the
// next ACK (countStarved), unless a timeout comes first: on a cellular
// link in a fade the timeouts come one after another, each declaring the
// packet it gave up on lost, at the floor the previous one set, and those
// losses say nothing about another flow.
//
// Any congestive loss in congestion avoidance that no timeout declared is
// also noted as an overflow (lastOverflow): the buffer was full. The drain
// test takes it as corroboration (drain.go).
func (c *Controller) onCongestiveLoss(now clock.Mono) {
	if c.cfg.Tuning.DisableCompetitiveMode || c.mode != modeAvoidance {
		return
	}
	c.comp.pendingOverflow = true
	// A loss during the pulse test (elastic.go) is no starved loss: the
	// pulse, not the window at the floor, overflowed the buffer.
	if c.starvedWindow() && !c.elastic.active {
		c.comp.pendingStarved = true
	}
}

// starvedWindow reports whether the window is within competeFloorSlack
// packets of the 2-packet minimum, where a loss is a starved one: a window
// that small cannot overflow a buffer (freeLoss keeps the queue as the
// judge of losses there for the same reason).
func (c *Controller) starvedWindow() bool {
	return c.cwnd <= (cc.MinWindowPackets+competeFloorSlack)*c.mss
}

// countStarved counts a starved loss (and an overflow) noted before this
// ACK.
func (c *Controller) countStarved(now clock.Mono) {
	if c.comp.pendingOverflow {
		c.comp.pendingOverflow = false
		c.comp.lastOverflow, c.comp.overflowed = now, true
	}
	if !c.comp.pendingStarved {
		return
	}
	c.comp.pendingStarved = false
	if c.mode == modeCompetitive {
		return
	}
	if c.comp.nStarved > 0 && now.Sub(c.comp.lastStarved) > competeLossSpan {
		c.comp.nStarved = 0
	}
	c.comp.nStarved++
	c.comp.lastStarved = now
	if c.comp.nStarved >= competeLosses {
		c.enterCompetitive(now, reasonStarved)
	}
}

// enterCompetitive switches to CUBIC, started as a new flow from the
// current window. During a slowdown the switch takes effect when the hold
// ends (setMode), and CUBIC starts from the window the hold will restore.
func (c *Controller) enterCompetitive(now clock.Mono, why reason) {
	m := &c.comp
	m.nStarved = 0
	m.empty.full = 0
	m.suspect = false
	m.stayed = false
	// The drain tests of this episode measure against the lowest base the
	// flow knows: the windowed minimum climbs to the competitor's standing
	// queue once the true base has left the history, and a recall comes
	// soon after an episode whose base was still good.
	m.base = c.active().Min()
	if m.baseAt != 0 && now.Sub(m.baseAt) < competeBaseMemory {
		m.base = min(m.base, m.prevBase)
	}
	w := c.cwnd
	if c.mode == modeProbe {
		w = c.probe.saved
	}
	c.setMode(now, modeCompetitive, why)
	if c.recentlyLeft(now) {
		// Back within competeRecall of a return to the delay target: that
		// return was wrong (the competitor's queue had drained under the
		// hold, as one CUBIC flow's does after its cut). Resume near the
		// window CUBIC had then, less one CUBIC decrease, instead of
		// starting again from the floor.
		w = max(w, cubicRecallFactor*m.leftWindow)
	}
	m.cubic = cc.NewCubic(cc.CubicConfig{MSS: c.cfg.MSS, InitialWindow: cc.ByteCount(w)})
	if c.largestSent != cc.InvalidPacketNumber {
		m.cubic.OnPacketSent(now, c.largestSent, 0, 0)
	}
	if !c.cfg.Tuning.DisableCompetitiveBBR {
		m.bbr = cc.NewBBR(cc.BBRConfig{MSS: c.cfg.MSS, InitialWindow: cc.ByteCount(w)})
	}
}

// competitiveWindow is the window in competitive mode: the larger of
// CUBIC's and BBR's, each run as if it were the flow.
//
// Neither alone holds a share beside every buffer filler. CUBIC, loss-
// based, keeps its share beside other loss-based flows in a deep buffer,
// but beside BBR, whose rate does not answer losses, in a buffer of about
// a BDP or less it loses most of the link: the losses BBR causes cut
// CUBIC's window and not BBR's ("Modeling BBR's Interactions with
// Loss-Based Congestion Control", Ware et al., IMC 2019, §5). BBR's window
// is capped at a multiple of its bandwidth-delay estimate, so in a buffer
// many BDPs deep a CUBIC flow that fills it takes most of the link from
// BBR (same paper, §4). The larger of the two windows is as strong as the
// stronger model on the path at hand, and no stronger: in the judge's
// fillers draws its share of the link is between CUBIC's and BBR's in the
// same slot (bench/results/owd-round6.md). Pacing follows the same rule.
func (c *Controller) competitiveWindow() cc.ByteCount {
	m := &c.comp
	if m.bbr == nil {
		return m.cubic.Window()
	}
	return max(m.cubic.Window(), m.bbr.Window())
}

// competitivePacingRate is the pacing rate in competitive mode: the larger
// of CUBIC's and BBR's (0 while neither has an RTT sample).
func (c *Controller) competitivePacingRate() cc.Bandwidth {
	m := &c.comp
	if m.bbr == nil {
		return m.cubic.PacingRate()
	}
	return max(m.cubic.PacingRate(), m.bbr.PacingRate())
}

// leaveCompetitive returns to the delay target through slow start;
// compWindow is the competitive window when the hold that decided it began.
func (c *Controller) leaveCompetitive(now clock.Mono, compWindow float64) {
	m := &c.comp
	m.leftAt, m.leftWindow, m.left = now, compWindow, true
	m.prevBase, m.baseAt = m.base, now
	m.cubic, m.bbr = nil, nil
	m.empty.full = 0
	c.cwnd = cc.MinWindowPackets * c.mss
	c.ssthresh = math.Inf(1)
	c.ssMaxOWDv = 0
	c.inRecovery = false
	if c.mode == modeProbe {
		c.probe.saved = c.cwnd // the hold ends at the floor, in slow start
	}
	c.setMode(now, modeSlowStart, reasonQueueDrained)
}
