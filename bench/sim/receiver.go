package sim

import (
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
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

	ranges  []pnRange // received packet numbers, newest range first
	largest cc.PacketNumber

	samples  [maxAckSamples]owdSample
	nSamples int
	unacked  int        // ack-eliciting packets since the last ACK
	oldest   clock.Mono // arrival of the oldest unacknowledged packet
	ackAt    clock.Mono // delayed-ACK deadline; 0 = none
}

func newReceiver(clk rxClock, ackEvery int) receiver {
	return receiver{clk: clk, ackEvery: ackEvery, largest: cc.InvalidPacketNumber, ranges: make([]pnRange, 0, maxAckRanges+1)}
}

// onPacket records an arriving packet and returns the receiver's OWD
// estimate (and whether it is trusted) and whether an ACK is due now.
func (r *receiver) onPacket(now clock.Mono, p *packet) (est time.Duration, ok bool, ackNow bool) {
	recv := r.clk.stamp(now)
	r.clk.reverse(p.echoT3, p.echoT4)
	est, ok = r.clk.owd(p.stamp, recv)
	gap := r.largest != cc.InvalidPacketNumber && p.pn != r.largest+1
	r.insert(p.pn)
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

// insert adds pn to the ranges (newest first), merging neighbours and
// keeping at most maxAckRanges (the oldest fall off, as in a real encoder).
func (r *receiver) insert(pn cc.PacketNumber) {
	if pn > r.largest {
		r.largest = pn
	}
	for i := range r.ranges {
		rg := &r.ranges[i]
		switch {
		case pn >= rg.lo && pn <= rg.hi:
			return // duplicate
		case pn == rg.hi+1:
			rg.hi = pn
			return
		case pn > rg.hi+1:
			r.ranges = append(r.ranges, pnRange{})
			copy(r.ranges[i+1:], r.ranges[i:])
			r.ranges[i] = pnRange{pn, pn}
			r.trim()
			return
		case pn == rg.lo-1:
			rg.lo = pn
			if i+1 < len(r.ranges) && r.ranges[i+1].hi+1 == pn {
				rg.lo = r.ranges[i+1].lo
				r.ranges = append(r.ranges[:i+1], r.ranges[i+2:]...)
			}
			return
		}
	}
	r.ranges = append(r.ranges, pnRange{pn, pn})
	r.trim()
}

func (r *receiver) trim() {
	if len(r.ranges) > maxAckRanges {
		r.ranges = r.ranges[:maxAckRanges]
	}
}

// fillAck writes the ACK frame into f and resets the ACK state.
func (r *receiver) fillAck(now clock.Mono, f *ackFrame) {
	f.nRanges = copy(f.ranges[:], r.ranges)
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
