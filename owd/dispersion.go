package owd

import (
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// dispersion estimates the bottleneck's packet time — how long it takes
// to serialise one of this flow's packets — from the spacing at which
// consecutive packets arrive at the receiver, the packet-pair principle
// (Keshav, "A Control-Theoretic Approach to Flow Control", SIGCOMM 1991):
// two packets that meet in the bottleneck's queue leave it one packet
// time apart, or more if other flows' packets come between them. The
// arrival times come from the one-way delays the receiver stamps
// (send time + OWD; the clock offset is the same for both and cancels).
//
// A pair counts only if the second packet was queued behind the first: its
// arrival gap exceeds twice its send gap (the path spread them out) and it
// saw queueing delay. The estimate is the minimum over the current bucket of
// dispersionBucket and the last one with enough pairs, so cross traffic,
// which only widens gaps, does not inflate it as long as the flow's
// packets meet in the queue now and then, which bursts (slow start, a
// restored window) make them do. A link that gets faster shows smaller
// gaps at once; one that gets slower keeps the old estimate until a
// bucket of pairs says otherwise, and a link thought faster than it is
// only means the thin-link rules stay off. Unlike the
// acknowledgement rate, it does not shrink with the flow's share of the
// link: a flow with a quarter of a fast link must not believe the link is
// thin.
type dispersion struct {
	prevPN   cc.PacketNumber
	prevSent clock.Mono
	prevArr  time.Duration // send time + OWD, as a duration since the epoch
	havePrev bool

	cur, old    time.Duration // minimum gap in the current and the previous bucket
	nCur, nOld  int           // how many pairs each minimum is over
	bucketStart clock.Mono
	started     bool
}

// dispersionBucket is the length of one minimum bucket.
const dispersionBucket = 10 * time.Second

// onSample folds in the OWD sample of packet pn sent at sent; queued says
// whether it saw queueing delay.
func (d *dispersion) onSample(now clock.Mono, pn cc.PacketNumber, sent clock.Mono, owd time.Duration, queued bool) {
	if !d.started {
		d.started = true
		d.bucketStart = now
	}
	if now.Sub(d.bucketStart) >= dispersionBucket {
		// A bucket with too few pairs does not replace the last good
		// one: a paced flow whose packets no longer meet in the queue
		// (the thin-link rules keep it so) still knows its link.
		if d.nCur >= dispersionPairs {
			d.old, d.nOld = d.cur, d.nCur
		}
		d.cur, d.nCur = 0, 0
		d.bucketStart = now
	}
	arr := time.Duration(sent) + owd
	if d.havePrev && pn == d.prevPN+1 && queued {
		gap, sendGap := arr-d.prevArr, sent.Sub(d.prevSent)
		// Sent at least twice as fast as they arrived: the bottleneck,
		// not the sender, set the spacing. A pair sent far apart (a window
		// at its floor beside a buffer filler, two packets a round trip)
		// has the other flows' packets between its two in the queue, and
		// its gap is the send gap, not a packet time.
		if gap > 2*sendGap && gap > 0 {
			d.nCur++
			if d.cur == 0 || gap < d.cur {
				d.cur = gap
			}
		}
	}
	d.prevPN, d.prevSent, d.prevArr, d.havePrev = pn, sent, arr, true
}

// dispersionPairs is how many pairs a bucket's minimum must be over: one
// pair alone may be a path's delay stepping up (a route change), not a
// packet time.
const dispersionPairs = 8

// packetTime is the estimate, 0 while unknown.
func (d *dispersion) packetTime() time.Duration {
	var pt time.Duration
	if d.nCur >= dispersionPairs {
		pt = d.cur
	}
	if d.nOld >= dispersionPairs && (pt == 0 || d.old < pt) {
		pt = d.old
	}
	return pt
}
