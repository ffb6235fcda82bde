package acp

import (
	"math"
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// fresh's decision rule (Tuning.Gradient). ACP's table reads the signs of
// the backlog change b_k and the age change δ_k as the sign of the slope
// of age against backlog, and steps the backlog against it. Two things in
// that reading fail beside a flow that keeps the bottleneck queue full:
//
//   - The backlog is B̄ = λ·RTT (Little's law), so when the neighbour's
//     queue grows, B̄ and Δ̄ rise together although the update rate did
//     not change, and when it drains both fall: both phases of its
//     sawtooth land in a DEC row, whatever the rate did.
//   - Its steps are fixed in updates (±κ/T, 4 Hz on a 250 ms epoch) or
//     proportional to the backlog, so at 5 Hz one DEC nearly halves the
//     rate while at 30 Hz an INC of half the backlog is 10–20 Hz: where a
//     run settles depends on which happened first.
//
// The rule keeps ACP's epochs, its age measurement and its four rows, with
// these changes:
//
//   - The table compares send rates, not backlogs: ρ_k is the rate at
//     which the updates acknowledged in epoch k were sent (from the
//     sequence numbers and send times of the newest update acknowledged at
//     the previous close and at this one, so lost updates count), the very
//     updates whose deliveries make up Δ̄_k. (Δρ_k, δ_k) then says whether
//     sending faster made the monitor fresher. On a path whose only queue
//     is the updates' own, ρ and B̄ move together and the rows are ACP's. A
//     change |Δρ| within Tuning.RateBand of ρ is no change (timer jitter,
//     rounding).
//   - With Tuning.ExcessAge the age change is judged net of the change in
//     the updates' mean queueing delay, δ_k − (Q̄_k − Q̄_{k−1}) (Q̄: see
//     the queue bound): the age of an update is its queueing delay plus
//     what the rate controls, and the queue is judged by the bounds. Beside
//     a neighbour's sawtooth this removes most of the noise (its queue
//     moves Δ̄ a long way each epoch on bench/scenarios/acp-cross.json:
//     bench/results/history.md, "The ACP regulator's steps and bounds");
//     on a path that overruns its capacity the delivery bound, not δ, sees
//     the queue.
//   - With Tuning.NoiseBand a (net) age change no larger than NoiseBand
//     times the running mean of |δ| (an EWMA, gain 1/8) is no information:
//     only a change that stands out of the epoch-to-epoch noise is read as
//     the effect of the rate.
//   - Steps are multiplicative, λ_{k+1} = λ_k·(1+s) for INC and λ_k/(1+s)
//     for DEC, so a step means the same at 5 Hz as at 500, and s adapts as
//     in Rprop (M. Riedmiller, H. Braun, "A Direct Adaptive Method for
//     Faster Backpropagation Learning: The RPROP Algorithm", ICNN 1993),
//     which also follows only the sign of a noisy gradient: a step in the
//     same direction as the last one grows s by stepGrow, a reversal
//     shrinks it by stepShrink, within [StepMin, StepMax]. Consistent
//     evidence over several epochs is needed for large steps; where the
//     signs alternate, s falls to StepMin and the rate moves by a few
//     percent an epoch instead of jumping between two modes. A bound that
//     lowers the rate the rule chose (see bounds.go) resets s to StepMin:
//     the bound, not the search, set the rate, and one noisy DEC must not
//     throw it far below.
//
// A hold row (Δρ = 0 or δ = 0, the noise band included) with
// Tuning.ExploreOnHold is an INC, as in the refinement of that name: an idle
// path and a source-limited sender both keep ρ constant, and the only way to
// learn more is to offer more; the bounds keep that offer harmless.
//
// An epoch without any ACK after one that also had none, while updates
// were outstanding, is a DEC: the path stopped delivering and backs off
// geometrically (s grows with every repeat), as MDEC does in ACP.
const (
	// stepGrow and stepShrink are Rprop's η+ = 1.2 and η− = 0.5, the values
	// its authors recommend for any problem.
	stepGrow   = 1.2
	stepShrink = 0.5
	// stepStart is s after a start or an RTO: 0.5, so that from one update
	// per RTT the rate climbs by half per epoch, as IncFraction 0.5 did.
	stepStart = 0.5
	// noiseGain is the EWMA weight of a new |δ| in the noise estimate:
	// 1/8, SRTT's α in RFC 6298.
	noiseGain = 1.0 / 8
)

// Defaults of fresh's rule (zero Tuning fields when Gradient is on).
const (
	// DefaultStepMin is the smallest step, 2 % of the rate: small enough
	// that a rate at its optimum wanders within a few percent (the age
	// curves of the acp-* scenarios are flat there, bench/results/history.md,
	// "The ACP regulator's steps and bounds"), large enough that Δρ stays
	// above RateBand.
	DefaultStepMin = 0.02
	// DefaultStepMax is the largest step, half the rate per epoch: the
	// climb from one update per RTT to a thousand takes about a dozen
	// epochs, and one epoch's overshoot past the capacity (before its ACKs
	// tell) is at most half of it. A doubling per epoch put twice the
	// capacity on the path for an epoch, and the queue it left cost
	// age on the lossy scenarios (the repository's bench results).
	DefaultStepMax = 0.5
	// DefaultRateBand is the relative change of ρ treated as none: 1 %,
	// half of DefaultStepMin, above the jitter of a software timer over a
	// 200 ms epoch.
	DefaultRateBand = 0.01
	// DefaultNoiseBand is Tuning.NoiseBand: a net age change within the
	// running mean of |δ| is noise.
	DefaultNoiseBand = 1.0
)

// rateMark is the newest acknowledged update at some instant: its sequence
// number (updates sent before it), send time and delivery time r_i.
type rateMark struct {
	seq        uint64
	sent, recv clock.Mono
	valid      bool
}

// sendRate is ρ between two marks: updates sent per second from a's send to
// b's. ok is false if either is unset or no time passed.
func sendRate(a, b rateMark) (rho float64, ok bool) {
	if !a.valid || !b.valid || b.seq <= a.seq || b.sent <= a.sent {
		return 0, false
	}
	return float64(b.seq-a.seq) / b.sent.Sub(a.sent).Seconds(), true
}

// deliveryRate is the rate at which the path delivered the updates sent
// between a and b (lost ones included, as in sendRate): their count over the
// span of the two delivery times.
func deliveryRate(a, b rateMark) (d float64, ok bool) {
	if !a.valid || !b.valid || b.seq <= a.seq || b.recv <= a.recv {
		return 0, false
	}
	return float64(b.seq-a.seq) / b.recv.Sub(a.recv).Seconds(), true
}

// gradientState is what the rule keeps between epochs.
type gradientState struct {
	newest  rateMark // newest update acknowledged so far
	mark    rateMark // newest at the previous close
	rho     float64  // ρ of the latest epoch (0 = unknown)
	rhoOK   bool
	dlv     float64 // delivery rate of the same updates (0 = unknown)
	prevRho float64
	prevOK  bool // prevRho measured
	prevQ   time.Duration
	prevQOK bool
	noise   float64 // EWMA of |δ|, s (Tuning.NoiseBand)
	step    float64
	dir     int // +1 INC, −1 DEC, 0 none since the start, an RTO or a bound
	noAck   int // consecutive epochs without an ACK while updates were out
	acked   bool
}

func (g *gradientState) reset() {
	*g = gradientState{newest: g.newest, mark: g.newest, step: stepStart}
}

// onAck notes an acknowledged update: sequence number seq, sent at sent,
// delivered at recv.
func (g *gradientState) onAck(seq uint64, sent, recv clock.Mono) {
	g.acked = true
	if !g.newest.valid || seq > g.newest.seq {
		g.newest = rateMark{seq: seq, sent: sent, recv: recv, valid: true}
	}
}

// measure closes the epoch's rate measurements: ρ and the delivery rate of
// the updates acknowledged since the previous close.
func (g *gradientState) measure(st *EpochStats) {
	g.rho, g.rhoOK = sendRate(g.mark, g.newest)
	g.dlv, _ = deliveryRate(g.mark, g.newest)
	g.mark = g.newest
	st.SendRate, st.DeliveryRate = Rate(g.rho), Rate(g.dlv)
}

// gradient decides the closed epoch st under fresh's rule and returns the
// action and the rate it sets, before the bounds. outstanding says whether
// updates were in the backlog during the epoch; q and qFresh are the
// epoch's Q̄ and whether the epoch measured it.
func (r *Regulator) gradient(st *EpochStats, outstanding bool, q time.Duration, qFresh bool) (Action, Rate) {
	g := &r.grad
	prevQ, prevQOK := g.prevQ, g.prevQOK
	g.prevQ, g.prevQOK = q, qFresh
	if !g.acked && outstanding {
		g.noAck++
	} else {
		g.noAck = 0
	}
	g.acked = false
	prev, prevOK := g.prevRho, g.prevOK
	g.prevRho, g.prevOK = g.rho, g.rhoOK

	if g.noAck >= 2 {
		return ActionDec, r.gradientMove(-1)
	}
	if !(prevOK && g.rhoOK && r.prevValid && st.AgeValid) {
		return ActionHold, r.rate // not enough information
	}
	st.Compared = true
	dRho := g.rho - prev
	if math.Abs(dRho) <= r.tun.RateBand*prev {
		dRho = 0
	}
	st.RateChange = Rate(dRho)
	st.Delta = st.Age - r.prevAge
	delta := st.Delta
	if r.tun.ExcessAge && qFresh && prevQOK {
		delta -= q - prevQ
	}
	st.ExcessDelta = delta
	if nb := r.tun.NoiseBand; nb > 0 {
		a := math.Abs(delta.Seconds())
		within := a <= nb*g.noise
		g.noise += noiseGain * (a - g.noise)
		if within {
			delta = 0
		}
	}
	switch decide(dRho, delta.Seconds()) {
	case rowUpDown, rowDownUp:
		return ActionInc, r.gradientMove(+1)
	case rowUpUp, rowDownDown:
		return ActionDec, r.gradientMove(-1)
	}
	if r.tun.ExploreOnHold {
		return ActionInc, r.gradientMove(+1)
	}
	return ActionHold, r.rate
}

// gradientMove adapts the step for a move in direction dir (+1, −1) and
// returns the rate it gives.
func (r *Regulator) gradientMove(dir int) Rate {
	g := &r.grad
	switch {
	case g.dir == dir:
		g.step *= stepGrow
	case g.dir != 0:
		g.step *= stepShrink
	}
	g.step = min(max(g.step, r.tun.StepMin), r.tun.StepMax)
	g.dir = dir
	if dir > 0 {
		return r.rate * Rate(1+g.step)
	}
	return r.rate / Rate(1+g.step)
}

// clipped is called when a bound lowered the rate the rule chose: the next
// move starts again from the smallest step.
func (g *gradientState) clipped(stepMin float64) {
	g.step, g.dir = stepMin, 0
}
