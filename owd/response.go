package owd

import (
	"math"
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// response asks whether the delay responds to the window, which tells the
// flow's own queue from delay it does not cause (our addition;
// Tuning.DisableNoiseResponse). Per round (one SRTT) it records the mean
// window and the mean queueing delay (OWDcur − OWDmin); over the last
// responseRounds rounds it correlates each round's delay with the previous
// round's window, since a window takes a round trip to show up as queue.
// A queue the flow builds follows its window: the correlation is strongly
// positive (on the paper's paths: bench/RESULTS.md, "Controller research:
// the gaps"). Delay that a link adds while keeping packet order — a radio
// link holding packets back and releasing them together, as Wi-Fi and
// cellular links do — does not follow it: there the level rises with the
// sending rate only slowly and saturates at the holding time, and the RFC
// 3550 jitter, which sees only the small steps between consecutive packets,
// misses it.
//
// When the correlation is below responseLow and the link is seen to
// release packets in batches (bunching.go), the delay is noise to this
// flow, and responseGain × the largest round delay of the history becomes
// a floor under μ (the analyzer's NoiseFloor): the delay rule stops
// shrinking the window against it. It is capped at responseGain × the
// mean range of the raw samples within a round: noise is jagged — the
// samples of one round spread over most of its amplitude
// (bench/results/history.md, "The learned noise floor") — while a
// queue is smooth at the scale of a round trip. A later verdict of noise
// may lower the floor to what it finds (the old floor decays with time
// constant responseDecay meanwhile): a floor learned in a transient does
// not stay for good. While the correlation is above responseHigh the floor
// decays; in between, and when the link does not batch, it holds. On a link
// that batches it never falls below spreadGain × that mean range.
//
// On a link that does not batch, delay that does not follow the window is
// most often other flows' queue — delay-based flows sharing a bottleneck,
// or an AQM holding its target beside a loss-based flow — and learning it
// gives each flow a μ of its own: among flows of this kind, which all
// shrink above their μ and grow below it, the one with the highest μ
// holds the queue above everyone else's and takes the link. Capped at
// 20 ms (the earlier rule), such floors, learned while latecomers started,
// left one of three owd flows on a fixed-rate FIFO with nearly all of the
// link (bench/results/owd-ownkind.md). Random per-packet delay that keeps
// order without batching is what the RFC 3550 jitter term (the analyzer's
// JitterGain) sees. The queue of a buffer filler does not follow the
// window either; competitive mode (compete.go) answers it.
type response struct {
	w, q    [responseRounds]float64
	n, head int
	start   clock.Mono
	sumW    float64
	sumQ    float64
	acks    int
	floor   time.Duration
	lo, hi  time.Duration // raw queueing delay range of the round
	spread  float64       // mean of the rounds' ranges, ns
	started bool
	// judged: a verdict was reached; ignores: the last one found the delay
	// not following the window (correlation below responseLow).
	judged, ignores bool
	// batched: the link releases packets in batches (bunching.go), so
	// delay that does not follow the window is the link's, and the floor
	// is not held to responseCap.
	batched bool
}

// spreadGain: on a link that batches, the floor is at least spreadGain ×
// the mean range of the raw samples within a round, whatever the
// correlation says. The correlation needs the window to move, and noise
// that stands above μ is what stops it moving: on a 22 Mbit/s, 145 ms path
// whose packets keep order under 0–18 ms of random delay, the window sat
// far below the path's 400 packets for tens of seconds, every verdict in
// the middle band, while the samples of each round spread over most of the
// delay's range (bench/results/owd-round3.md, "Jitter that keeps packet
// order"). A queue of the flow's own is smooth within a round and adds
// little to the range; OWDcur, the minimum of the last samples, reads the
// noise at up to about its whole range, hence a gain above 1.
const spreadGain = 1.5

const (
	responseRounds = 16
	responseLow    = 0.2
	responseHigh   = 0.8
	responseGain   = 2.0
	responseDecay  = 10 * time.Second
)

// observe folds one ACK in congestion avoidance: cwnd in packets, q the
// queueing delay. It closes a round every srtt and updates the floor.
func (r *response) observe(now clock.Mono, cwnd float64, q, raw, srtt time.Duration) {
	if !r.started {
		r.started, r.start = true, now
		r.lo, r.hi = raw, raw
	}
	r.sumW += cwnd
	r.sumQ += float64(q)
	r.lo, r.hi = min(r.lo, raw), max(r.hi, raw)
	r.acks++
	if now.Sub(r.start) < srtt || r.acks < 4 {
		return
	}
	// The raw samples' range within the round, averaged over rounds.
	r.spread += (float64(r.hi-r.lo) - r.spread) / responseRounds
	r.lo, r.hi = raw, raw

	r.w[r.head], r.q[r.head] = r.sumW/float64(r.acks), r.sumQ/float64(r.acks)
	r.head = (r.head + 1) % responseRounds
	r.n = min(r.n+1, responseRounds)
	r.start, r.sumW, r.sumQ, r.acks = now, 0, 0, 0
	if r.n < responseRounds {
		return
	}
	c, ok := r.lagCorrelation()
	if ok {
		r.judged, r.ignores = true, c < responseLow
	}
	switch {
	case !ok:
	case c < responseLow && r.batched:
		top := 0.0
		for _, v := range r.q {
			top = math.Max(top, v)
		}
		lim := min(time.Duration(responseGain*top), time.Duration(responseGain*r.spread))
		r.floor = max(lim, r.decayed(srtt))
	case c > responseHigh:
		r.floor = r.decayed(srtt)
	}
	if r.batched {
		r.floor = max(r.floor, time.Duration(spreadGain*r.spread))
	}
}

// decayed is the floor decayed by one round of srtt (time constant
// responseDecay).
func (r *response) decayed(srtt time.Duration) time.Duration {
	return time.Duration(float64(r.floor) * math.Exp(-srtt.Seconds()/responseDecay.Seconds()))
}

// lagCorrelation is Pearson's correlation between each round's delay and
// the previous round's window; ok is false when the window hardly moved
// (its standard deviation under 5 % of its mean: no experiment was made).
func (r *response) lagCorrelation() (float64, bool) {
	var sx, sy, sxx, syy, sxy float64
	for k := 1; k < responseRounds; k++ {
		i := (r.head + k) % responseRounds // oldest first: head is the oldest
		prev := (r.head + k - 1) % responseRounds
		x, y := r.w[prev], r.q[i]
		sx, sy, sxx, syy, sxy = sx+x, sy+y, sxx+x*x, syy+y*y, sxy+x*y
	}
	n := float64(responseRounds - 1)
	mx, my := sx/n, sy/n
	vx, vy := sxx/n-mx*mx, syy/n-my*my
	if vx <= 0 || vy <= 0 || math.Sqrt(vx) < 0.05*mx {
		return 0, false
	}
	return (sxy/n - mx*my) / math.Sqrt(vx*vy), true
}
