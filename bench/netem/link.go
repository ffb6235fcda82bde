package netem

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// Queue discipline names, as in the scenario file's "discipline".
const (
	DisciplineFIFO    = "fifo"
	DisciplineCoDel   = "codel"
	DisciplineFQCoDel = "fq_codel"
	DisciplineCake    = "cake"
	DisciplineWMM     = "wmm"
)

// QueueConfig chooses and configures the link's queue discipline. Fields a
// discipline does not use are ignored; zero fields take each discipline's
// defaults.
type QueueConfig struct {
	// Discipline is DisciplineFIFO (also for ""), DisciplineCoDel,
	// DisciplineFQCoDel, DisciplineCake or DisciplineWMM.
	Discipline string
	Limit      int           // packets (all; per access category for wmm, see ACLimit)
	LimitBytes int           // bytes (all; per access category for wmm)
	Target     time.Duration // CoDel target (codel, fq_codel, cake, wmm with codel)
	Interval   time.Duration // CoDel interval (codel, fq_codel, cake, wmm with codel)
	Quantum    int           // DRR quantum, bytes (fq_codel, cake)
	Flows      int           // flow queues (fq_codel; per tin for cake)
	ACQueue    WMMQueue      // queue in each access category (wmm; "": fifo)
	ACLimit    int           // packets per access category (wmm; 0: Limit)
}

// GilbertElliott is the two-state burst-loss model: in the good state a
// packet is lost with probability LossGood, in the bad state with LossBad;
// after each packet the chain moves good→bad with probability P and
// bad→good with probability R (so a bad spell lasts 1/R packets on
// average, and the chain is bad a fraction P/(P+R) of the time).
type GilbertElliott = scenario.GilbertElliott

// LinkConfig describes one direction of a bottleneck link.
type LinkConfig struct {
	// Rate is the serialization rate in bit/s (required).
	Rate cc.Bandwidth
	// Delay is the one-way propagation delay.
	Delay time.Duration
	// Jitter adds a uniform random delay in [0, Jitter] per packet,
	// without reordering (see the package doc).
	Jitter time.Duration
	// Loss is the Bernoulli probability, 0..1, that a packet is lost at
	// the link's ingress.
	Loss float64
	// GE, if non-nil, adds Gilbert–Elliott burst loss at the ingress; a
	// packet is lost if either model loses it.
	GE *GilbertElliott
	// Queue is the bottleneck queue discipline.
	Queue QueueConfig
	// Seed seeds every random choice of the link (loss, burst loss,
	// jitter, the flow hash): the same Seed and the same calls give the
	// same result. Give the two directions of a path different seeds.
	Seed uint64
}

// LinkConfigFromPath converts one direction of a scenario into a link
// config. p should have been validated (scenario.Parse does it); NewLink
// checks the result again.
func LinkConfigFromPath(p scenario.Path, seed uint64) LinkConfig {
	cfg := LinkConfig{
		Rate:   p.Rate.Bandwidth(),
		Delay:  p.Delay.D(),
		Jitter: p.Jitter.D(),
		Loss:   p.Loss,
		Queue: QueueConfig{
			Discipline: p.Queue.Discipline,
			Limit:      p.Queue.Limit,
			LimitBytes: p.Queue.LimitBytes,
			Target:     p.Queue.Target.D(),
			Interval:   p.Queue.Interval.D(),
			Quantum:    p.Queue.Quantum,
			Flows:      p.Queue.Flows,
			ACQueue:    WMMQueue(p.Queue.ACQueue),
			ACLimit:    p.Queue.ACLimit,
		},
		Seed: seed,
	}
	if p.GE != nil {
		ge := *p.GE
		cfg.GE = &ge
	}
	return cfg
}

func validProb(name string, v float64) error {
	if !(v >= 0 && v <= 1) { // also rejects NaN
		return invalid("%s %v outside 0..1", name, v)
	}
	return nil
}

func (c *LinkConfig) validate() error {
	if c.Rate == 0 {
		return invalid("rate is required")
	}
	if c.Delay < 0 {
		return invalid("delay %v is negative", c.Delay)
	}
	if c.Jitter < 0 {
		return invalid("jitter %v is negative", c.Jitter)
	}
	if err := validProb("loss", c.Loss); err != nil {
		return err
	}
	if ge := c.GE; ge != nil {
		for _, v := range []struct {
			name string
			v    float64
		}{{"gilbert_elliott p", ge.P}, {"gilbert_elliott r", ge.R}, {"gilbert_elliott loss_good", ge.LossGood}, {"gilbert_elliott loss_bad", ge.LossBad}} {
			if err := validProb(v.name, v.v); err != nil {
				return err
			}
		}
	}
	return nil
}

// newQueue builds the discipline cfg names.
func newQueue(cfg LinkConfig, drop DropFunc) (Queue, error) {
	q := cfg.Queue
	switch q.Discipline {
	case "", DisciplineFIFO:
		return NewFIFO(FIFOConfig{Limit: q.Limit, LimitBytes: q.LimitBytes}, drop)
	case DisciplineCoDel:
		return NewCoDel(CoDelConfig{Limit: q.Limit, LimitBytes: q.LimitBytes, Target: q.Target, Interval: q.Interval}, drop)
	case DisciplineFQCoDel:
		return NewFQCoDel(FQCoDelConfig{
			Limit: q.Limit, LimitBytes: q.LimitBytes, Flows: q.Flows, Quantum: q.Quantum,
			Target: q.Target, Interval: q.Interval, HashSeed: cfg.Seed,
		}, drop)
	case DisciplineCake:
		return NewCake(CakeConfig{
			Rate: cfg.Rate, Limit: q.Limit, LimitBytes: q.LimitBytes, Flows: q.Flows, Quantum: q.Quantum,
			Target: q.Target, Interval: q.Interval, HashSeed: cfg.Seed,
		}, drop)
	case DisciplineWMM:
		limit := q.Limit
		if q.ACLimit != 0 {
			limit = q.ACLimit
		}
		return NewWMM(WMMConfig{
			ACQueue: q.ACQueue, Limit: limit, LimitBytes: q.LimitBytes,
			Target: q.Target, Interval: q.Interval,
		}, drop)
	}
	return nil, invalid("queue discipline %q: want %s, %s, %s, %s or %s",
		q.Discipline, DisciplineFIFO, DisciplineCoDel, DisciplineFQCoDel, DisciplineCake, DisciplineWMM)
}

// LinkStats are a link's counters since NewLink.
type LinkStats struct {
	// Enqueued counts packets offered to Enqueue (before random loss).
	Enqueued uint64
	// Delivered and DeliveredBytes count packets returned by Poll.
	Delivered      uint64
	DeliveredBytes uint64
	// Drops by reason: random (Bernoulli or Gilbert–Elliott, at the
	// ingress), overflow (queue limit), AQM (CoDel at dequeue).
	DroppedRandom   uint64
	DroppedOverflow uint64
	DroppedAQM      uint64
	// BusyTime is how long the transmitter has been serializing, up to
	// the latest now the link was given; BusyTime / elapsed time is the
	// link utilisation.
	BusyTime time.Duration
	// MaxBacklog and MaxBacklogBytes are the largest queue backlog seen
	// (after the transmitter took what it could at that instant; the
	// packet being serialized is not in the queue).
	MaxBacklog      int
	MaxBacklogBytes int
	// Backlog and BacklogBytes are the queue's current backlog.
	Backlog      int
	BacklogBytes int
	// InFlight counts packets past the queue and not yet delivered: the
	// one being serialized, those propagating, and those arrived but not
	// yet polled.
	InFlight int
}

// rng stream identifiers: each random process has its own PCG stream, so
// turning jitter on does not change which packets are lost, and so on.
const (
	streamLoss = iota + 1
	streamGE
	streamJitter
)

// Link is a bottleneck link: random loss at the ingress, a queue
// discipline, a transmitter serializing at Rate, then a propagation delay
// line with jitter. Sans-I/O and single-threaded: the caller passes now to
// every call, and now must be non-decreasing (a smaller now is taken as
// the latest now seen). Results do not depend on how often or how late
// the caller calls Poll: internally every call first replays the link's
// own events (transmissions completing, the next dequeue) at their exact
// times up to now.
type Link struct {
	cfg  LinkConfig
	q    Queue
	cake *Cake // q, when the discipline is cake (it needs SetRate)
	drop DropFunc

	lossRNG, geRNG, jitterRNG *rand.Rand
	geBad                     bool // Gilbert–Elliott chain is in the bad state

	now clock.Mono // latest now seen; the link's events are done up to it

	tx      *Packet    // packet being serialized, nil when idle
	txStart clock.Mono // when tx started serializing
	txEnd   clock.Mono // when tx is fully serialized

	delayLine   ring[*Packet] // serialized packets by ArrivedAt, non-decreasing
	lastArrival clock.Mono    // ArrivedAt of the last packet put in delayLine

	busyDone time.Duration // serialization time of completed transmissions
	st       LinkStats
}

// NewLink validates cfg and returns an idle, empty link. onDrop (may be
// nil) is told of every dropped packet; it must not call into the link.
func NewLink(cfg LinkConfig, onDrop DropFunc) (*Link, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("netem link: %w", err)
	}
	if cfg.GE != nil {
		ge := *cfg.GE
		cfg.GE = &ge // private copy: the caller may reuse theirs
	}
	l := &Link{
		cfg:       cfg,
		lossRNG:   rand.New(rand.NewPCG(cfg.Seed, streamLoss)),
		geRNG:     rand.New(rand.NewPCG(cfg.Seed, streamGE)),
		jitterRNG: rand.New(rand.NewPCG(cfg.Seed, streamJitter)),
		now:       math.MinInt64,
	}
	user := onDrop
	l.drop = func(now clock.Mono, p *Packet, why DropReason) {
		switch why {
		case DropRandom:
			l.st.DroppedRandom++
		case DropOverflow:
			l.st.DroppedOverflow++
		case DropAQM:
			l.st.DroppedAQM++
		}
		if user != nil {
			user(now, p, why)
		}
	}
	q, err := newQueue(cfg, l.drop)
	if err != nil {
		return nil, fmt.Errorf("netem link: %w", err)
	}
	l.q = q
	l.cake, _ = q.(*Cake)
	return l, nil
}

// Config returns the link's current configuration (with the changes made
// by the setters). It is a copy: changing it does not change the link.
func (l *Link) Config() LinkConfig {
	c := l.cfg
	if c.GE != nil {
		ge := *c.GE
		c.GE = &ge
	}
	return c
}

// TxTime is the serialization time of size bytes at rate: size·8/rate,
// rounded up to the nanosecond so the link never exceeds its rate.
func TxTime(size int, rate cc.Bandwidth) time.Duration {
	if size <= 0 || rate == 0 {
		return 0
	}
	bits := uint64(size) * 8 * uint64(time.Second)
	return time.Duration((bits + uint64(rate) - 1) / uint64(rate))
}

// advance runs the link's own events up to now and returns the effective
// now (never below the latest seen).
func (l *Link) advance(now clock.Mono) clock.Mono {
	if now < l.now {
		now = l.now
	}
	for l.tx != nil && !l.txEnd.After(now) {
		t := l.txEnd
		p := l.tx
		l.tx = nil
		l.busyDone += t.Sub(l.txStart)
		l.toDelayLine(t, p)
		l.startNext(t)
	}
	l.now = now
	return now
}

// toDelayLine puts p, fully serialized at t, on the propagation delay
// line. Jitter never reorders: a packet arrives no earlier than the one
// before it, ArrivedAt = max(previous ArrivedAt, t + Delay + U[0, Jitter]).
func (l *Link) toDelayLine(t clock.Mono, p *Packet) {
	d := l.cfg.Delay
	if l.cfg.Jitter > 0 {
		d += time.Duration(l.jitterRNG.Int64N(int64(l.cfg.Jitter) + 1))
	}
	at := t.Add(d)
	if l.delayLine.len() > 0 && at.Before(l.lastArrival) {
		at = l.lastArrival
	}
	p.ArrivedAt = at
	l.lastArrival = at
	l.delayLine.push(p)
}

// startNext starts serializing the queue's next packet at t, if any.
func (l *Link) startNext(t clock.Mono) {
	p := l.q.Dequeue(t)
	if p == nil {
		return
	}
	p.QueueDelay = t.Sub(p.EnqueuedAt)
	l.tx = p
	l.txStart = t
	l.txEnd = t.Add(TxTime(p.Size, l.cfg.Rate))
}

// lost draws the ingress loss decision for one packet: Bernoulli, then the
// Gilbert–Elliott chain (loss with the current state's probability, then
// one state transition per packet).
func (l *Link) lost() bool {
	lost := l.cfg.Loss > 0 && l.lossRNG.Float64() < l.cfg.Loss
	if ge := l.cfg.GE; ge != nil {
		pl := ge.LossGood
		if l.geBad {
			pl = ge.LossBad
		}
		if l.geRNG.Float64() < pl {
			lost = true
		}
		if l.geBad {
			l.geBad = l.geRNG.Float64() >= ge.R
		} else {
			l.geBad = l.geRNG.Float64() < ge.P
		}
	}
	return lost
}

// Enqueue offers p to the link at now: random loss at the ingress, then
// the queue; if the transmitter is idle the packet starts serializing at
// now. The link owns p until Poll returns it or onDrop is called with it.
func (l *Link) Enqueue(now clock.Mono, p *Packet) {
	now = l.advance(now)
	l.st.Enqueued++
	if l.lost() {
		l.drop(now, p, DropRandom)
		return
	}
	p.QueueDelay = 0
	p.EnqueuedAt = now
	l.q.Enqueue(now, p)
	if l.tx == nil {
		l.startNext(now)
	}
	l.st.MaxBacklog = max(l.st.MaxBacklog, l.q.Len())
	l.st.MaxBacklogBytes = max(l.st.MaxBacklogBytes, l.q.Bytes())
}

// Poll returns the next packet that has reached the far end by now (its
// ArrivedAt ≤ now), in order, or nil. Call it until it returns nil.
func (l *Link) Poll(now clock.Mono) *Packet {
	now = l.advance(now)
	if p := l.delayLine.peek(); p != nil && !p.ArrivedAt.After(now) {
		l.delayLine.pop()
		l.st.Delivered++
		l.st.DeliveredBytes += uint64(max(p.Size, 0))
		return p
	}
	return nil
}

// NextEvent returns the earliest time the link has something to do: the
// current transmission completes (and the next dequeue, with its AQM
// decision, happens), or the oldest packet on the delay line arrives. It
// may be at or before the latest now if an arrived packet is waiting for
// Poll. ok is false when the link is idle and empty.
func (l *Link) NextEvent() (at clock.Mono, ok bool) {
	if l.tx != nil {
		at, ok = l.txEnd, true
	}
	if p := l.delayLine.peek(); p != nil && (!ok || p.ArrivedAt.Before(at)) {
		at, ok = p.ArrivedAt, true
	}
	return at, ok
}

// SetRate changes the serialization rate at now. The packet being
// serialized finishes at the old rate; later packets use the new one.
func (l *Link) SetRate(now clock.Mono, rate cc.Bandwidth) error {
	if rate == 0 {
		return fmt.Errorf("netem link: %w", invalid("rate must be positive"))
	}
	l.advance(now)
	l.cfg.Rate = rate
	if l.cake != nil {
		l.cake.SetRate(rate)
	}
	return nil
}

// SetDelay changes the propagation delay at now for packets that finish
// serializing from now on; packets already on the delay line keep theirs.
// A shorter delay does not let later packets overtake earlier ones.
func (l *Link) SetDelay(now clock.Mono, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("netem link: %w", invalid("delay %v is negative", d))
	}
	l.advance(now)
	l.cfg.Delay = d
	return nil
}

// SetJitter changes the jitter bound at now, like SetDelay.
func (l *Link) SetJitter(now clock.Mono, j time.Duration) error {
	if j < 0 {
		return fmt.Errorf("netem link: %w", invalid("jitter %v is negative", j))
	}
	l.advance(now)
	l.cfg.Jitter = j
	return nil
}

// SetLoss changes the Bernoulli loss probability at now, for packets
// enqueued from now on.
func (l *Link) SetLoss(now clock.Mono, loss float64) error {
	if err := validProb("loss", loss); err != nil {
		return fmt.Errorf("netem link: %w", err)
	}
	l.advance(now)
	l.cfg.Loss = loss
	return nil
}

// ApplyChange applies a scenario's scheduled path change at now: each
// non-nil field through its setter. On an invalid value nothing is
// changed.
func (l *Link) ApplyChange(now clock.Mono, c scenario.PathChange) error {
	next := l.cfg
	if c.Rate != nil {
		next.Rate = c.Rate.Bandwidth()
	}
	if c.Delay != nil {
		next.Delay = c.Delay.D()
	}
	if c.Jitter != nil {
		next.Jitter = c.Jitter.D()
	}
	if c.Loss != nil {
		next.Loss = *c.Loss
	}
	if err := next.validate(); err != nil {
		return fmt.Errorf("netem link: %w", err)
	}
	l.advance(now)
	// Each setter re-validates and re-advances (a no-op now); errors are
	// impossible after validate.
	_ = l.SetRate(now, next.Rate)
	_ = l.SetDelay(now, next.Delay)
	_ = l.SetJitter(now, next.Jitter)
	_ = l.SetLoss(now, next.Loss)
	return nil
}

// Stats returns the link's counters. BusyTime counts the current
// transmission up to the latest now seen.
func (l *Link) Stats() LinkStats {
	s := l.st
	s.BusyTime = l.busyDone
	if l.tx != nil && l.now.After(l.txStart) {
		s.BusyTime += l.now.Sub(l.txStart)
	}
	s.Backlog = l.q.Len()
	s.BacklogBytes = l.q.Bytes()
	s.InFlight = l.delayLine.len()
	if l.tx != nil {
		s.InFlight++
	}
	return s
}
