package netem

import (
	"time"

	"github.com/fresh-udp/fresh/bench/traces"
	"github.com/fresh-udp/fresh/clock"
)

// A trace-driven link replaces the transmitter's fixed rate by a schedule
// of delivery opportunities, as Mahimahi's mm-link does (R. Netravali et
// al., "Mahimahi: Accurate Record-and-Replay for HTTP", USENIX ATC 2015;
// the trace format is in bench/traces). mm-link's link queue, which we
// follow:
//
//   - At each opportunity up to traces.OpportunityBytes (1500) bytes of
//     queued packets cross. A packet larger than what is left of the
//     opportunity is carried partly by it and finishes in a later one.
//     Bytes of an opportunity with nothing (more) to carry are wasted:
//     capacity is never banked for later.
//   - A packet leaves the queue — the discipline's dequeue, CoDel's
//     sojourn decision, Packet.QueueDelay — at the opportunity that starts
//     carrying it, and reaches the far end at the opportunity that finishes
//     it plus the propagation delay (and jitter).
//   - Opportunities at the same instant as an Enqueue happen before it
//     (mm-link runs its schedule up to now before it queues a packet), so a
//     packet never rides an opportunity of the instant it arrives at.
//   - The trace starts at the link's first now (or at the change that
//     switched to it) from its start offset, and repeats with its period.
//
// mm-link's opportunity is 1504 bytes because it counts the 4-byte header
// of a TUN device; ours carries 1500 bytes of IP packet.

// opportunities is the replay state of one trace: the next opportunity's
// time and how many more occur at that instant, and the bytes offered and
// used since the replay began (for utilisation).
type opportunities struct {
	cur    traces.Cursor
	period time.Duration
	origin clock.Mono // when the replay began
	zero   clock.Mono // the instant of trace time 0 of the cursor's first pass (origin − start offset)
	next   clock.Mono // instant of the next opportunity
	left   int64      // opportunities at next not yet used (≥ 1)

	offered, used int64 // bytes since origin: opportunities passed ×1500, and those that carried data
}

// newOpportunities starts replaying tr at origin, from offset into it.
func newOpportunities(tr *traces.Trace, origin clock.Mono, offset time.Duration) *opportunities {
	cur, off := tr.Start(offset)
	o := &opportunities{cur: cur, period: tr.Period(), origin: origin, zero: origin.Add(-time.Duration(off))}
	o.load()
	return o
}

// load moves to the cursor's next run of opportunities.
func (o *opportunities) load() {
	ms, n := o.cur.Next()
	o.next = o.zero.Add(time.Duration(ms) * time.Millisecond)
	o.left = n
}

// take uses up the opportunity at o.next.
func (o *opportunities) take() {
	o.offered += traces.OpportunityBytes
	if o.left--; o.left == 0 {
		o.load()
	}
}

// skip wastes every opportunity at or before now: the link is idle. A gap
// of whole periods is jumped at once (the schedule repeats), so a link idle
// for an hour does not walk an hour of trace.
func (o *opportunities) skip(now clock.Mono) {
	if gap := now.Sub(o.next); gap >= o.period {
		k := uint64(gap / o.period)
		o.offered += o.cur.SkipPeriods(k) * traces.OpportunityBytes
		o.next = o.next.Add(time.Duration(k) * o.period)
	}
	for !o.next.After(now) {
		o.offered += o.left * traces.OpportunityBytes
		o.load()
	}
}

// carry uses the opportunity at at: it carries up to 1500 bytes of the
// packet on the wire and then of the queue's next packets, dequeuing each
// at at. A packet finished by it goes on the delay line from at; if a
// capacity change is pending, it takes effect the moment the packet on the
// wire is done, and the rest of the opportunity is lost with the trace.
func (l *Link) carry(at clock.Mono) {
	o := l.opp
	o.take()
	budget := traces.OpportunityBytes
	for budget > 0 {
		if l.tx == nil {
			p := l.q.Dequeue(at)
			if p == nil {
				return // nothing queued: the rest is wasted
			}
			p.QueueDelay = at.Sub(p.EnqueuedAt)
			l.tx, l.txStart, l.txLeft = p, at, max(p.Size, 0)
		}
		n := min(budget, l.txLeft)
		budget -= n
		l.txLeft -= n
		o.used += int64(n)
		if l.txLeft > 0 {
			return // the packet goes on in a later opportunity
		}
		p := l.tx
		l.tx = nil
		l.toDelayLine(at, p)
		if l.pending != nil {
			l.switchPending(at)
			return
		}
	}
}
