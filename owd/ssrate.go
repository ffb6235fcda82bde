package owd

import (
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// A slow-start exit the delivery rate must corroborate (our addition;
// Tuning.DisableRateCorroboratedExit).
//
// Slow start ends when the queueing delay passes a threshold (HyStart's
// delay increase, RFC 9406 §4.2), read as "the window has passed the
// bandwidth-delay product and a queue is forming". A queue at the
// bottleneck has a second signature the delay alone does not: the
// delivery rate stops growing, since the bottleneck delivers at its
// capacity however much more is in flight (BBR's full-pipe estimate,
// Cardwell et al., "BBR: Congestion-Based Congestion Control", ACM Queue
// 2016: the bandwidth grows less than 25 % over three rounds). Delay that
// rises while the rate still doubles every round is not a bottleneck
// queue but the path's own noise made to look like one: a link that never
// reorders releases a packet no earlier than the one before it, so at a
// high packet rate one late packet holds back every packet behind it, and
// the delay climbs toward the noise's worst case as the window grows,
// the shape of a queue. Ending slow start there leaves the window at a
// fraction of the product, which the additive increase then takes
// minutes to cover on a long, fast path.
//
// So, on a link that releases packets in batches (bunching.go: an
// order-keeping link with random delay is one), the delay exit waits
// while the last round trip delivered at least ssRateGrowth times the
// one before it. Slow start doubles the window every round trip: below
// the product the rate follows (×2 a round); past it the rate stays at
// the capacity, and one round later the exit comes, the window a round
// trip later than the delay alone would have cut it (slow start's drain,
// which sizes the cut by OWDmin/OWDcur, then takes the overshoot out).
// Loss ends slow start as before, whatever the rate does. On a link that
// does not batch the delay is taken at its word: there a rising delay
// with a rising rate is most often a latecomer's view of other flows'
// queue, which its growth would only deepen (the judge's own-kind draws
// lost fairness when the rate could hold the exit off on every link, in
// bench/results/owd-round8.md). Rounds are counted by packet number, as
// inFlight's are.
type ssRate struct {
	roundEnd cc.PacketNumber // the largest packet sent when the round began
	start    clock.Mono      // the round began
	bytes    cc.ByteCount    // acknowledged in the round
	last     float64         // the last completed round's rate, bytes/s
	prev     float64         // the one before
	rounds   int             // completed rounds
}

// ssRateGrowth is the growth of the delivery rate per round trip that
// says the pipe is not full: half of slow start's doubling showed up as
// rate (BBR's full-pipe test asks 25 % of its 2.89 gain, over three
// rounds; a latecomer taking its share from flows that yield grows its
// rate too, by less the larger its share).
const ssRateGrowth = 1.5

// observe folds one ACK of slow start: ack is for packet pn, of bytes
// bytes; largest is the largest packet sent so far.
func (r *ssRate) observe(now clock.Mono, pn cc.PacketNumber, bytes cc.ByteCount, largest cc.PacketNumber) {
	if r.start == 0 {
		r.start, r.roundEnd = now, largest
		return
	}
	r.bytes += bytes
	if pn <= r.roundEnd {
		return
	}
	if d := now.Sub(r.start); d > 0 {
		r.prev, r.last = r.last, float64(r.bytes)/d.Seconds()
		r.rounds++
	}
	r.start, r.roundEnd, r.bytes = now, largest, 0
}

// growing reports whether the last round trip delivered at least
// ssRateGrowth times the one before: the pipe is not full yet.
func (r *ssRate) growing() bool {
	return r.rounds >= 2 && r.last >= ssRateGrowth*r.prev
}

// reset forgets the rounds (a new slow start).
func (r *ssRate) reset() { *r = ssRate{} }
