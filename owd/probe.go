package owd

import (
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// baseProbe is the periodic base-delay re-probe that answers LEDBAT's
// latecomer problem (LEDBAT, RFC 6817): a flow that starts while others hold a
// standing queue takes that queue for its base delay and then defends it.
// As LEDBAT++'s slowdown (draft-irtf-iccrg-ledbat-plus-plus §4.4), the
// controller drops its window to the 2-packet floor for ProbeHoldRTTs·SRTT,
// which lets the queue drain so every flow re-measures OWDmin. The SRTT is
// taken without the ACK path's queueing (divided by reverseScale) when
// reverse compensation is on: the hold waits for the forward queue only.
// The first slowdown comes 2 SRTT after the first slow-start exit (so a newcomer
// re-measures soon), the next ones max(ProbeSpacing × the last slowdown's
// length, ProbeMinInterval) later.
//
// One deliberate difference from LEDBAT++: after the hold the window is
// restored at once instead of slow-starting back. The ramp costs about
// log2(cwnd) nearly idle RTTs per slowdown, a noticeable share of the link
// when slowdowns come every 20 s. Restoring is safe because the window was
// sustainable a moment ago and pacing spreads it over an SRTT.
type baseProbe struct {
	at        clock.Mono // next slowdown; 0 = none scheduled
	start     clock.Mono // when the current one began
	holdUntil clock.Mono
	saved     float64 // window to restore, bytes
	active    bool
}

// schedule sets the next slowdown at t.
func (p *baseProbe) schedule(t clock.Mono) { p.at = t }

// due reports whether a slowdown should begin at now.
func (p *baseProbe) due(now clock.Mono) bool { return p.at != 0 && !now.Before(p.at) }

// begin starts a slowdown holding for hold; cwnd is the window to restore.
func (p *baseProbe) begin(now clock.Mono, cwnd float64, hold time.Duration) {
	p.at = 0
	p.active = true
	p.start = now
	p.holdUntil = now.Add(hold)
	p.saved = cwnd
}

// holding reports whether the window is pinned to the floor at now.
func (p *baseProbe) holding(now clock.Mono) bool { return p.active && now.Before(p.holdUntil) }

// finish ends the slowdown at now, schedules the next one and returns the
// window to restore.
func (p *baseProbe) finish(now clock.Mono, spacing float64, minInterval time.Duration) float64 {
	p.active = false
	gap := max(time.Duration(spacing*float64(now.Sub(p.start))), minInterval)
	p.at = now.Add(gap)
	return p.saved
}
