package session

import "time"

// owdStats keeps Stats.MinOWD and CurOWD for controllers that do not track
// one-way delay themselves (cubic, reno, …): every connection's ACKs carry
// the receiver's OWD samples whatever the controller, and a user comparing
// controllers wants the same columns for all. min is the smallest trusted
// sample since the connection opened; cur the smallest of the last four
// (the noise filter of the owd analyzer's OWDcur).
type owdStats struct {
	min    time.Duration
	recent [4]time.Duration
	n      int // samples seen (for the ring)
}

// add records one OWD sample; untrusted ones (clocks not yet synced) are
// skipped, as the owd controller skips them.
func (o *owdStats) add(owd time.Duration, trusted bool) {
	if !trusted || owd < 0 {
		return
	}
	if o.n == 0 || owd < o.min {
		o.min = owd
	}
	o.recent[o.n%len(o.recent)] = owd
	o.n++
}

// current is the minimum of the last four samples (0 before the first).
func (o *owdStats) current() time.Duration {
	k := min(o.n, len(o.recent))
	if k == 0 {
		return 0
	}
	cur := o.recent[0]
	for _, v := range o.recent[1:k] {
		cur = min(cur, v)
	}
	return cur
}
