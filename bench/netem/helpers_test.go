package netem

import (
	"time"

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
