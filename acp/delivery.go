package acp

import (
	"math"
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// The delivery bound (Tuning.DeliveryBound): a queue of the updates' own is
// kept from forming, and drained at the rate the path delivers, once the
// path has shown how fast that is.
//
// A queue forms where updates are sent faster than the bottleneck serves
// them; the updates then leave it at the bottleneck's rate whatever the send
// rate (the reasoning of BBR: N. Cardwell et al., "BBR: Congestion-Based
// Congestion Control", ACM Queue 14(5), 2016). An epoch is saturated when its
// updates were sent faster than the path delivered them (ρ > d·(1 +
// RateBand): the delivery rate d counts them over the span of their delivery
// times, as ρ over their send times) while d was the largest delivery rate
// of the last 10 s, within twice RateBand (the noise of two rate
// measurements), and ρ exceeded every delivery rate of those 10 s by more
// than their noise, ρ > max d·(1 + max(RateBand, 3ε)), where ε is the
// running mean (gain 1/8, as the age's noise band) of |ρ − d|/ρ over the
// epochs that were not saturated, starting from a prior of 3 % before the
// first epoch has measured it (satNoisePrior). The second condition tells the updates' own queue from a
// neighbour's: beside a flow whose queue grows and drains, the updates'
// delivery rate falls below their send rate while the queue grows, but the
// drains, which deliver the queued updates in a burst, keep the maximum well
// above it. The third tells a path at capacity, whose delivery rate cannot
// exceed it, from delay jitter or a neighbour's small queue, which only
// bunch the deliveries of updates sent at a steady rate: their delivery
// rate then falls below the send rate in one epoch and rises above it in
// another, and while the rate climbs by a step of 2 %, the path's maximum is
// the delivery rate of the slower epochs before it. Without the third
// condition a source far below the path's capacity read such an epoch as a
// saturation and held its rate there for 10 s, renewed by the next one (on
// the judge's loss and AQM draws, for tens of seconds, at a fraction of
// what its neighbour on the same path ran at: bench/results/acp-judge.md).
// On a path without jitter ε decays from its prior towards 0 and the test
// becomes the two conditions alone.
//
// From the saturated epochs the regulator learns the capacity C, an EWMA
// (gain 1/4) of their delivery rates, restarted when 10 s pass without a
// saturation or a sample differs from it by more than 10 % (the path
// changed). For 10 s after a saturation:
//
//   - the rate is held at C/(1 + StepMin), just under the capacity, where a
//     deterministic bottleneck is age-optimal (ACP's ideal: no update waits
//     behind another); after 10 s without saturation the hold lapses, the
//     rule probes upward again and a faster path is found;
//   - in a saturated epoch the queue bound is raised to at least
//     btlBw − n_q/T: ACP's own rate rule λ = 1/Z + b*/T with the
//     bottleneck's delivery rate for 1/Z and b* = −n_q, which drains the
//     queued updates within the next epoch instead of cutting to K/Q̄ (on a
//     2 ms path after an overshoot, K/Q̄ fell far below the capacity:
//     bench/results/history.md, "fresh's rule: the seven refinements were
//     bistable").
//
// When the queue bound cuts while more than 2K updates are queued, the path
// changed under the regulator (no neighbour's sawtooth puts twice K of ours
// in the queue at a rate the bound allowed): the delivery maximum is
// forgotten, so the next saturation measures the new path at once instead of
// waiting out the 10 s window. And when the cuts of such an episode have
// taken the rate below half of what it was, the rate resumes, once fewer
// than one update is queued, at the lowest delivery rate seen during the
// episode /(1 + StepMin): the path delivered that much while the queue
// drained, and climbing back from the cut rate in small steps cost
// bench/scenarios/acp-capacity.json seconds of stale updates.
const (
	// btlInterval and btlBuckets make the delivery maximum a 10 s window
	// in 1 s buckets: longer than a CUBIC flow's sawtooth on the paths we
	// measure (3–6 s at 2 Mbit/s, 40 ms), so a neighbour's drain is
	// always in it.
	btlInterval = time.Second
	btlBuckets  = 10
	// satHold is how long a saturation holds the capacity estimate and
	// the ceiling: the whole delivery window.
	satHold = btlInterval * btlBuckets
	// satGain is the EWMA weight of a saturated epoch's delivery rate in
	// the capacity estimate: 1/4, a few epochs' memory.
	satGain = 1.0 / 4
	// satJump is the relative difference from the estimate at which a
	// saturated delivery rate restarts it instead of moving it: 10 %,
	// several times the spread of one epoch's delivery rate at the
	// acp-lossy path's capacity (bench/results/history.md, "The ACP
	// regulator's steps and bounds").
	satJump = 0.1
	// satNoise is the multiple of ε, the mean |ρ − d|/ρ, by which a
	// saturated epoch's send rate must exceed the delivery maximum: 3, so
	// that one epoch's deviation, which exceeds the mean a third of the
	// time, seldom passes. On the judge's acp draws 1× and 2× left more
	// pairs of sources apart (Jain < 0.95) than 3×, 5× fewer still
	// (bench/results/acp-judge.md, "Tried and rejected on the dev draws");
	// a path without jitter has ε = 0.
	satNoise = 3
	// changeQueued is the multiple of K queued updates at which a cut of
	// the queue bound means the path changed.
	changeQueued = 2
	// satNoisePrior is ε before any epoch has measured it: 3 %, so that a
	// saturation in the first epochs needs ρ 9 % above every delivery rate
	// seen, and ε moves to the path's own noise at the EWMA's gain. With
	// ε = 0 at the start, the first epoch whose deliveries lagged the sends
	// by 1 % (a neighbour's queue growing by 10 ms a second, or jitter)
	// while the rate climbed from one update per RTT, so that its delivery
	// rate was the largest yet, read as the path's capacity: the rate was
	// held there for 10 s, and held epochs renewed the hold. On the judge's
	// acp draws that held the rate under half of the path's capacity in
	// many epochs of most of the draws whose age missed the constrained
	// oracle at high oracle rates; with the prior, in few of them
	// (bench/results/acp-judge.md, "Round 3: the delivery bound's noise
	// prior"). A prior of 10 % cleared nearly all, but then a climb that
	// overshoots an idle path's capacity by 10 % is no saturation, and the
	// updates' own queue, draining, reads as a neighbour's
	// (TestBacklogBoundShared).
	satNoisePrior = 0.03
)

// rateMax is the largest rate sample of the last btlBuckets buckets of
// btlInterval (0 if none).
type rateMax struct {
	maxs [btlBuckets]float64
	ring bucketClock
}

func (m *rateMax) update(now clock.Mono, v float64) {
	i := advance(&m.ring, m.maxs[:], now, btlInterval)
	m.maxs[i] = max(m.maxs[i], v)
}

func (m *rateMax) max() float64 {
	var x float64
	for _, v := range m.maxs {
		x = max(x, v)
	}
	return x
}

// deliveryState is the delivery bound's memory.
type deliveryState struct {
	btl      rateMax // delivery rates of the last 10 s
	satAt    clock.Mono
	satValid bool    // a saturation was seen (satAt)
	satNow   bool    // the latest epoch was saturated
	capacity float64 // C, updates/s
	noise    float64 // EWMA of |ρ − d|/ρ over the epochs not saturated, from satNoisePrior
	// The queue-bound episode: the lowest delivery rate seen while the
	// bound cut, and the rate before its first cut (0 = none).
	resume     float64
	resumeFrom Rate
}

// newDeliveryState is the delivery bound's memory before any epoch: no
// delivery rate, no saturation, and the noise ε at its prior.
func newDeliveryState() deliveryState { return deliveryState{noise: satNoisePrior} }

// observe runs the saturation test on a closed epoch (send rate rho and
// delivery rate d of its acknowledged updates; 0 = not measured).
func (ds *deliveryState) observe(now clock.Mono, rho, d, band float64) {
	ds.satNow = false
	if !(d > 0) {
		return
	}
	ds.btl.update(now, d)
	m := ds.btl.max()
	if tol := max(band, satNoise*ds.noise); !(rho > m*(1+tol)) || d*(1+2*band) < m {
		if rho > 0 {
			ds.noise += noiseGain * (math.Abs(rho-d)/rho - ds.noise)
		}
		return
	}
	if !ds.satValid || now.Sub(ds.satAt) >= satHold || math.Abs(d-ds.capacity) > satJump*ds.capacity {
		ds.capacity = d
	} else {
		ds.capacity += satGain * (d - ds.capacity)
	}
	ds.satNow, ds.satAt, ds.satValid = true, now, true
}

// recent reports whether a saturation was seen within satHold of now.
func (ds *deliveryState) recent(now clock.Mono) bool {
	return ds.satValid && now.Sub(ds.satAt) < satHold
}

// ceiling is the bound while a saturation is recent: the rate cap
// C/(1 + StepMin) and, in a saturated epoch, the floor btlBw − n_q/T for the
// queue bound (0 otherwise); ok is false when no saturation is recent.
func (ds *deliveryState) ceiling(r *Regulator) (ceiling, drain Rate, ok bool) {
	if !ds.satValid || r.last.Sub(ds.satAt) >= satHold {
		return 0, 0, false
	}
	if ds.satNow {
		drain = Rate(ds.btl.max() - r.queue.queued(r.grad.rho)/r.epochLength().Seconds())
	}
	return Rate(ds.capacity / (1 + r.tun.StepMin)), drain, true
}

// queueCut is called when the queue bound lowers the rate from lambda.
func (ds *deliveryState) queueCut(r *Regulator, lambda Rate) {
	if d := r.grad.dlv; d > 0 {
		if ds.resume == 0 || d < ds.resume {
			ds.resume = d
		}
		if ds.resumeFrom == 0 {
			ds.resumeFrom = lambda
		}
	}
	if r.queue.queued(r.grad.rho) > changeQueued*r.tun.QueueBound {
		ds.btl = rateMax{} // the path changed: measure it afresh
	}
}

// resumeRate is the rate to resume at once a queue-bound episode has drained
// (fewer than one update queued in an epoch that measured it), if its cuts
// took the rate below half of where they started; rate otherwise.
func (ds *deliveryState) resumeRate(r *Regulator, rate Rate) Rate {
	if ds.resume == 0 || !r.queue.fresh || r.queue.queued(r.grad.rho) >= 1 {
		return rate
	}
	res, from := Rate(ds.resume/(1+r.tun.StepMin)), ds.resumeFrom
	ds.resume, ds.resumeFrom = 0, 0
	if res > rate && rate < from/2 {
		return res
	}
	return rate
}
