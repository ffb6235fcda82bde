package netem

import (
	"fmt"
	"math"
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// CoDel parameters, RFC 8289 §4.3 (TARGET) and §4.4 (INTERVAL); also the
// AQM paper's Table 1 for CoDel and FQ-CoDel.
const (
	// DefaultTarget is the acceptable standing queue delay (RFC 8289 §4.3:
	// 5 % to 10 % of INTERVAL; 5 ms).
	DefaultTarget = 5 * time.Millisecond
	// DefaultInterval is the window over which the standing delay must stay
	// above target before dropping starts (RFC 8289 §4.4: on the order of a
	// worst-case RTT; 100 ms).
	DefaultInterval = 100 * time.Millisecond
	// countReuseWindow: on re-entering the dropping state within this many
	// intervals of the last drop schedule, CoDel resumes at the drop rate
	// that controlled the queue last time (RFC 8289 §5.6 pseudocode, the
	// Linux variant: 16 intervals).
	countReuseWindow = 16
)

// codelParams are one CoDel instance's parameters.
type codelParams struct {
	target   time.Duration
	interval time.Duration
}

func newCodelParams(target, interval time.Duration) (codelParams, error) {
	if target < 0 || interval < 0 {
		return codelParams{}, invalid("codel target %v and interval %v must not be negative", target, interval)
	}
	if target == 0 {
		target = DefaultTarget
	}
	if interval == 0 {
		interval = DefaultInterval
	}
	return codelParams{target: target, interval: interval}, nil
}

// codel is the state of one CoDel instance (RFC 8289 §5, "dequeue" and
// "dodequeue" of the pseudocode), kept apart from the packets it manages:
// it runs over any pktQueue, so the single-queue CoDel discipline, every
// FQ-CoDel flow queue and every CAKE flow queue share this one
// implementation. The zero value is the initial state.
type codel struct {
	// firstAboveTime is when the sojourn time, above target since the last
	// reset, will have been so for a whole interval (RFC 8289
	// first_above_time_); valid only while above is set (RFC 8289 uses 0
	// as "unset", but 0 is a valid clock.Mono here).
	firstAboveTime clock.Mono
	above          bool
	// dropping is the dropping state (RFC 8289 dropping_).
	dropping bool
	// dropNext is the time of the next scheduled drop while dropping.
	dropNext clock.Mono
	// count is the number of drops since entering the dropping state, the
	// input of the control law; lastCount its value when the dropping
	// state was last entered (for the count-reuse rule).
	count, lastCount int
}

// controlLaw returns t + interval/√count (RFC 8289 §5.5): the drop rate
// grows with the square root of the number of drops, which for TCP's
// throughput ∝ 1/√p gives a linear decrease in throughput.
func (p codelParams) controlLaw(t clock.Mono, count int) clock.Mono {
	return t.Add(time.Duration(float64(p.interval) / math.Sqrt(float64(count))))
}

// doDequeue takes the head of q and says whether it may be dropped: the
// sojourn time has been at or above target for at least an interval, and
// more than one maximum-size packet remains queued (RFC 8289 dodequeue).
func (c *codel) doDequeue(now clock.Mono, q *pktQueue, prm codelParams) (p *Packet, okToDrop bool) {
	p = q.pop()
	if p == nil {
		// Queue empty: leave the above-target state (RFC 8289).
		c.above = false
		return nil, false
	}
	sojourn := now.Sub(p.EnqueuedAt)
	if sojourn < prm.target || q.bytes <= q.maxPacket {
		// Below target, or too little left to be a standing queue (the
		// "maxpacket" rule: never drop the last MTU of the queue).
		c.above = false
		return p, false
	}
	if !c.above {
		c.above = true
		c.firstAboveTime = now.Add(prm.interval)
		return p, false
	}
	return p, !now.Before(c.firstAboveTime)
}

// dequeue returns the next packet of q to transmit at now, dropping
// (DropAQM through drop) what the control law says (RFC 8289 dequeue).
func (c *codel) dequeue(now clock.Mono, q *pktQueue, prm codelParams, drop DropFunc) *Packet {
	p, ok := c.doDequeue(now, q, prm)
	if c.dropping {
		if !ok {
			// Sojourn went below target (or the queue emptied).
			c.dropping = false
		}
		// A large backlog may call for several drops now, hence the loop.
		for c.dropping && !now.Before(c.dropNext) {
			drop(now, p, DropAQM)
			c.count++
			p, ok = c.doDequeue(now, q, prm)
			if !ok {
				c.dropping = false
			} else {
				c.dropNext = prm.controlLaw(c.dropNext, c.count)
			}
		}
		return p
	}
	if ok {
		// Above target for a whole interval: drop and enter dropping.
		drop(now, p, DropAQM)
		p, _ = c.doDequeue(now, q, prm)
		c.dropping = true
		// Count reuse (RFC 8289 §5.6 pseudocode, Linux variant): if the
		// last dropping cycle ended recently, start from the drop rate
		// that controlled the queue then rather than from scratch.
		// dropNext is at most an interval after the last drop, so
		// now − dropNext approximates the time since the last drop.
		delta := c.count - c.lastCount
		c.count = 1
		if delta > 1 && now.Sub(c.dropNext) < countReuseWindow*prm.interval {
			c.count = delta
		}
		c.dropNext = prm.controlLaw(now, c.count)
		c.lastCount = c.count
	}
	return p
}

// CoDelConfig configures the single-queue CoDel discipline.
type CoDelConfig struct {
	// Limit and LimitBytes cap the queue (tail drop beyond them, as the
	// Linux codel qdisc). Both zero: DefaultLimit packets.
	Limit      int
	LimitBytes int
	// Target and Interval are RFC 8289's (0: DefaultTarget, DefaultInterval).
	Target   time.Duration
	Interval time.Duration
}

// CoDel is RFC 8289 Controlled Delay over one FIFO: tail drop at the limit
// on enqueue, CoDel drops at dequeue.
type CoDel struct {
	lim  limits
	prm  codelParams
	st   codel
	q    pktQueue
	drop DropFunc
}

var _ Queue = (*CoDel)(nil)

// NewCoDel returns an empty CoDel queue. onDrop may be nil.
func NewCoDel(cfg CoDelConfig, onDrop DropFunc) (*CoDel, error) {
	lim, err := newLimits(cfg.Limit, cfg.LimitBytes)
	if err != nil {
		return nil, fmt.Errorf("codel: %w", err)
	}
	prm, err := newCodelParams(cfg.Target, cfg.Interval)
	if err != nil {
		return nil, fmt.Errorf("codel: %w", err)
	}
	return &CoDel{lim: lim, prm: prm, drop: dropOrNop(onDrop)}, nil
}

// Enqueue timestamps and appends p, or tail-drops it at the limit.
func (c *CoDel) Enqueue(now clock.Mono, p *Packet) {
	if c.lim.over(c.q.len()+1, c.q.bytes+p.Size) {
		c.drop(now, p, DropOverflow)
		return
	}
	p.EnqueuedAt = now
	c.q.push(p)
}

// Dequeue returns the next packet after CoDel's drops, or nil.
func (c *CoDel) Dequeue(now clock.Mono) *Packet {
	return c.st.dequeue(now, &c.q, c.prm, c.drop)
}

// Len is the backlog in packets.
func (c *CoDel) Len() int { return c.q.len() }

// Bytes is the backlog in bytes.
func (c *CoDel) Bytes() int { return c.q.bytes }

// Dropping reports whether CoDel is in its dropping state.
func (c *CoDel) Dropping() bool { return c.st.dropping }
