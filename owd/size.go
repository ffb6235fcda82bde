package owd

import "github.com/fresh-udp/fresh/cc"

// packetSizes tells whether an acknowledged packet is of the flow's usual
// size, so that its delay sample can be compared with the others (our
// addition; Tuning.DisableSizeFilter).
//
// A packet's one-way delay includes its own serialisation at the
// bottleneck, size ÷ rate: on a 1.4 Mbit/s link 6 ms for a full
// 1,082-byte packet and 0.4 ms for a 72-byte one (an ACK with a PING,
// the tail of a stream write). Taken as a delay sample, the small packet
// sets OWDmin 5.6 ms below every full-size packet's delay, and from then
// on the flow reads a standing queue of one packet time where there is
// none: above μ's 5 ms floor, so every random loss counts as congestion
// and halves the window, down to its floor (a 2.8 % lossy 440 ms path: a
// fraction of the share BBR held; bench/results/owd-round3.md, "A small
// packet's delay is not a queue's absence"). The same bias lowers OWDcur
// and makes a queue look emptier than it is to Copa's test. So a sample
// counts only if its packet is at least sizeRatio of the largest among
// the last sizeHistory acknowledged; a flow whose packets are all small
// (status updates) compares small with small once they fill the history.
// The RTT estimator keeps every sample: it times retransmissions, and a
// packet time is noise there.
type packetSizes struct {
	last [sizeHistory]cc.ByteCount
	next int
}

const (
	// sizeHistory is how many acknowledged packets the reference size is
	// the largest of.
	sizeHistory = 16
	// sizeRatio: a packet of at least this share of the reference size
	// reads at most an eighth of a packet time low.
	sizeRatio = 7.0 / 8
)

// comparable notes the size of an acknowledged packet and reports whether
// its delay may be compared with the flow's other samples.
func (p *packetSizes) comparable(b cc.ByteCount) bool {
	p.last[p.next] = b
	p.next = (p.next + 1) % sizeHistory
	ref := b
	for _, s := range p.last {
		ref = max(ref, s)
	}
	return float64(b) >= sizeRatio*float64(ref)
}
