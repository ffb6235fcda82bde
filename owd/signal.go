package owd

import (
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// takeDelaySample feeds the analyzers and decides which signal is in use.
// OWD is trusted when the receiver says its clock offset is synchronised and
// the sample is physically possible: 0 < OWD ≤ RTT (+ tolerance). Otherwise
// the controller falls back to RTT/2 (see the package doc, "RTT fallback")
// until Tuning.FallbackRecoverySamples good samples in a row say clocks are
// good again.
func (c *Controller) takeDelaySample(now clock.Mono, ack cc.AckSample) {
	if ack.RTT > 0 {
		c.addSample(now, &c.rttA, ack.RTT/2)
	}
	if !ack.OWDValid {
		return // no sample is no evidence either way
	}
	if !c.trustedOWD(ack) {
		c.signal = cc.SignalRTT
		c.goodRun = 0
		return
	}
	c.addSample(now, &c.owdA, ack.OWD)
	c.disp.onSample(now, ack.PacketNumber, ack.SentTime, ack.OWD, ack.OWD > c.owdA.Min()+time.Millisecond)
	if c.signal == cc.SignalRTT {
		c.goodRun++
		if c.goodRun >= c.cfg.Tuning.FallbackRecoverySamples && c.owdA.Ready() {
			c.signal = cc.SignalOWD
		}
	}
}

// trustedOWD reports whether ack carries a one-way delay the controller may
// act on: the receiver trusts its clock offset, and the sample is positive
// and no longer than the round trip (plus Tuning.OWDTolerance).
func (c *Controller) trustedOWD(ack cc.AckSample) bool {
	if !ack.OWDValid || !ack.ClockSynced || ack.OWD <= 0 {
		return false
	}
	if !c.rtt.HasSample() {
		return true
	}
	return ack.OWD <= max(c.rtt.Latest(), c.rtt.Smoothed())+c.cfg.Tuning.OWDTolerance
}

// delaySample is the delay of ack in the signal in use (OWD, or RTT/2 in
// fallback), 0 if it carries none.
func (c *Controller) delaySample(ack cc.AckSample) time.Duration {
	switch {
	case c.signal == cc.SignalOWD && ack.OWDValid:
		return ack.OWD
	case c.signal == cc.SignalRTT && ack.RTT > 0:
		return ack.RTT / 2
	}
	return 0
}

// addSample feeds a and notes when its OWDmin rose past the noise as old
// buckets left the history (rebase, acted on in onAckAvoidance).
//
// A base delay that rises is a longer path (a route change), not a queue:
// queueing never raises a minimum taken over a history that spans a
// slowdown. Until the old minimum left the history the controller took
// the new path's extra delay for a queue of its own and held the window
// at its floor; the window the new path needs (a larger bandwidth-delay
// product) is unknown, and congestion avoidance from the floor would take
// hundreds of round trips to find it. Slow start finds it in a few, and
// its exit on queueing delay (HyStart-like) stops it before it overfills
// the queue, as BBR goes back to probing after its min-RTT filter moves.
// Either analyzer may see the rise first (the signal can fall back to
// RTT/2 meanwhile), so it is noted whichever it is.
func (c *Controller) addSample(now clock.Mono, a *Analyzer, d time.Duration) {
	prev := a.Min()
	a.Add(now, d)
	if prev > 0 && a.Min()-prev > max(a.NoiseFloor(), prev/8) {
		c.rebase = true
	}
}

// active is the analyzer of the signal in use.
func (c *Controller) active() *Analyzer {
	if c.signal == cc.SignalOWD {
		return &c.owdA
	}
	return &c.rttA
}

// reverseScale is the reverse-path compensation factor (1 when off).
func (c *Controller) reverseScale() float64 {
	if c.cfg.Tuning.DisableReverseCompensation || c.signal != cc.SignalOWD || !c.owdA.Ready() || !c.rttA.Ready() {
		return 1
	}
	return reverseScale(c.rttA.Current(), c.rttA.Min(), c.owdA.Current(), c.owdA.Min())
}
