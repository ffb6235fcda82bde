package owd

import (
	"math"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// slowdown is the periodic base-delay re-probe that answers LEDBAT's
// latecomer problem (LEDBAT, RFC 6817): a flow that starts while others hold a
// standing queue takes that queue for its base delay and then defends it.
// As LEDBAT++'s slowdown (draft-irtf-iccrg-ledbat-plus-plus §4.4), the
// controller drops its window to the probe window (2 packets) for
// ProbeHoldRTTs·SRTT, which lets the queue drain so every flow re-measures
// OWDmin. The SRTT is taken without the ACK path's queueing (divided by
// reverseScale) when reverse compensation is on: the hold waits for the
// forward queue only. The first slowdown comes 2 SRTT after the first slow-start exit (so a newcomer
// re-measures soon), the next ones max(ProbeSpacing × the last slowdown's
// length, ProbeMinInterval) later.
//
// One deliberate difference from LEDBAT++: after the hold the window is
// restored at once instead of slow-starting back. The ramp costs about
// log2(cwnd) nearly idle RTTs per slowdown, a noticeable share of the link
// when slowdowns come every 20 s. Restoring is safe because the window was
// sustainable a moment ago and pacing spreads it over an SRTT.
//
// Every slowdown is also an experiment, the drain test (drain.go): if the
// flow is alone, holding its window at the floor empties the queue; if a
// buffer filler shares the bottleneck, the queue stays. That decides
// competitive mode both ways.
type slowdown struct {
	at        clock.Mono // next slowdown; 0 = none scheduled
	start     clock.Mono // when the current one began
	holdUntil clock.Mono
	saved     float64       // window to restore, bytes
	resume    mode          // the mode the hold returns to (written by setMode)
	gap       time.Duration // the interval to the next slowdown set when the last one ended
	armed     bool          // the first slowdown has been scheduled
	done      bool          // the first slowdown has ended

	test drainTest
}

// schedule sets the next slowdown at t.
func (p *slowdown) schedule(t clock.Mono) { p.at = t }

// due reports whether a slowdown should begin at now.
func (p *slowdown) due(now clock.Mono) bool { return p.at != 0 && !now.Before(p.at) }

// holding reports whether the window is pinned to the probe window at now.
func (p *slowdown) holding(now clock.Mono) bool { return now.Before(p.holdUntil) }

// armProbe schedules the first slowdown 2 SRTT after the first slow-start
// exit (LEDBAT++'s initial slowdown), or as soon after it as an RTT sample
// exists: a flow whose first exit is a loss before any RTT sample (a long
// queue ahead of its first packets) must still get its slowdowns.
func (c *Controller) armProbe(now clock.Mono) {
	if c.probe.armed || !c.ssExited || !c.rtt.HasSample() {
		return
	}
	c.probe.armed = true
	c.probe.schedule(now.Add(2 * c.rtt.Smoothed()))
}

// maybeStartProbe begins a base-delay slowdown when one is due.
func (c *Controller) maybeStartProbe(now clock.Mono) {
	c.armProbe(now)
	if c.cfg.Tuning.DisableBaseDelayProbe || !c.probe.due(now) || !c.rtt.HasSample() {
		return
	}
	c.startProbe(now, reasonSlowdownDue)
}

// startProbe enters modeProbe from the current mode (avoidance or
// competitive), which the hold's end returns to (setMode), and starts the
// drain test on the hold.
func (c *Controller) startProbe(now clock.Mono, why reason) {
	p := &c.probe
	hold := time.Duration(c.cfg.Tuning.ProbeHoldRTTs * float64(c.rtt.Smoothed()) / c.reverseScale())
	p.at = 0
	p.start = now
	p.holdUntil = now.Add(hold)
	p.saved = c.cwnd
	if !c.comp.suspect {
		c.comp.quiet = false // a regular slowdown: Copa's test may ask again after it
	}
	c.startDrainTest(now, hold)
	c.vel.reset()
	c.cwnd = c.targets(now).probe
	c.setMode(now, modeProbe, why)
}

// onAckProbe holds the window until the hold is over, then restores it and
// goes on in the mode the slowdown interrupted.
func (c *Controller) onAckProbe(now clock.Mono, ack cc.AckSample) {
	if c.probe.holding(now) {
		return
	}
	c.cwnd = math.Max(c.cwnd, c.finishProbe(now, reasonHoldOver))
	c.onAck(now, ack)
}

// finishProbe ends a slowdown at now (why: reasonHoldOver, or
// reasonHoldCut for a loss or timeout), returns to the mode it interrupted
// or the one a verdict during the hold chose (probe.resume), schedules the
// next one and returns the window to restore.
func (c *Controller) finishProbe(now clock.Mono, why reason) float64 {
	p := &c.probe
	if d := &p.test; d.active && now.Before(d.to) {
		// Cut short (a loss or a timeout ended the hold): the packets
		// sent from now on are no longer the hold's, and the hold did not
		// last long enough to say anything.
		d.to, d.short = now, true
	}
	p.done = true
	c.setMode(now, p.resume, why)
	gap := max(time.Duration(c.cfg.Tuning.ProbeSpacing*float64(now.Sub(p.start))), c.cfg.Tuning.ProbeMinInterval)
	p.at, p.gap = now.Add(gap), gap
	return p.saved
}

// syncSlowdown makes the slowdowns of flows that share a queue fall
// together, so that their holds drain it and every flow re-measures its
// base (our addition; Tuning.DisableSlowdownSync). A hold drains only this
// flow's part of a shared queue: with the other flows' windows unchanged
// the queue stays, a latecomer's base keeps the queue it found, and the
// drain test sees a queue that did not drain. BBR's ProbeRTT phases
// synchronise because the min-RTT filter's expiry is re-armed whenever a
// round trip at the minimum is seen (Cardwell et al., "BBR:
// Congestion-Based Congestion Control", ACM Queue 2016; the BBR draft's
// ProbeRTT section): a flow that sees the queue empty while another
// drains it re-arms its own timer at that moment, so the next expiries
// coincide. The same two rules here, in congestion avoidance after the
// first slowdown, with a tolerance of half the noise floor:
//
//   - a sample that lowers OWDmin by more than the tolerance shows that
//     the base this flow held contained a queue, which another flow's
//     hold is draining now: the slowdown is due at once, to join it;
//   - a sample within the tolerance of OWDmin is a base-delay measurement
//     as good as a hold's: the next slowdown moves to one interval after
//     it.
func (c *Controller) syncSlowdown(now clock.Mono) {
	p := &c.probe
	if c.cfg.Tuning.DisableSlowdownSync || c.cfg.Tuning.DisableBaseDelayProbe || !p.done || p.at == 0 {
		return
	}
	a := c.active()
	tol := a.NoiseFloor() / 2
	switch {
	case a.fell > tol:
		p.at = now
	case a.last > 0 && a.last-a.Min() <= tol:
		p.at = max(p.at, now.Add(p.gap))
	}
}
