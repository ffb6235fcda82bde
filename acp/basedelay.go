package acp

import (
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// Base delay history, after LEDBAT (RFC 6817 §4.2, "base delay"): the
// smallest delay seen over the last baseBuckets intervals of baseInterval,
// kept as one minimum per interval. The queueing delay of a sample is the
// sample minus the base. The history has to be long: beside a flow that
// keeps the bottleneck queue from ever emptying (a CUBIC flow in a
// drop-tail FIFO), the only samples at the true base are the first ones,
// and a short window would mistake the neighbour's standing queue for
// path delay. A route change to a longer path is forgotten after the
// whole history, as in LEDBAT.
const (
	// baseInterval is the length of one bucket: one minute, RFC 6817's.
	baseInterval = time.Minute
	// baseBuckets is the number of buckets: 10, RFC 6817's BASE_HISTORY,
	// so the base is the minimum over the last 10 minutes.
	baseBuckets = 10
)

// baseDelay is the minimum of delay samples over the last baseBuckets
// buckets of baseInterval. The zero value is empty.
type baseDelay struct {
	mins [baseBuckets]time.Duration // per bucket; 0 = no sample
	ring bucketClock
}

// update folds in a sample taken at now (samples ≤ 0 are ignored) and
// rotates out buckets older than the history.
func (b *baseDelay) update(now clock.Mono, d time.Duration) {
	if d <= 0 {
		return
	}
	i := advance(&b.ring, b.mins[:], now, baseInterval)
	if m := b.mins[i]; m == 0 || d < m {
		b.mins[i] = d
	}
}

// min is the base delay: the smallest sample in the history (0 if none).
func (b *baseDelay) min() time.Duration {
	var m time.Duration
	for _, v := range b.mins {
		if v > 0 && (m == 0 || v < m) {
			m = v
		}
	}
	return m
}
