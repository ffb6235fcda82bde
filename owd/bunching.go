package owd

import (
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// bunching measures how often consecutive packets reach the receiver at
// (nearly) the same instant. A FIFO bottleneck of rate C delivers two
// packets at least size/C apart, so packets released together were held by
// something that is not a queue of this flow's making: a radio link that
// holds packets back and lets them go in a batch (Wi-Fi aggregation and
// retries, cellular scheduling), a path that keeps order while adding
// random delay. Delay from such a link is noise to a delay-based
// controller, and only on such a link does the controller learn a noise
// floor (response.go).
//
// On a wired bottleneck, however many delay-based flows share it, no two
// packets ever arrive together, so nothing is learned: there, delay that
// does not follow this flow's window is most often the other flows' share
// of the queue, and learning it as noise would give each flow a threshold
// of its own, the highest of which takes the link.
type bunching struct {
	prevPN   cc.PacketNumber
	prevSent clock.Mono
	prevArr  time.Duration // send time + OWD
	havePrev bool
	frac     float64 // EWMA of the bunched share of consecutive pairs
}

const (
	// bunchGap is the arrival gap under which a pair counts as released
	// together: well under the service time of a packet at any rate this
	// controller is for (0.1 ms is one 1250-byte packet at 100 Mbit/s).
	bunchGap = 100 * time.Microsecond
	// bunchGain is the EWMA gain per pair (about the last 64 pairs).
	bunchGain = 1.0 / 64
	// bunchedShare is the share of bunched pairs above which the link
	// counts as releasing packets in batches.
	bunchedShare = 0.1
)

// onSample folds in the OWD sample of packet pn sent at sent.
func (b *bunching) onSample(pn cc.PacketNumber, sent clock.Mono, owd time.Duration) {
	arr := time.Duration(sent) + owd
	if b.havePrev && pn == b.prevPN+1 && sent.Sub(b.prevSent) > bunchGap {
		// Sent apart, arrived together?
		x := 0.0
		if arr-b.prevArr < bunchGap {
			x = 1
		}
		b.frac += bunchGain * (x - b.frac)
	}
	b.prevPN, b.prevSent, b.prevArr, b.havePrev = pn, sent, arr, true
}

// batched reports whether the link releases packets in batches.
func (b *bunching) batched() bool { return b.frac > bunchedShare }
