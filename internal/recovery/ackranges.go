package recovery

import "github.com/fresh-udp/fresh/cc"

// Range is an inclusive range of packet numbers.
type Range struct{ Lo, Hi cc.PacketNumber }

// AckRanges is the receiver's record of received packet numbers for ACK
// frames: disjoint ranges, newest first, at most a fixed number of them —
// the oldest fall off, as in a real encoder whose ACK frame has a size
// limit (QUIC's ACK ranges, RFC 9000 §19.3). Every ACK repeats them, so a
// lost ACK costs nothing.
type AckRanges struct {
	r       []Range
	max     int
	largest cc.PacketNumber
}

// NewAckRanges keeps at most maxRanges ranges.
func NewAckRanges(maxRanges int) AckRanges {
	// The ranges are allocated with the first packet number: a
	// connection that never receives an ack-eliciting packet holds none.
	return AckRanges{max: maxRanges, largest: cc.InvalidPacketNumber}
}

// Insert records pn. It reports whether pn was a duplicate and whether it
// arrived out of order (not the successor of the largest seen so far), which
// is when a receiver should ACK at once (RFC 9000 §13.2.1).
func (a *AckRanges) Insert(pn cc.PacketNumber) (dup, outOfOrder bool) {
	if a.r == nil {
		a.r = make([]Range, 0, a.max+1)
	}
	outOfOrder = a.largest != cc.InvalidPacketNumber && pn != a.largest+1
	if pn > a.largest {
		a.largest = pn
	}
	for i := range a.r {
		rg := &a.r[i]
		switch {
		case pn >= rg.Lo && pn <= rg.Hi:
			return true, outOfOrder
		case pn == rg.Hi+1:
			rg.Hi = pn
			return false, outOfOrder
		case pn > rg.Hi+1:
			a.r = append(a.r, Range{})
			copy(a.r[i+1:], a.r[i:])
			a.r[i] = Range{pn, pn}
			a.trim()
			return false, outOfOrder
		case pn == rg.Lo-1:
			rg.Lo = pn
			if i+1 < len(a.r) && a.r[i+1].Hi+1 == pn {
				rg.Lo = a.r[i+1].Lo
				a.r = append(a.r[:i+1], a.r[i+2:]...)
			}
			return false, outOfOrder
		}
	}
	if len(a.r) == a.max {
		return true, outOfOrder // older than everything remembered
	}
	a.r = append(a.r, Range{pn, pn})
	return false, outOfOrder
}

func (a *AckRanges) trim() {
	if len(a.r) > a.max {
		a.r = a.r[:a.max]
	}
}

// Ranges returns the ranges, newest first; the slice is only valid until
// the next Insert.
func (a *AckRanges) Ranges() []Range { return a.r }

// Largest is the largest packet number received (InvalidPacketNumber if none).
func (a *AckRanges) Largest() cc.PacketNumber { return a.largest }

// Forget stops acknowledging packet numbers up to and including pn: the
// peer has seen an ACK that covered them (RFC 9000 §13.2.4), so repeating
// them only makes every later ACK larger. A packet at or below pn that
// arrives afterwards is recorded again as usual.
func (a *AckRanges) Forget(pn cc.PacketNumber) {
	n := 0
	for _, rg := range a.r {
		if rg.Hi <= pn {
			break // this and every older range are covered
		}
		rg.Lo = max(rg.Lo, pn+1)
		a.r[n] = rg
		n++
	}
	a.r = a.r[:n]
}
