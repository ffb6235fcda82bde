package netem

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// at returns the instant d after the origin.
func at(d time.Duration) clock.Mono { return clock.Mono(0).Add(d) }

func pkt(flow uint64, size int) *Packet { return &Packet{FlowKey: flow, Size: size} }

// drops records what a discipline or link dropped.
type drops struct {
	pkts    []*Packet
	times   []clock.Mono
	reasons []DropReason
}

func (d *drops) fn(now clock.Mono, p *Packet, why DropReason) {
	d.pkts = append(d.pkts, p)
	d.times = append(d.times, now)
	d.reasons = append(d.reasons, why)
}

func (d *drops) count(why DropReason) int {
	n := 0
	for _, r := range d.reasons {
		if r == why {
			n++
		}
	}
	return n
}

// sparseBesideBulk runs 12 Mbit/s of best-effort bulk (1500 B every 1 ms)
// and a sparse flow (100 B every 20 ms, marked sparseDSCP) into a 10 Mbit/s
// link with queue for 5 s, and returns each flow's mean queueing delay
// after the first second (once the bulk queue stands).
func sparseBesideBulk(t *testing.T, queue QueueConfig, sparseDSCP uint8) (sparse, bulk time.Duration) {
	t.Helper()
	const rate = 10 * cc.MbitPerSecond
	l := newLink(t, LinkConfig{Rate: rate, Delay: 10 * time.Millisecond, Queue: queue}, nil)
	var sum [2]time.Duration
	var n [2]int
	// Bulk at 12 Mbit/s (1500 B every 1 ms), sparse 100 B every 20 ms.
	for ms := 0; ms < 5000; ms++ {
		now := at(time.Duration(ms) * time.Millisecond)
		l.Enqueue(now, &Packet{FlowKey: 1, Size: 1500})
		if ms%20 == 5 {
			l.Enqueue(now, &Packet{FlowKey: 2, Size: 100, DSCP: sparseDSCP})
		}
		for p := l.Poll(now); p != nil; p = l.Poll(now) {
			if ms < 1000 {
				continue // let the queue build
			}
			i := int(p.FlowKey - 1)
			sum[i] += p.QueueDelay
			n[i]++
		}
	}
	require.NotZero(t, n[0])
	require.NotZero(t, n[1])
	return sum[1] / time.Duration(n[1]), sum[0] / time.Duration(n[0])
}
