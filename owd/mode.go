package owd

import (
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// mode is the controller's state. There is exactly one at a time; the
// package doc draws the diagram, and each mode has one transition function
// (onAckSlowStart, onAckAvoidance, onAckProbe, onAckCompetitive), as
// tcp_bbr.c keeps one function per BBR state. Loss recovery (RFC 6582) and
// the delay signal in use (one-way delay or the RTT/2 fallback) are
// orthogonal to it: a flow can be in recovery in any mode. Every change
// goes through setMode, with a reason.
type mode uint8

const (
	// modeSlowStart: the window grows by the bytes acknowledged until the
	// queueing delay passes the exit threshold, ssthresh or a loss.
	modeSlowStart mode = iota
	// modeAvoidance: the delay rule (Eq. 7 or Eq. 2) steers the window
	// toward the threshold μ.
	modeAvoidance
	// modeProbe: a base-delay slowdown: the window is held at the probe
	// window for a few round trips so the queue drains, every flow
	// re-measures OWDmin, and the drain test tells whose queue it was.
	modeProbe
	// modeCompetitive: beside a buffer-filling flow the window is the
	// larger of CUBIC's (RFC 9438) and BBR's (competitiveWindow), until a
	// slowdown shows the queue drains.
	modeCompetitive
)

// Mode names, as cc.Metrics.Mode and the benchmark's mode_s report them.
const (
	ModeSlowStart   = cc.ModeSlowStart // "slow_start"
	ModeAvoidance   = cc.ModeAvoidance // "avoidance"
	ModeProbe       = "probe"
	ModeCompetitive = "competitive"
)

// String returns the mode's name (ModeSlowStart, …).
func (m mode) String() string {
	switch m {
	case modeSlowStart:
		return ModeSlowStart
	case modeAvoidance:
		return ModeAvoidance
	case modeProbe:
		return ModeProbe
	case modeCompetitive:
		return ModeCompetitive
	}
	return "unknown"
}

// reason is why the mode changed: every change goes through setMode with
// one, and mode_test.go's table lists, per (mode, reason), the mode it may
// lead to (the package doc's diagram).
type reason uint8

const (
	reasonNone reason = iota
	// Slow start ends (onAckSlowStart, OnLoss, OnRetransmissionTimeout).
	reasonExitDelay // the queueing delay passed the exit threshold
	reasonSsthresh  // the window reached ssthresh
	reasonLoss      // a loss in slow start
	// Back to slow start.
	reasonRebase  // OWDmin rose past the noise: a longer path (onAckAvoidance)
	reasonTimeout // a retransmission timeout (OnRetransmissionTimeout)
	// A slowdown begins (probe.go) or ends.
	reasonSlowdownDue // a regular slowdown is due (maybeStartProbe)
	reasonCopaAsks    // Copa's test asks for a drain test now (observeEmptiness)
	reasonHoldOver    // the hold is over (onAckProbe)
	reasonHoldCut     // a loss or a timeout cut the hold short
	// Competitive mode begins or ends (compete.go, drain.go).
	reasonQueueStayed  // the hold Copa's test asked for: the queue stayed, corroborated (drainVerdict)
	reasonCopaStayed   // Copa's test, and a recent regular slowdown found the queue staying (observeEmptiness)
	reasonRecall       // Copa's test within competeRecall of a return (observeEmptiness)
	reasonStarved      // competeLosses starved losses (countStarved)
	reasonQueueDrained // a slowdown in competitive mode drained the queue (drainVerdict)
	reasonElastic      // the pulse test: the cross traffic answered and holds the link (elastic.go)
	reasonPushBusy     // the push test: the link is busy and other flows hold the queue (push.go)
)

// Reason names, as ModeChange.Reason reports them.
var reasonNames = [...]string{
	reasonNone:         "",
	reasonExitDelay:    "exit_delay",
	reasonSsthresh:     "ssthresh",
	reasonLoss:         "loss",
	reasonRebase:       "rebase",
	reasonTimeout:      "timeout",
	reasonSlowdownDue:  "slowdown_due",
	reasonCopaAsks:     "copa_asks",
	reasonHoldOver:     "hold_over",
	reasonHoldCut:      "hold_cut",
	reasonQueueStayed:  "queue_stayed",
	reasonCopaStayed:   "copa_and_stayed",
	reasonRecall:       "recall",
	reasonStarved:      "starved_losses",
	reasonQueueDrained: "queue_drained",
	reasonElastic:      "elastic",
	reasonPushBusy:     "push_busy",
}

func (r reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "unknown"
}

// ModeChange is a change of the controller's mode: when, from which mode
// to which (ModeSlowStart, …), and why (a short name such as
// "slowdown_due", "queue_stayed" or "starved_losses"; the package doc's
// diagram and mode.go list them). A change decided during a slowdown's
// hold (Deferred) is a change of the mode the slowdown interrupted: From
// is that mode, and To takes effect when the hold ends.
type ModeChange struct {
	At       clock.Mono
	From, To string
	Reason   string
	Deferred bool
}

// modeChange is a ModeChange before its names are looked up.
type modeChange struct {
	at       clock.Mono
	from, to mode
	why      reason
	deferred bool
}

// setMode is the one writer of the mode and of probe.resume: every
// change goes through it, with its reason.
//
// A slowdown interrupts the mode it starts from (avoidance or
// competitive): entering modeProbe saves that mode in probe.resume, and
// the hold's end (reasonHoldOver, reasonHoldCut; to is then probe.resume)
// goes back to it. A change decided while the hold lasts — the drain
// verdict, which waits for a packet sent after the hold and may come
// before the ACK that ends it — is a change of the interrupted mode: it
// replaces probe.resume, the hold goes on, and the change takes effect
// when it ends. A change to the mode in force (or, during a hold, to the
// mode it resumes) is none.
func (c *Controller) setMode(now clock.Mono, to mode, why reason) {
	ch := modeChange{at: now, from: c.mode, to: to, why: why}
	switch {
	case to == modeProbe:
		c.probe.resume = c.mode
	case c.mode == modeProbe && why != reasonHoldOver && why != reasonHoldCut:
		ch.from, ch.deferred = c.interrupted(), true
	}
	if ch.from == to {
		return
	}
	if ch.deferred {
		c.probe.resume = to
	} else {
		c.mode = to
	}
	if to == modeSlowStart {
		c.ssr.reset() // a new slow start's rounds (ssrate.go)
	}
	c.lastChange = ch
	if c.onModeChange != nil {
		c.onModeChange(ch)
	}
}

// interrupted is the mode in force or, during a slowdown's hold, the mode
// the hold returns to.
func (c *Controller) interrupted() mode {
	if c.mode == modeProbe {
		return c.probe.resume
	}
	return c.mode
}

// LastModeChange returns the controller's last mode change (the zero
// ModeChange before the first).
func (c *Controller) LastModeChange() ModeChange {
	ch := c.lastChange
	if ch.why == reasonNone {
		return ModeChange{}
	}
	return ModeChange{At: ch.at, From: ch.from.String(), To: ch.to.String(), Reason: ch.why.String(), Deferred: ch.deferred}
}
