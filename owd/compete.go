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
// almost nothing: Vegas against Reno, and here owd beside three CUBIC flows
// with 4 % of the link. Copa's answer is a mode switch (Arun and
// Balakrishnan, "Copa: Practical Delay-Based Congestion Control for the
// Internet", NSDI 2018, §2.2): a flow among delay-based flows sees the
// queue nearly empty at least once every five RTTs; when it does not, a
// buffer filler is present and the flow turns competitive. Its critique
// (Copa+, IEEE/ACM ToN 2023) is false switches, by noise or by a queue
// that is the flow's own, which fill buffers where nobody competes.
//
// Two signals switch the flow to CUBIC (RFC 9438, the cc package's,
// started as a new CUBIC flow from the current window):
//
//   - the queue did not nearly empty (Copa's test, on one-way queueing
//     delay: the smallest sample of a window of 5·SRTT stayed above
//     max(NoiseFloor, a tenth of the largest recent queueing delay)) in
//     competeWindows windows in a row. A delay-based flow empties its own
//     queue far more often: its decrease is multiplicative per round trip,
//     and its slowdowns drain it to the floor;
//   - two congestive losses (OWDv > μ when they happen) within
//     competeLossSpan while the window sat within a packet of the floor
//     ("starved losses"). It catches the latecomer, who joined when the
//     buffer was already full and took the full buffer for its base delay,
//     so never sees the queue fail to empty; a delay-based flow at its
//     floor loses packets only if someone else keeps the buffer full.
//     Random losses do not count: they come with a short queue.
//
// The way back is the test Nimbus (Goyal et al., "Elasticity Detection",
// SIGCOMM 2022) makes with its pulses, here with the base-delay slowdown
// the controller runs anyway (probe.go): for ProbeHoldRTTs·SRTT the window
// sits at the floor. If the flow is alone with its own CUBIC queue, the
// queue drains: the packets sent during the hold see the queueing delay
// fall by more than twice the noise floor and to under half of what it
// was. If buffer fillers are still there, they take the room and the queue
// stays. A drained queue returns the flow to its delay target through slow
// start (the delay rule would take hundreds of round trips to drain a full
// buffer). A wrong return costs little: the signals above switch back
// within a few windows.
//
// In competitive mode the delay analyzers keep running, so the signal is
// warm on the way back; their windowed minimum climbs to the competitor's
// standing queue once the true base leaves the history, so the hold's test
// measures against the base delay the flow had when it switched (or a
// lower one seen since).
type compete struct {
	on    bool
	cubic *cc.Cubic
	base  time.Duration // base delay for the hold's test

	// The hold's test: packets sent in [from, to).
	testing  bool
	from, to clock.Mono
	minQ     time.Duration
	qBefore  time.Duration
	samples  int

	// Starved losses.
	lastStarved clock.Mono
	nStarved    int

	empty emptiness

	// The last return to the delay target: when, and CUBIC's window at
	// the start of the hold that decided it.
	holdWindow, leftWindow float64
	leftAt                 clock.Mono
	left                   bool
}

const (
	// competeRecall is how long after a return to the delay target a
	// switch back counts as undoing a wrong return; cubicRecallFactor is
	// CUBIC's β (RFC 9438 §4.6), the share of its window it resumes with.
	competeRecall     = 10 * time.Second
	cubicRecallFactor = 0.7
	// competeWindows is how many 5·SRTT windows in a row without a nearly
	// empty queue switch to competitive mode.
	competeWindows = 2
	// competeLosses starved losses within competeLossSpan switch too.
	competeLosses   = 2
	competeLossSpan = 30 * time.Second
	// competeFloorSlack: "at the floor" is within this many packets of it.
	competeFloorSlack = 1
)

// recentlyLeft reports whether competitive mode ended within competeRecall.
func (c *Controller) recentlyLeft(now clock.Mono) bool {
	return c.comp.left && now.Sub(c.comp.leftAt) < competeRecall
}

// emptiness is Copa's "does the queue nearly empty once every 5 RTTs"
// test on one-way queueing delay.
type emptiness struct {
	start  clock.Mono
	minQ   time.Duration
	winMax time.Duration // largest queueing delay of the window
	maxQ   time.Duration // largest queueing delay, decayed by 10 % a window
	full   int           // windows in a row in which it did not
	// lo and hi bound the queueing delay over those windows: a standing
	// queue held by a buffer filler moves (the filler grows and cuts),
	// a longer path after a route change does not.
	lo, hi time.Duration
	// w0 and q0 are the window and the queue's low point in the first of
	// those windows; ignored is set when a later one found the window cut
	// by a quarter and the low point no lower.
	w0      float64
	q0      time.Duration
	ignored bool
	started bool
}

// observe folds one queueing-delay sample q; floor is the noise floor.
// It reports whether a window just closed.
func (e *emptiness) observe(now clock.Mono, q, floor, srtt time.Duration, cwnd float64) bool {
	if !e.started {
		e.started, e.start, e.minQ = true, now, q
	}
	e.minQ = min(e.minQ, q)
	e.winMax = max(e.winMax, q)
	e.maxQ = max(e.maxQ, q)
	if now.Sub(e.start) < 5*srtt {
		return false
	}
	if e.minQ <= max(floor, e.maxQ/10) {
		e.full = 0
	} else {
		if e.full == 0 {
			e.lo, e.hi = e.minQ, e.winMax
			e.w0, e.q0 = cwnd, e.minQ
		}
		e.lo, e.hi = min(e.lo, e.minQ), max(e.hi, e.winMax)
		// The flow cut its window by a quarter and the queue's low point
		// did not fall: the cut drained nothing, so the queue is not its.
		e.ignored = cwnd <= 0.75*e.w0 && e.minQ >= e.q0
		e.full++
	}
	e.start, e.minQ, e.winMax = now, q, q
	e.maxQ = e.maxQ * 9 / 10
	return true
}

// observeEmptiness runs Copa's test on an OWD sample in congestion
// avoidance, from the end of the first slowdown on (slow start's own
// overshoot is gone by then; see probe.go), and not during a slowdown,
// whose drain says nothing about others.
func (c *Controller) observeEmptiness(now clock.Mono, owd time.Duration) {
	armed := c.probeDone || c.cfg.Tuning.DisableBaseDelayProbe && c.ssExited
	if c.cfg.Tuning.DisableCompetitiveMode || !armed || c.probe.active || !c.rtt.HasSample() {
		return
	}
	a := &c.owdA
	// "Nearly empty" allows for noise the flow has learned (response.go),
	// for two packets of the bottleneck (a queue that exists in whole
	// packets — 5.8 ms each at 1.5 Mbit/s — with another flow's packets
	// interleaved rarely falls below one or two), and for the RFC 3550
	// term of NoiseFloor only up to responseCap: a competitor's queue
	// moving in packet-sized steps inflates that term to tens of
	// milliseconds, and the test would never fire.
	floor := max(a.cfg.MuFloorDelay, a.learned, 2*c.disp.packetTime(), min(a.jitterFloor(), responseCap))
	if !c.comp.empty.observe(now, max(owd-a.Min(), 0), floor, c.rtt.Smoothed(), c.cwnd) {
		return
	}
	e := &c.comp.empty
	// Whose queue is it? Someone else's if the flow sits at its floor and
	// it stays, if cutting the window did not lower it, or if it does not
	// follow the flow's window (response.go).
	// A queue that follows the window is the flow's own: on a short, slow
	// path the delay rule's own oscillation may never empty it.
	starved := c.cwnd <= (cc.MinWindowPackets+competeFloorSlack)*c.mss
	others := starved || e.ignored || c.resp.judged && c.resp.ignores
	// Soon after a return to the delay target one window of evidence is
	// enough: the return was most likely wrong (see enterCompetitive).
	need := competeWindows
	if c.recentlyLeft(now) {
		need = 1
	}
	if !c.comp.on && e.full >= need && e.hi-e.lo > 2*a.cfg.MuFloorDelay && others {
		c.enterCompetitive(now)
	}
}

// onCongestiveLoss counts starved losses (see the type doc).
func (c *Controller) onCongestiveLoss(now clock.Mono) {
	if c.cfg.Tuning.DisableCompetitiveMode || c.comp.on ||
		c.cwnd > (cc.MinWindowPackets+competeFloorSlack)*c.mss {
		return
	}
	if c.comp.nStarved > 0 && now.Sub(c.comp.lastStarved) > competeLossSpan {
		c.comp.nStarved = 0
	}
	c.comp.nStarved++
	c.comp.lastStarved = now
	if c.comp.nStarved >= competeLosses {
		c.enterCompetitive(now)
	}
}

// enterCompetitive switches to CUBIC, started as a new flow from the
// current window.
func (c *Controller) enterCompetitive(now clock.Mono) {
	m := &c.comp
	m.on = true
	m.nStarved = 0
	m.empty.full = 0
	m.base = c.active().Min()
	w := c.cwnd
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
}

// startHoldTest arms the way-back test for a slowdown [now, now+hold).
func (c *Controller) startHoldTest(now clock.Mono, hold time.Duration) {
	m := &c.comp
	if !m.on {
		return
	}
	a := c.active()
	m.base = a.Min()
	m.testing = true
	m.holdWindow = float64(m.cubic.Window())
	m.from, m.to = now, now.Add(hold)
	m.minQ, m.samples = -1, 0
	m.qBefore = max(a.Current()-m.base, 0)
}

// observeHoldTest folds one ACK into the hold's test and, once a packet
// sent after the hold is acknowledged (every packet of the hold that will
// be acknowledged has been), decides.
func (c *Controller) observeHoldTest(now clock.Mono, ack cc.AckSample) {
	m := &c.comp
	if !m.testing {
		return
	}
	if !ack.SentTime.Before(m.to) {
		m.testing = false
		th := 2 * c.active().NoiseFloor()
		if m.samples > 0 && m.qBefore-m.minQ > th && m.minQ < m.qBefore/2 {
			c.leaveCompetitive(now)
		}
		return
	}
	var d time.Duration
	switch {
	case c.signal == cc.SignalOWD && ack.OWDValid:
		d = ack.OWD
	case c.signal == cc.SignalRTT && ack.RTT > 0:
		d = ack.RTT / 2
	}
	if ack.SentTime.Before(m.from) || d <= 0 {
		return
	}
	q := max(d-m.base, 0)
	if m.minQ < 0 || q < m.minQ {
		m.minQ = q
	}
	m.samples++
}

// leaveCompetitive returns to the delay target through slow start.
func (c *Controller) leaveCompetitive(now clock.Mono) {
	c.comp.on = false
	c.comp.leftAt, c.comp.leftWindow, c.comp.left = now, c.comp.holdWindow, true
	c.comp.cubic = nil
	c.comp.empty.full = 0
	c.cwnd = cc.MinWindowPackets * c.mss
	c.probe.saved = c.cwnd
	c.ssthresh = math.Inf(1)
	c.ssMaxOWDv = 0
	c.inRecovery = false
}
