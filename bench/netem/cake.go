package netem

import (
	"fmt"
	"math"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// Tin is a CAKE priority class. The mapping from DSCP is CAKE's diffserv3
// (the AQM paper's Table 1: "Diffserv mode = 3"), see TinOf.
type Tin uint8

const (
	// TinVoice is the latency-sensitive tin: priority up to 25 % of the
	// link rate.
	TinVoice Tin = iota
	// TinBestEffort is the default tin: threshold 100 % of the link rate.
	TinBestEffort
	// TinBulk is the background tin: threshold 6.25 % (1/16).
	TinBulk
	numTins
)

func (t Tin) String() string {
	switch t {
	case TinVoice:
		return "voice"
	case TinBestEffort:
		return "best-effort"
	case TinBulk:
		return "bulk"
	}
	return "unknown"
}

// DSCP code points used by the tin mapping (RFC 2474, 4594, 5865, 8622).
const (
	dscpLE  = 1  // lower effort, RFC 8622
	dscpCS1 = 8  // low-priority data, RFC 4594
	dscpCS4 = 32 // real-time interactive
	dscpCS5 = 40 // signaling
	dscpVA  = 44 // voice admit, RFC 5865
	dscpEF  = 46 // expedited forwarding, RFC 3246
	dscpCS6 = 48 // network control
	dscpCS7 = 56 // reserved / network control; fresh marks updates CS7
)

// TinOf maps a DSCP to its tin as CAKE's diffserv3 does: CS7, CS6, EF, VA,
// CS5 and CS4 to voice; CS1 and LE to bulk; everything else to best effort.
func TinOf(dscp uint8) Tin {
	switch dscp & 0x3f {
	case dscpCS7, dscpCS6, dscpEF, dscpVA, dscpCS5, dscpCS4:
		return TinVoice
	case dscpCS1, dscpLE:
		return TinBulk
	}
	return TinBestEffort
}

// tinShare is each tin's bandwidth threshold as a fraction of the link rate
// (CAKE diffserv3: voice rate>>2, best effort rate, bulk rate>>4).
var tinShare = [numTins]float64{TinVoice: 0.25, TinBestEffort: 1, TinBulk: 1.0 / 16}

// tinScanOrder is the order in which in-threshold tins get priority. Bulk
// comes before best effort as in CAKE's tin scan: best effort's threshold
// is the whole link, so it is (almost) always within it, and bulk would
// otherwise starve; bulk's priority is capped at its small 6.25 % share.
var tinScanOrder = [numTins]Tin{TinVoice, TinBulk, TinBestEffort}

// CAKE's RTT presets (tc-cake(8)): target is interval/20.
const (
	// CakeLANTarget and CakeLANInterval are the "lan" preset the AQM
	// paper's Table 1 used (RTT 1 ms). Set them explicitly to reproduce it.
	CakeLANTarget   = 50 * time.Microsecond
	CakeLANInterval = 1 * time.Millisecond
	// cakeTargetMTUs: CAKE raises each tin's target to at least the time
	// to send 1.5 MTU at the tin's rate, so CoDel is not over-aggressive at
	// low rates where one packet takes longer than target to serialize.
	cakeTargetMTUs = 1.5
	cakeMTU        = 1514 // bytes
)

// CakeConfig configures the CAKE-like discipline. Zero fields take the
// defaults noted.
type CakeConfig struct {
	// Rate is the link's serialization rate, bit/s (required). CAKE's
	// shaper is the link itself; the rate sets the tin thresholds and the
	// low-rate target tuning. The Link keeps it current on SetRate.
	Rate cc.Bandwidth
	// Limit and LimitBytes cap the total backlog across tins; on overflow
	// the head of the fattest flow queue of any tin is dropped (as CAKE
	// and FQ-CoDel). Both zero: DefaultLimit packets (Table 1: 1000).
	Limit      int
	LimitBytes int
	// Flows is the number of flow queues per tin (0: DefaultFlows).
	Flows int
	// Quantum is the DRR quantum between flows of a tin, bytes
	// (0: DefaultQuantum).
	Quantum int
	// Target and Interval are CoDel's base parameters (0: 5 ms and 100 ms,
	// CAKE's default "internet" preset and the scenario file's default;
	// CakeLANTarget/CakeLANInterval give Table 1's "lan"). Each tin tunes
	// them up at low rates as CAKE does.
	Target   time.Duration
	Interval time.Duration
	// HashSeed perturbs the FlowKey → queue hash.
	HashSeed uint64
}

// cakeTin is one priority tin: an FQ-CoDel scheduler plus the bandwidth
// meter that says whether the tin is within its threshold.
type cakeTin struct {
	fs flowSched
	// nextOK is when the tin is next within its threshold: a token bucket
	// at the tin's threshold rate, one packet deep. Serving a packet of
	// size s at time t sets nextOK = t + s·8/(share·rate).
	nextOK clock.Mono
}

// Cake is a CAKE-like DiffServ discipline: three priority tins chosen by
// DSCP (TinOf), FQ-CoDel flow queueing inside each tin, tins scheduled by
// priority within bandwidth thresholds. See the package doc for what is
// simplified against sch_cake.
type Cake struct {
	lim   limits
	base  codelParams
	rate  cc.Bandwidth
	tins  [numTins]cakeTin
	n     int // backlog, packets
	bytes int // backlog, bytes
}

var _ Queue = (*Cake)(nil)

// NewCake returns an empty Cake. onDrop may be nil.
func NewCake(cfg CakeConfig, onDrop DropFunc) (*Cake, error) {
	if cfg.Rate == 0 {
		return nil, fmt.Errorf("cake: %w", invalid("rate is required (the tin thresholds are fractions of it)"))
	}
	lim, err := newLimits(cfg.Limit, cfg.LimitBytes)
	if err != nil {
		return nil, fmt.Errorf("cake: %w", err)
	}
	base, err := newCodelParams(cfg.Target, cfg.Interval)
	if err != nil {
		return nil, fmt.Errorf("cake: %w", err)
	}
	c := &Cake{lim: lim, base: base}
	drop := dropOrNop(onDrop)
	for t := range c.tins {
		// Tins hash differently so a FlowKey collision in one tin does
		// not repeat in another.
		fs, err := newFlowSched(cfg.Flows, cfg.Quantum, base, cfg.HashSeed+uint64(t), drop)
		if err != nil {
			return nil, fmt.Errorf("cake: %w", err)
		}
		c.tins[t].fs = fs
		c.tins[t].nextOK = math.MinInt64 // every tin starts within its threshold
	}
	c.SetRate(cfg.Rate)
	return c, nil
}

// SetRate changes the link rate the thresholds and targets are computed
// from. A zero rate is ignored.
func (c *Cake) SetRate(rate cc.Bandwidth) {
	if rate == 0 {
		return
	}
	c.rate = rate
	for t := range c.tins {
		c.tins[t].fs.prm = c.tinParams(Tin(t))
	}
}

// tinParams are a tin's CoDel parameters at the current rate (sch_cake's
// cake_set_rate): target at least the time to send 1.5 MTU at the tin's
// threshold rate; interval stretched by the same amount and at least twice
// the target.
func (c *Cake) tinParams(t Tin) codelParams {
	p := c.base
	mtuTime := time.Duration(cakeTargetMTUs * cakeMTU * 8 * 1e9 / (tinShare[t] * float64(c.rate)))
	if mtuTime > p.target {
		p.interval += mtuTime - p.target
		p.target = mtuTime
	}
	p.interval = max(p.interval, 2*p.target)
	return p
}

// Params returns the CoDel target and interval tin t uses at the current
// rate.
func (c *Cake) Params(t Tin) (target, interval time.Duration) {
	p := c.tins[t].fs.prm
	return p.target, p.interval
}

// Enqueue classifies p into its tin and flow queue, then drops from the
// fattest flow of any tin while over the limit.
func (c *Cake) Enqueue(now clock.Mono, p *Packet) {
	c.tins[TinOf(p.DSCP)].fs.enqueue(now, p)
	c.n++
	c.bytes += p.Size
	for c.lim.over(c.n, c.bytes) {
		ti, fi, best := -1, -1, 0
		for t := range c.tins {
			if i, b := c.tins[t].fs.fattest(); i >= 0 && (ti < 0 || b > best) {
				ti, fi, best = t, i, b
			}
		}
		fs := &c.tins[ti].fs
		b := fs.bytes
		fs.dropHead(now, fi)
		c.n--
		c.bytes -= b - fs.bytes
	}
}

// Dequeue picks a tin (pickTin), then a packet from its flows by DRR with
// CoDel; nil if every tin is empty.
func (c *Cake) Dequeue(now clock.Mono) *Packet {
	for c.n > 0 {
		t := c.pickTin(now)
		tin := &c.tins[t]
		n, b := tin.fs.n, tin.fs.bytes
		p := tin.fs.dequeue(now)
		c.n -= n - tin.fs.n
		c.bytes -= b - tin.fs.bytes
		if p == nil {
			continue // CoDel emptied this tin; choose again
		}
		share := tinShare[t] * float64(c.rate)
		tin.nextOK = now.Add(time.Duration(float64(p.Size) * 8 * 1e9 / share))
		return p
	}
	return nil
}

// pickTin returns the first backlogged tin in tinScanOrder that is within
// its threshold (nextOK ≤ now); if none is, the backlogged tin that will
// be within its threshold soonest, which shares the link among
// over-threshold tins in proportion to their thresholds. Requires c.n > 0.
func (c *Cake) pickTin(now clock.Mono) Tin {
	for _, t := range tinScanOrder {
		if c.tins[t].fs.n > 0 && !c.tins[t].nextOK.After(now) {
			return t
		}
	}
	best := Tin(numTins)
	for _, t := range tinScanOrder {
		if c.tins[t].fs.n > 0 && (best == numTins || c.tins[t].nextOK.Before(c.tins[best].nextOK)) {
			best = t
		}
	}
	return best
}

// Len is the total backlog in packets.
func (c *Cake) Len() int { return c.n }

// Bytes is the total backlog in bytes.
func (c *Cake) Bytes() int { return c.bytes }

// TinLen is the backlog of tin t in packets.
func (c *Cake) TinLen(t Tin) int { return c.tins[t].fs.n }
