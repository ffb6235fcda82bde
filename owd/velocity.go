package owd

import (
	"math"
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// velocity speeds up the additive increase while the queue stays clearly
// empty (our addition; Tuning.DisableVelocity), as Copa's velocity
// parameter does (Arun and Balakrishnan, NSDI 2018, §2.1: once the window
// has moved the same way for three round trips, the step doubles every
// round trip).
//
// The delay rule adds one packet per round trip below μ. On a link whose
// capacity rises — a cellular link coming out of a fade, a Wi-Fi station
// whose neighbour went quiet — one packet per round trip takes tens of
// round trips to reach the new bandwidth-delay product, and the capacity
// has often changed again by then (on the LTE traces the flow used far
// less of the link than BBR did). An empty queue is the evidence that
// the window is too small for the link: queueing delay under a quarter of
// μ for a whole round trip means the window could grow by a good part of
// itself without building any queue the rule would object to.
//
// So each round trip (SRTT) in which every acknowledged packet saw the
// queueing delay under velocityQuiet·μ counts; after velocityRounds such
// rounds in a row the increase doubles each round trip, up to half the
// window per round trip (slow start's growth is the whole window), and a
// round with a packet above that level resets it to one packet per round
// trip. Near the equilibrium — the queue around μ, as on a stable link —
// the step is the rule's own, so the velocity does not add oscillation
// there.
type velocity struct {
	start clock.Mono // the current round began
	quiet bool       // no ACK of the round so far saw the queue above μ
	sum   float64    // Σ OWDv over the round's ACKs
	n     int        // the round's ACKs
	runs  int        // quiet rounds in a row
	v     float64    // the increase multiplier: 1, 2, 4, …
	// full is the window, packets, at which the queue last rose past μ
	// (0: none, or the path has since shown more room): the velocity
	// brings the window back to it quickly and probes past it at the
	// rule's own pace, as CUBIC grows fast toward W_max and slowly around
	// it (RFC 9438 §4.2).
	full float64
}

const (
	// velocityQuiet is the fraction of μ under which the queue counts
	// as empty.
	velocityQuiet = 0.25
	// velocityRounds quiet rounds in a row start the doubling (Copa's
	// three round trips, the first of which is the run's own).
	velocityRounds = 4
	// velocityMaxShare caps the increase at this share of the window per
	// round trip.
	velocityMaxShare = 0.5
	// velocityBeyond × the window at which the path last filled, reached
	// without the queue rising, says the path has more room now.
	velocityBeyond = 1.25
)

// velocityRefRTT scales the velocity's cap on long paths: Tuning.
// VelocityMax packets per round trip, or per velocityRefRTT of the base
// round trip where that is longer. A path's bandwidth-delay product grows
// with its round trip, and a cap per round trip makes the time to reach it
// grow with the square of the round trip (at 600 ms and 5 Mbit/s, 350
// packets at 2 a round trip take 100 s); a cap per unit of time, as
// CUBIC's growth is in real time (RFC 9438 §5.1), keeps that time linear
// in it, while a short path, on which the capacity moves faster than the
// feedback, keeps the small cap.
const velocityRefRTT = 50 * time.Millisecond

// observe folds one ACK in congestion avoidance: v is OWDv, mu the
// threshold, srtt the round length; it returns the multiplier for this
// ACK's increase, given the window cwnd in packets.
func (vel *velocity) observe(now clock.Mono, v, mu float64, srtt time.Duration, cwnd, maxSpeed float64) float64 {
	if vel.v < 1 {
		vel.v = 1
	}
	if vel.start == 0 {
		vel.start, vel.quiet = now, true
	}
	if v > mu {
		// A decrease step: the window is at or past the target. The
		// window at the first such step is where the path filled last.
		if vel.quiet || vel.n == 0 {
			vel.full = cwnd
		}
		vel.quiet = false
		vel.runs, vel.v = 0, 1
	}
	if vel.full > 0 && cwnd >= velocityBeyond*vel.full {
		vel.full = 0 // well past where it filled without filling: the path got faster
	}
	vel.sum += v
	vel.n++
	if now.Sub(vel.start) >= srtt {
		if vel.quiet && vel.sum <= velocityQuiet*mu*float64(vel.n) {
			vel.runs++
			if vel.runs >= velocityRounds {
				vel.v *= 2
			}
		} else {
			vel.runs, vel.v = 0, 1
		}
		vel.start, vel.quiet, vel.sum, vel.n = now, true, 0, 0
	}
	if vel.full > 0 && cwnd >= vel.full {
		return 1 // past where the path filled last: probe at the rule's pace
	}
	return math.Min(vel.v, math.Max(1, math.Min(maxSpeed, velocityMaxShare*cwnd)))
}

// reset returns the increase to one packet per round trip (a loss, a
// slowdown, a new slow start); the window at which the path last filled
// is kept.
func (vel *velocity) reset() { *vel = velocity{full: vel.full} }
