package netem

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/bench/traces"
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

// LinkConfig describes one direction of a bottleneck link. Its capacity
// is exactly one of Rate, Trace and RateWalk.
type LinkConfig struct {
	// Rate is the serialization rate in bit/s.
	Rate cc.Bandwidth
	// Trace, instead of Rate, replays a Mahimahi trace as the link's
	// delivery opportunities (opportunity.go; not with cake).
	Trace *traces.Trace
	// TraceStart is where in Trace the replay begins, modulo its period;
	// TraceStartRandom instead draws it uniformly over the period from
	// Seed.
	TraceStart       time.Duration
	TraceStartRandom bool
	// RateWalk, instead of Rate, draws the rate at random now and then
	// (ratewalk.go), from Seed.
	RateWalk *RateWalk
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
	// Corrupt is the Bernoulli probability, 0..1, that a packet that
	// enters the link (and is not lost) has one bit of its Data flipped,
	// at a position drawn uniformly over Data: a bit error the path's
	// checksums did not catch. CorruptGE, if non-nil, adds
	// Gilbert–Elliott bursts of corruption (LossGood and LossBad are the
	// corruption probabilities of its states); a packet is corrupted if
	// either model says so. See the package doc, "Corruption".
	Corrupt   float64
	CorruptGE *GilbertElliott
	// Queue is the bottleneck queue discipline.
	Queue QueueConfig
	// Seed seeds every random choice of the link (loss, burst loss,
	// jitter, the flow hash): the same Seed and the same calls give the
	// same result. Give the two directions of a path different seeds.
	Seed uint64

	err error // LinkConfigFromPath could not load the path's trace
}

// LinkConfigFromPath converts one direction of a scenario into a link
// config. p should have been validated (scenario.Parse does it, and loads
// its trace); NewLink checks the result again. A path with a trace that was
// never validated has its trace loaded here (a relative name from the
// working directory, then the repository root); if that fails, NewLink
// returns the error.
func LinkConfigFromPath(p scenario.Path, seed uint64) LinkConfig {
	cfg := LinkConfig{
		Rate:             p.Rate.Bandwidth(),
		TraceStart:       p.TraceStart.Offset.D(),
		TraceStartRandom: p.TraceStart.Random,
		Delay:            p.Delay.D(),
		Jitter:           p.Jitter.D(),
		Loss:             p.Loss,
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
	cfg.GE = cloneGE(p.GE)
	cfg.Corrupt = p.Corrupt
	cfg.CorruptGE = cloneGE(p.CorruptGE)
	if p.Trace != "" {
		cfg.Trace = p.TraceData
		if cfg.Trace == nil {
			cfg.Trace, cfg.err = scenario.LoadTrace(p.Trace, "")
		}
	}
	if p.RateWalk != nil {
		w := *p.RateWalk
		cfg.RateWalk = &w
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
	if c.err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, c.err)
	}
	switch n := btoi(c.Rate != 0) + btoi(c.Trace != nil) + btoi(c.RateWalk != nil); {
	case n == 0:
		return invalid("a rate, a trace or a rate walk is required")
	case n > 1:
		return invalid("give only one of rate, trace and rate walk")
	}
	if c.RateWalk != nil {
		if err := c.RateWalk.Validate(); err != nil {
			return invalid("%v", err)
		}
	}
	if c.Trace != nil && c.Queue.Discipline == DisciplineCake {
		return invalid("cake needs a rate for its shaper and tin thresholds; a trace link has none (use fq_codel, or a rate)")
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
	if err := validProb("corrupt", c.Corrupt); err != nil {
		return err
	}
	for _, g := range []struct {
		name string
		ge   *GilbertElliott
	}{{"gilbert_elliott", c.GE}, {"corrupt_gilbert_elliott", c.CorruptGE}} {
		if g.ge == nil {
			continue
		}
		for _, v := range []struct {
			name string
			v    float64
		}{{"p", g.ge.P}, {"r", g.ge.R}, {"loss_good", g.ge.LossGood}, {"loss_bad", g.ge.LossBad}} {
			if err := validProb(g.name+" "+v.name, v.v); err != nil {
				return err
			}
		}
		if g.ge.Length < 0 {
			return invalid("%s length %d is negative", g.name, g.ge.Length)
		}
	}
	return nil
}

// cloneGE is a private copy of ge (nil for nil): a link keeps its own, so
// a caller may reuse theirs.
func cloneGE(ge *GilbertElliott) *GilbertElliott {
	if ge == nil {
		return nil
	}
	c := *ge
	return &c
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// newQueue builds the discipline cfg names.
func newQueue(cfg LinkConfig, drop DropFunc) (Queue, error) {
	q := cfg.Queue
	rate := cfg.Rate
	if cfg.RateWalk != nil {
		rate = cfg.RateWalk.Min.Bandwidth() // until the walk's first draw (Link.start)
	}
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
			Rate: rate, Limit: q.Limit, LimitBytes: q.LimitBytes, Flows: q.Flows, Quantum: q.Quantum,
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
	// Corrupted counts packets that had a bit flipped at the ingress
	// (Corrupt, CorruptGE); they go on, and may still be dropped later.
	Corrupted uint64
	// BusyTime is how long the transmitter has been serializing, up to
	// the latest now the link was given; BusyTime / elapsed time is the
	// link utilisation. While a trace drives the link a serializing time
	// is not defined, so the utilisation of that time is the fraction of
	// the delivery opportunities' bytes that carried data (those wasted
	// with nothing queued count as idle): BusyTime adds TraceTime ·
	// CarriedBytes / OfferedBytes. A saturated trace link is then 100 %
	// busy, as a saturated fixed-rate link is. That part is a share of
	// the time, recomputed as opportunities pass, so it can fall while
	// opportunities go unused; for the utilisation of a window that does
	// not start with the link, use BusySince.
	BusyTime time.Duration
	// TraceTime is how long traces have driven the link; OfferedBytes the
	// bytes their delivery opportunities offered meanwhile (1500 each),
	// CarriedBytes those that carried packets.
	TraceTime                  time.Duration
	OfferedBytes, CarriedBytes uint64
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
	streamTraceStart // random trace start offsets
	streamRateWalk
	streamCorrupt   // Bernoulli corruption, and which bit
	streamCorruptGE // the corruption's Gilbert–Elliott chain
)

// capacity is what carries packets: a fixed rate, a rate walk or a trace
// (with the offset its replay starts from, random draws already made).
type capacity struct {
	rate       cc.Bandwidth
	walk       *RateWalk
	trace      *traces.Trace
	traceStart time.Duration
}

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

	lossRNG, jitterRNG, corruptRNG *rand.Rand
	startRNG, walkRNG              *rand.Rand
	ge, corruptGE                  geChain // burst loss, burst corruption

	now     clock.Mono // latest now seen; the link's events are done up to it
	started bool       // the capacity process runs (from the first now)

	// The capacity in force: rate (rate and walk), walk (non-nil while the
	// rate walks) or opp (non-nil while a trace drives the link). initial
	// is cfg's, installed at the first now; pending is a change that
	// waits for the packet on the wire to be done.
	rate    cc.Bandwidth
	walk    *rateWalk
	opp     *opportunities
	initial capacity
	pending *capacity

	tx      *Packet    // packet being serialized (carried, on a trace), nil when idle
	txStart clock.Mono // when tx started serializing
	txEnd   clock.Mono // when tx is fully serialized (fixed rate)
	txLeft  int        // bytes of tx not yet carried (trace)

	delayLine   ring[*Packet] // serialized packets by ArrivedAt, non-decreasing
	lastArrival clock.Mono    // ArrivedAt of the last packet put in delayLine

	busyDone  time.Duration // serialization time of completed transmissions
	traceDone time.Duration // time of traces replaced by a change
	offered   uint64        // bytes offered and carried by those traces
	carried   uint64
	st        LinkStats
}

// NewLink validates cfg and returns an idle, empty link. onDrop (may be
// nil) is told of every dropped packet; it must not call into the link.
func NewLink(cfg LinkConfig, onDrop DropFunc) (*Link, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("netem link: %w", err)
	}
	cfg.GE, cfg.CorruptGE = cloneGE(cfg.GE), cloneGE(cfg.CorruptGE)
	l := &Link{
		cfg:        cfg,
		lossRNG:    rand.New(rand.NewPCG(cfg.Seed, streamLoss)),
		jitterRNG:  rand.New(rand.NewPCG(cfg.Seed, streamJitter)),
		corruptRNG: rand.New(rand.NewPCG(cfg.Seed, streamCorrupt)),
		startRNG:   rand.New(rand.NewPCG(cfg.Seed, streamTraceStart)),
		walkRNG:    rand.New(rand.NewPCG(cfg.Seed, streamRateWalk)),
		ge:         geChain{cfg: cfg.GE, rng: rand.New(rand.NewPCG(cfg.Seed, streamGE))},
		corruptGE:  geChain{cfg: cfg.CorruptGE, rng: rand.New(rand.NewPCG(cfg.Seed, streamCorruptGE))},
		now:        math.MinInt64,
	}
	l.initial = l.capacityOf(cfg)
	l.rate = cfg.Rate
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
	c.GE, c.CorruptGE = cloneGE(c.GE), cloneGE(c.CorruptGE)
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

// capacityOf is cfg's capacity, with a random trace start drawn.
func (l *Link) capacityOf(cfg LinkConfig) capacity {
	c := capacity{rate: cfg.Rate, walk: cfg.RateWalk, trace: cfg.Trace, traceStart: cfg.TraceStart}
	if c.trace != nil && cfg.TraceStartRandom {
		c.traceStart = time.Duration(l.startRNG.Int64N(int64(c.trace.Period())))
	}
	return c
}

// advance runs the link's own events up to now and returns the effective
// now (never below the latest seen).
func (l *Link) advance(now clock.Mono) clock.Mono {
	if now < l.now {
		now = l.now
	}
	if !l.started {
		// The capacity process (a trace, a rate walk) starts at the first
		// now the link is given, as mm-link's trace starts when the link
		// is created.
		l.started = true
		l.install(now, l.initial)
	}
	for {
		if l.opp != nil {
			if l.tx == nil && l.q.Len() == 0 {
				l.opp.skip(now) // idle: opportunities are wasted, never banked
				break
			}
			if l.opp.next.After(now) {
				break
			}
			l.carry(l.opp.next)
			continue
		}
		if l.tx == nil || l.txEnd.After(now) {
			break
		}
		t := l.txEnd
		p := l.tx
		l.tx = nil
		l.busyDone += t.Sub(l.txStart)
		l.toDelayLine(t, p)
		if l.pending != nil {
			l.switchPending(t)
			continue
		}
		l.startNext(t)
	}
	l.walkTo(now)
	l.now = now
	return now
}

// install makes c the link's capacity from at. It closes the account of
// a trace being replaced; it does not start a transmission.
func (l *Link) install(at clock.Mono, c capacity) {
	if l.opp != nil {
		l.traceDone += at.Sub(l.opp.origin)
		l.offered += uint64(l.opp.offered)
		l.carried += uint64(l.opp.used)
		l.opp = nil
	}
	l.walk = nil
	switch {
	case c.trace != nil:
		l.opp = newOpportunities(c.trace, at, c.traceStart)
	case c.walk != nil:
		l.walk = newRateWalk(*c.walk, l.walkRNG, at)
		l.setRate(l.walk.rate)
	default:
		l.setRate(c.rate)
	}
}

// switchPending installs the pending change at at, the moment the packet
// on the wire is done, and starts the next transmission at a fixed rate.
func (l *Link) switchPending(at clock.Mono) {
	c := *l.pending
	l.pending = nil
	l.install(at, c)
	if l.opp == nil {
		l.startNext(at)
	}
}

// setRate sets the fixed rate (and CAKE's, which its thresholds follow).
func (l *Link) setRate(rate cc.Bandwidth) {
	l.rate = rate
	if l.cake != nil {
		l.cake.SetRate(rate)
	}
}

// walkTo replays the rate walk, if any, up to t.
func (l *Link) walkTo(t clock.Mono) {
	if l.walk != nil && l.walk.to(t) {
		l.setRate(l.walk.rate)
	}
}

// change makes c the capacity at now (after advance). A fixed rate or a
// walk is read only when a packet is dequeued, so between those the change
// is immediate: the packet being serialized finishes at the old rate. A
// packet being carried by a trace, or serialized when the link switches
// to a trace, is finished first: the change takes effect the moment it
// is done. The latest pending change wins.
func (l *Link) change(now clock.Mono, c capacity) {
	if l.tx == nil || (l.opp == nil && c.trace == nil) {
		l.pending = nil
		l.install(now, c)
		if l.opp == nil && l.tx == nil {
			l.startNext(now) // a trace's queue may be waiting
		}
		return
	}
	l.pending = &c
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

// startNext starts serializing the queue's next packet at t, if any, at
// the fixed rate (or the walk's rate at t).
func (l *Link) startNext(t clock.Mono) {
	l.walkTo(t)
	p := l.q.Dequeue(t)
	if p == nil {
		return
	}
	p.QueueDelay = t.Sub(p.EnqueuedAt)
	l.tx = p
	l.txStart = t
	l.txEnd = t.Add(TxTime(p.Size, l.rate))
}

// geChain is one Gilbert–Elliott chain: its configuration (nil: none),
// its state and its random stream.
type geChain struct {
	cfg *GilbertElliott
	bad bool // the chain is in the bad state
	// left is how many packets of a fixed-length bad spell (cfg.Length)
	// are still to come, this one included.
	left int
	rng  *rand.Rand
}

// hit draws the chain's decision for one packet (true with the current
// state's probability), then makes one state transition: bad→good with
// R, or after Length packets of the bad state if Length is set.
func (g *geChain) hit() bool {
	ge := g.cfg
	if ge == nil {
		return false
	}
	if ge.Length > 0 {
		g.bad = g.left > 0
	}
	p := ge.LossGood
	if g.bad {
		p = ge.LossBad
	}
	hit := g.rng.Float64() < p
	switch {
	case ge.Length > 0 && g.bad:
		g.left--
	case ge.Length > 0:
		if g.rng.Float64() < ge.P {
			g.left = ge.Length
		}
	case g.bad:
		g.bad = g.rng.Float64() >= ge.R
	default:
		g.bad = g.rng.Float64() < ge.P
	}
	return hit
}

// lost draws the ingress loss decision for one packet: Bernoulli, then the
// Gilbert–Elliott chain (loss with the current state's probability, then
// one state transition per packet).
func (l *Link) lost() bool {
	lost := l.cfg.Loss > 0 && l.lossRNG.Float64() < l.cfg.Loss
	if l.ge.hit() {
		lost = true
	}
	return lost
}

// corrupt draws the corruption decision for a packet that entered the
// link, as lost does the loss decision, and flips one bit of its Data if
// it is corrupted. Both chains step for every packet that is not lost,
// whether or not it has Data.
func (l *Link) corrupt(p *Packet) {
	hit := l.cfg.Corrupt > 0 && l.corruptRNG.Float64() < l.cfg.Corrupt
	if l.corruptGE.hit() {
		hit = true
	}
	p.Corrupted = hit
	if !hit {
		return
	}
	l.st.Corrupted++
	if n := len(p.Data); n > 0 {
		bit := l.corruptRNG.IntN(8 * n)
		p.Data[bit/8] ^= 1 << (bit % 8)
	}
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
	l.corrupt(p)
	p.QueueDelay = 0
	p.EnqueuedAt = now
	l.q.Enqueue(now, p)
	if l.tx == nil && l.opp == nil {
		l.startNext(now) // a trace link waits for its next opportunity
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
// decision, happens) — on a trace link, the next delivery opportunity, if
// a packet is on the wire or queued (an idle trace link does not wake up
// for opportunities it would waste) — or the oldest packet on the delay
// line arrives. It may be at or before the latest now if an arrived packet
// is waiting for Poll. ok is false when the link is idle and empty.
func (l *Link) NextEvent() (at clock.Mono, ok bool) {
	switch {
	case l.opp != nil:
		if l.tx != nil || l.q.Len() > 0 {
			at, ok = l.opp.next, true
		}
	case l.tx != nil:
		at, ok = l.txEnd, true
	}
	if p := l.delayLine.peek(); p != nil && (!ok || p.ArrivedAt.Before(at)) {
		at, ok = p.ArrivedAt, true
	}
	return at, ok
}

// Rate is the fixed serialization rate in force (a rate walk's current
// rate, as of the latest now), or 0 while a trace drives the link.
func (l *Link) Rate() cc.Bandwidth {
	if l.opp != nil || !l.started && l.cfg.Trace != nil {
		return 0
	}
	return l.rate
}

// SetRate changes the serialization rate at now. The packet being
// serialized finishes at the old rate; later packets use the new one. On
// a trace link (or one whose rate walks) it replaces the trace (the walk)
// by the fixed rate, from the moment the packet on the wire is done.
func (l *Link) SetRate(now clock.Mono, rate cc.Bandwidth) error {
	if rate == 0 {
		return fmt.Errorf("netem link: %w", invalid("rate must be positive"))
	}
	l.advance(now)
	l.cfg.Rate, l.cfg.Trace, l.cfg.RateWalk = rate, nil, nil
	l.cfg.TraceStart, l.cfg.TraceStartRandom = 0, false
	l.change(now, capacity{rate: rate})
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
// non-nil field through its setter. A rate, trace or rate walk replaces
// the link's capacity, whichever it was (see change for when). On an
// invalid value nothing is changed.
func (l *Link) ApplyChange(now clock.Mono, c scenario.PathChange) error {
	next, err := l.changed(c)
	if err != nil {
		return err
	}
	l.advance(now)
	if c.Rate != nil || c.Trace != nil || c.RateWalk != nil {
		l.cfg.Rate, l.cfg.Trace, l.cfg.RateWalk = next.Rate, next.Trace, next.RateWalk
		l.cfg.TraceStart, l.cfg.TraceStartRandom = next.TraceStart, next.TraceStartRandom
		l.change(now, l.capacityOf(next))
	}
	// Each setter re-validates and re-advances (a no-op now); errors are
	// impossible after validate.
	_ = l.SetDelay(now, next.Delay)
	_ = l.SetJitter(now, next.Jitter)
	_ = l.SetLoss(now, next.Loss)
	return nil
}

// CheckChange reports whether ApplyChange would accept c, changing
// nothing: a driver applying a change to both directions checks both
// first.
func (l *Link) CheckChange(c scenario.PathChange) error {
	_, err := l.changed(c)
	return err
}

// changed is the configuration c would give the link, validated.
func (l *Link) changed(c scenario.PathChange) (LinkConfig, error) {
	next := l.cfg
	if c.Rate != nil || c.Trace != nil || c.RateWalk != nil {
		next.Rate, next.Trace, next.RateWalk = 0, nil, nil
		next.TraceStart, next.TraceStartRandom = 0, false
	}
	if c.Rate != nil {
		next.Rate = c.Rate.Bandwidth()
	}
	if c.Trace != nil {
		next.Trace = c.TraceData
		if next.Trace == nil {
			t, err := scenario.LoadTrace(*c.Trace, "")
			if err != nil {
				return next, fmt.Errorf("netem link: %w: %w", ErrInvalidConfig, err)
			}
			next.Trace = t
		}
		if c.TraceStart != nil {
			next.TraceStart, next.TraceStartRandom = c.TraceStart.Offset.D(), c.TraceStart.Random
		}
	}
	if c.RateWalk != nil {
		w := *c.RateWalk
		next.RateWalk = &w
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
		return next, fmt.Errorf("netem link: %w", err)
	}
	return next, nil
}

// Stats returns the link's counters. BusyTime counts the current
// transmission (or trace replay) up to the latest now seen.
func (l *Link) Stats() LinkStats {
	s := l.st
	s.BusyTime = l.busyDone
	s.TraceTime, s.OfferedBytes, s.CarriedBytes = l.traceDone, l.offered, l.carried
	switch {
	case l.opp != nil:
		if l.now.After(l.opp.origin) {
			s.TraceTime += l.now.Sub(l.opp.origin)
		}
		s.OfferedBytes += uint64(l.opp.offered)
		s.CarriedBytes += uint64(l.opp.used)
	case l.tx != nil && l.now.After(l.txStart):
		s.BusyTime += l.now.Sub(l.txStart)
	}
	s.BusyTime += s.traceBusy()
	s.Backlog = l.q.Len()
	s.BacklogBytes = l.q.Bytes()
	s.InFlight = l.delayLine.len()
	if l.tx != nil {
		s.InFlight++
	}
	return s
}

// traceBusy is the trace part of BusyTime.
func (s LinkStats) traceBusy() time.Duration {
	if s.OfferedBytes == 0 {
		return 0
	}
	return time.Duration(float64(s.TraceTime) * float64(s.CarriedBytes) / float64(s.OfferedBytes))
}

// BusySince is the busy time between prev, an earlier Stats of the same
// link, and s: the serializing time in between, plus the trace time in
// between times the fraction of the opportunities' bytes offered in between
// that carried data. BusySince / the time between them is the utilisation
// of that window (BusyTime's difference is not, on a trace link).
func (s LinkStats) BusySince(prev LinkStats) time.Duration {
	serializing := (s.BusyTime - s.traceBusy()) - (prev.BusyTime - prev.traceBusy())
	busy := max(serializing, 0)
	if off := s.OfferedBytes - prev.OfferedBytes; off > 0 && s.OfferedBytes >= prev.OfferedBytes {
		busy += time.Duration(float64(s.TraceTime-prev.TraceTime) * float64(s.CarriedBytes-prev.CarriedBytes) / float64(off))
	}
	return busy
}
