package netem

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// RateWalk is a random capacity process (scenario "rate_walk"): the rate
// holds for a time drawn uniformly from [HoldMin, HoldMax], then is drawn
// again, uniformly on a logarithmic scale over [Min, Max].
//
// Why a log scale: a capacity change is felt as a ratio (halving the rate
// doubles every queue's drain time, at 2 Mbit/s as at 20), and the cellular
// traces' per-second rates spread over a decade and more; a linear draw
// over 1–20 Mbit/s would be above 3 Mbit/s 89 % of the time and seldom
// visit the slow spells where queues build. On a log scale every octave
// (1–2, 2–4, … Mbit/s) gets the same share of the time.
//
// Why uniform holds of a few hundred ms: LTE schedulers re-allocate
// resource blocks every millisecond, but the capacity a flow sees moves
// with the channel and the cell's load over hundreds of milliseconds to
// seconds, the scale a controller with a 40 ms RTT has to follow.
type RateWalk = scenario.RateWalk

// rateWalk is the process in a link. The rate only matters when a packet
// is dequeued, so the walk is replayed lazily (to) rather than scheduled
// as events: it is a function of time alone, drawn in order from its own
// random stream, so every call pattern sees the same rates.
type rateWalk struct {
	cfg    RateWalk
	rng    *rand.Rand
	rate   cc.Bandwidth
	nextAt clock.Mono // when the rate is drawn again
}

// newRateWalk starts a walk at origin with its first draw.
func newRateWalk(cfg RateWalk, rng *rand.Rand, origin clock.Mono) *rateWalk {
	w := &rateWalk{cfg: cfg, rng: rng}
	w.draw(origin)
	return w
}

// draw picks the rate that holds from at, and how long it holds.
func (w *rateWalk) draw(at clock.Mono) {
	lo, hi := float64(w.cfg.Min), float64(w.cfg.Max)
	r := lo
	if hi > lo {
		r = lo * math.Exp(w.rng.Float64()*math.Log(hi/lo))
	}
	w.rate = cc.Bandwidth(max(math.Round(r), 1))
	hold := w.cfg.HoldMin.D()
	if span := w.cfg.HoldMax.D() - hold; span > 0 {
		hold += time.Duration(w.rng.Int64N(int64(span) + 1))
	}
	w.nextAt = at.Add(max(hold, time.Nanosecond))
}

// to replays the walk up to t; it reports whether the rate changed.
func (w *rateWalk) to(t clock.Mono) bool {
	changed := false
	for !w.nextAt.After(t) {
		w.draw(w.nextAt)
		changed = true
	}
	return changed
}
