package acp

import (
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// The queue bound (Tuning.QueueBound = K). By Little's law the updates
// waiting in the bottleneck queue number n_q = ρ·Q̄, the send rate times
// their mean queueing delay Q̄ (the forward OWD minus its base, see
// baseDelay; the RTT minus its base where the OWD is not trusted). The bound
// keeps n_q ≤ K: λ ≤ K/Q̄.
//
// Why. Where the queue is a neighbour's (a CUBIC flow holding a drop-tail
// FIFO full), the monitor's age is about Q̄ plus the path delay plus half the
// update interval, 1/(2λ), and only that last term depends on the rate: the
// elasticity of the age above the path delay to the rate,
// −(dΔ/Δ)/(dλ/λ) = (1/(2λ))/(Q̄ + 1/(2λ)) = 1/(2·n_q + 1). Below the bound
// every 1 % of rate still buys at least 1/(2K + 1) % of that age; beyond it
// updates take the neighbour's bandwidth for a gain the monitor hardly sees
// (the fixed-rate age curve of bench/scenarios/acp-cross.json is nearly
// flat over a range of rates across which the CUBIC flow loses much of its
// goodput: bench/results/history.md, "The ACP regulator's steps and
// bounds"). Where the queue is the updates' own (the path's capacity just
// dropped under them), an update queued behind K others of its own arrives
// K service times older than it need be: ACP's reason to decrease, and the
// bound cuts at once instead of ACP's DEC, MDEC, MDEC sequence (the delivery
// bound then decides how far, see delivery.go).
//
// The bound never goes below the MinUpdatesPerRTT floor (Q̄ < RTT, so K/Q̄
// is above one update per RTT for K ≥ 1 anyway). Without a queueing sample
// in an epoch the previous Q̄ stands.
const (
	// DefaultQueueBound is K = 4 updates, 1/(2K + 1) ≈ 11 %: beside one
	// and two CUBIC flows in drop-tail FIFOs (acp-cross, acp-cross2) it
	// puts the rate within the age and cost budget of the constrained
	// oracle, where 3.5 left acp-cross2 further from its oracle and 4.5
	// cost acp-cross's CUBIC flow more than the budget allows
	// (bench/results/history.md, "The ACP regulator's steps and bounds").
	DefaultQueueBound = 4.0
)

// queueState is the queue bound's measurement.
type queueState struct {
	baseOWD, baseRTT baseDelay
	sum              float64 // Σ queueing delay samples of the epoch, s
	n                int
	// The return path's queue (see backlogbound.go): RTT − OWD above its
	// base, from the samples with a trusted OWD.
	baseRev  baseDelay
	sumRev   float64
	nRev     int
	revDelay time.Duration // its mean over the latest epoch with samples
	delay    time.Duration // Q̄ of the latest epoch with samples
	valid    bool
	fresh    bool // the latest epoch had samples
}

// sample folds in the queueing delay of one acknowledged update: its OWD
// minus the OWD base if owd (the sample is trusted), else its RTT minus the
// RTT base.
func (q *queueState) sample(now clock.Mono, ack cc.AckSample, owd bool) {
	var d time.Duration
	switch {
	case owd:
		q.baseOWD.update(now, ack.OWD)
		d = ack.OWD - q.baseOWD.min()
		if rev := ack.RTT - ack.OWD; ack.RTT > 0 && rev > 0 {
			q.baseRev.update(now, rev)
			q.sumRev += max(rev-q.baseRev.min(), 0).Seconds()
			q.nRev++
		}
	case ack.RTT > 0:
		q.baseRTT.update(now, ack.RTT)
		d = ack.RTT - q.baseRTT.min()
	default:
		return
	}
	q.sum += max(d, 0).Seconds()
	q.n++
}

// close ends the epoch's measurement: Q̄ is the mean of its samples (the
// previous Q̄ if it had none).
func (q *queueState) close() {
	q.fresh = q.n > 0
	if q.fresh {
		q.delay, q.valid = secondsToDuration(q.sum/float64(q.n)), true
	}
	q.sum, q.n = 0, 0
	if q.nRev > 0 {
		q.revDelay = secondsToDuration(q.sumRev / float64(q.nRev))
	}
	q.sumRev, q.nRev = 0, 0
}

// cap is K/Q̄ (inf if the bound is off or there is no queue).
func (q *queueState) cap(k float64) Rate {
	if k <= 0 || !q.valid || q.delay <= 0 {
		return inf
	}
	return Rate(k / q.delay.Seconds())
}

// queued is n_q = ρ·Q̄ for send rate rho.
func (q *queueState) queued(rho float64) float64 {
	if !q.valid {
		return 0
	}
	return rho * q.delay.Seconds()
}
