package sim

import (
	"time"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/recovery"
)

// ACK policy of a bulk receiver (RFC 9000 §13.2.1, RFC 5681 §4.2): ACK
// every second packet, or after maxAckDelay, and at once when a packet
// arrives out of order (it opens or fills a gap, so the sender must hear of
// it quickly for fast retransmit). Update receivers ACK every packet.
const maxAckDelay = 25 * time.Millisecond

// receiver is the receiving end of a bulk or update flow: it records packet
// numbers for ACK ranges, stamps OWD samples, and decides when to ACK.
type receiver struct {
	clk      rxClock
	ackEvery int

	ranges recovery.AckRanges // received packet numbers, newest range first

	samples  [maxAckSamples]owdSample
	nSamples int
	unacked  int        // ack-eliciting packets since the last ACK
	oldest   clock.Mono // arrival of the oldest unacknowledged packet
	ackAt    clock.Mono // delayed-ACK deadline; 0 = none
}

func newReceiver(clk rxClock, ackEvery int) receiver {
	return receiver{clk: clk, ackEvery: ackEvery, ranges: recovery.NewAckRanges(maxAckRanges)}
}

// onPacket records an arriving packet and returns the receiver's OWD
// estimate (and whether it is trusted) and whether an ACK is due now.
func (r *receiver) onPacket(now clock.Mono, p *packet) (est time.Duration, ok bool, ackNow bool) {
	recv := r.clk.stamp(now)
	r.clk.reverse(p.echoT3, p.echoT4)
	est, ok = r.clk.owd(p.stamp, recv)
	_, gap := r.ranges.Insert(p.pn)
	if r.nSamples < maxAckSamples {
		r.samples[r.nSamples] = owdSample{pn: p.pn, owd: est}
		r.nSamples++
	}
	if r.unacked == 0 {
		r.oldest = now
	}
	r.unacked++
	if gap || r.unacked >= r.ackEvery {
		return est, ok, true
	}
	if r.ackAt == 0 {
		r.ackAt = now.Add(maxAckDelay)
	}
	return est, ok, false
}

// fillAck writes the ACK frame into f and resets the ACK state.
func (r *receiver) fillAck(now clock.Mono, f *ackFrame) {
	f.nRanges = copy(f.ranges[:], r.ranges.Ranges())
	f.nSamples = copy(f.samples[:], r.samples[:r.nSamples])
	f.ackDelay = now.Sub(r.oldest)
	f.synced = r.syncedNow()
	f.t3 = r.clk.stamp(now)
	r.nSamples = 0
	r.unacked = 0
	r.ackAt = 0
}

// syncedNow reports whether the receiver trusts its clock correction.
func (r *receiver) syncedNow() bool {
	switch r.clk.mode {
	case syncPerfect:
		return true
	case syncInband:
		return r.clk.inband.Synced()
	}
	return false
}
