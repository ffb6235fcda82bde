package acp

import (
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// bucketClock is the rotation the windowed extremes of this package share
// (the base delay's minimum, the delivery rate's maximum): a ring of
// buckets, each holding the extreme of its interval, as LEDBAT keeps its
// base delay history (RFC 6817 §4.2) and BBR its windowed max filter. A
// bucket's zero value means "no sample", so the zero bucketClock over a
// zeroed array is an empty window.
type bucketClock struct {
	cur     int        // the bucket being filled
	since   clock.Mono // when it began
	started bool
}

// advance moves the ring to the bucket of now, emptying every bucket an
// interval passes on the way (at most all of them), and returns the index
// of now's bucket. After an idle spell longer than the whole ring the
// current bucket starts at now.
func advance[T time.Duration | float64](c *bucketClock, vals []T, now clock.Mono, interval time.Duration) int {
	if !c.started {
		c.started, c.since = true, now
	}
	for n := 0; now.Sub(c.since) >= interval && n < len(vals); n++ {
		c.cur = (c.cur + 1) % len(vals)
		vals[c.cur] = 0
		c.since = c.since.Add(interval)
	}
	if now.Sub(c.since) >= interval { // idle longer than the ring
		c.since = now
	}
	return c.cur
}
