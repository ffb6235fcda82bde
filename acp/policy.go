package acp

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/fresh-udp/fresh"
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// Policy is an update-rate policy: what an update sender calls to pace
// status updates so that the monitor's age stays low. Regulator (ACP),
// Lazy and Fixed implement it, so a benchmark swaps them by name or by
// value. It is not a congestion controller (no window, no cc.Controller):
// the gate is NextSendTime. It shares cc's event vocabulary (cc.AckSample,
// cc.LossEvent) because the transport feeds both from the same ACKs. Like
// a cc.Controller it is a sans-I/O state machine: every event carries now,
// and it is not safe for concurrent use.
type Policy interface {
	// Name is the policy's name (PolicyACP, PolicyLiteral, PolicyLazy,
	// or "fixed").
	Name() string
	// SeedRTT offers an RTT measured elsewhere on the same path (the
	// handshake, the stream's ACKs). A policy uses it only while it has no
	// RTT sample of its own, so a lost first update does not leave it at
	// the initial RTT (1 s) until an update is acknowledged.
	SeedRTT(rtt time.Duration)
	// OnUpdateSent records that the update generated at gen was sent now
	// as packet pn.
	OnUpdateSent(now clock.Mono, pn cc.PacketNumber, gen clock.Mono)
	// OnAck is called once per acknowledged update, in packet-number order.
	OnAck(now clock.Mono, ack cc.AckSample)
	// OnLoss is called once per update declared lost (updates are never
	// retransmitted: a newer one replaces it).
	OnLoss(now clock.Mono, loss cc.LossEvent)
	// OnRetransmissionTimeout is called when the connection's RTO fires:
	// the path may have changed entirely.
	OnRetransmissionTimeout(now clock.Mono)
	// NextSendTime is when the next update may be sent (0 before the
	// first: immediately).
	NextSendTime() clock.Mono
	// Rate is the current update rate in updates per second.
	Rate() Rate
	// Signal is the delay signal the policy acts on: for the regulator,
	// how it placed the latest delivery on the monitor's timeline
	// (cc.SignalOWD or cc.SignalRTT; cc.SignalNone before the first),
	// cc.SignalRTT for Lazy (1/SRTT), cc.SignalNone for Fixed.
	Signal() cc.DelaySignal
}

// Names of the update policies NewPolicy builds.
const (
	// PolicyACP is the Age Control Protocol regulator as fresh recommends
	// it (NewRegulator with a zero Config): the default.
	PolicyACP = "acp"
	// PolicyLiteral is ACP's rule as published, without fresh's
	// refinements (NewLiteral), kept as a baseline.
	PolicyLiteral = "acp-literal"
	// PolicyLazy sends one update per round trip (NewLazy), the zero-wait
	// baseline.
	PolicyLazy = "lazy"
)

// ErrUnknownPolicy is returned (wrapped) by NewPolicy for a name it does not
// know.
var ErrUnknownPolicy = errors.New("acp: unknown update policy")

// PolicyNames lists the names NewPolicy accepts, sorted.
func PolicyNames() []string { return []string{PolicyACP, PolicyLiteral, PolicyLazy} }

// NewPolicy builds the update policy called name with cfg: PolicyACP (also
// for ""), PolicyLiteral or PolicyLazy. A fixed rate has no name, since it
// only means something for a given path: build it with NewFixed.
//
// Update policies are not congestion controllers: they pace status updates
// to keep the monitor's age low and have no window. They are therefore not
// in the cc registry, so a congestion-controller name can never select one
// by mistake.
func NewPolicy(name string, cfg Config) (Policy, error) {
	switch name {
	case PolicyACP, "":
		return NewRegulator(cfg)
	case PolicyLiteral:
		return NewLiteral(cfg)
	case PolicyLazy:
		return NewLazy(cfg)
	}
	return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownPolicy, name, strings.Join(PolicyNames(), ", "))
}

// ratePolicy is the part Lazy and Fixed share: a send clock and an RTT
// estimator (Lazy's rate is 1/SRTT; Fixed's rate does not read it).
type ratePolicy struct {
	cfg      Config
	rtt      cc.RTTStats
	lastSent clock.Mono
	sentAny  bool
}

// SeedRTT implements Policy.
func (p *ratePolicy) SeedRTT(rtt time.Duration) {
	if !p.rtt.HasSample() {
		p.rtt.Update(rtt)
	}
}

// OnUpdateSent records the send time; the generation time does not matter
// to a rate that ignores age.
func (p *ratePolicy) OnUpdateSent(now clock.Mono, _ cc.PacketNumber, _ clock.Mono) {
	p.lastSent, p.sentAny = now, true
}

// OnAck feeds the RTT sample to SRTT.
func (p *ratePolicy) OnAck(_ clock.Mono, ack cc.AckSample) { p.rtt.Update(ack.RTT) }

// OnLoss does nothing: the rate does not react to loss.
func (p *ratePolicy) OnLoss(clock.Mono, cc.LossEvent) {}

// OnRetransmissionTimeout does nothing: the rate does not react to timeouts.
func (p *ratePolicy) OnRetransmissionTimeout(clock.Mono) {}

func (p *ratePolicy) next(interval time.Duration) clock.Mono {
	if !p.sentAny {
		return 0
	}
	return p.lastSent.Add(interval)
}

// Lazy sends one update per round trip: λ = 1/SRTT (1/InitialRTT before the
// first sample), the "Lazy" baseline of the ACP paper (the zero-wait policy). It keeps the pipe at one
// update in flight, which is age-optimal only when the path has no queue to
// fill; it is not clamped by MinRate/MaxRate. It ignores loss.
type Lazy struct{ ratePolicy }

var _ Policy = (*Lazy)(nil)

// NewLazy returns a Lazy policy; only InitialRTT and UpdateSize of cfg are
// used.
func NewLazy(cfg Config) (*Lazy, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Lazy{ratePolicy{cfg: cfg}}, nil
}

// Name implements Policy.
func (l *Lazy) Name() string { return PolicyLazy }

func (l *Lazy) srtt() time.Duration {
	if s := l.rtt.Smoothed(); s > 0 {
		return s
	}
	return l.cfg.InitialRTT
}

// Rate is 1/SRTT.
func (l *Lazy) Rate() Rate { return Rate(1 / l.srtt().Seconds()) }

// NextSendTime is the last send plus SRTT.
func (l *Lazy) NextSendTime() clock.Mono { return l.next(l.srtt()) }

// Signal is cc.SignalRTT: the rate follows SRTT.
func (l *Lazy) Signal() cc.DelaySignal { return cc.SignalRTT }

// Fixed sends updates at a constant rate: the fixed-rate baseline whose sweep
// finds the age-optimal rate of a path (the oracle ACP is judged against). Its
// rate ignores loss, ACKs and timeouts.
type Fixed struct {
	ratePolicy
	rate     Rate
	interval time.Duration
	due      clock.Mono // earliest next send: the schedule, not the last send + 1/rate
}

var _ Policy = (*Fixed)(nil)

// NewFixed returns a policy sending hz updates per second (finite, > 0); of
// cfg only UpdateSize and InitialRTT are checked, and the rate reads
// neither. Errors wrap ErrInvalidConfig.
func NewFixed(hz Rate, cfg Config) (*Fixed, error) {
	if !(hz > 0) || math.IsInf(float64(hz), 1) {
		return nil, fresh.InvalidField("acp.NewFixed hz", "%v: want a finite rate > 0", hz)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Fixed{ratePolicy: ratePolicy{cfg: cfg}, rate: hz, interval: hz.Interval()}, nil
}

// Name implements Policy.
func (f *Fixed) Name() string { return "fixed" }

// Rate is the fixed rate.
func (f *Fixed) Rate() Rate { return f.rate }

// NextSendTime is the next slot of the schedule (0 before the first send).
func (f *Fixed) NextSendTime() clock.Mono {
	if !f.sentAny {
		return 0
	}
	return f.due
}

// OnUpdateSent advances the schedule by one interval from the slot the send
// was due in, not from the send itself: a driver whose timer fires late (a
// busy host) then keeps the rate on average instead of losing the lateness
// on every update. A send a whole interval or more behind its slot restarts
// the schedule at now, so a stall is never followed by a catch-up burst.
func (f *Fixed) OnUpdateSent(now clock.Mono, pn cc.PacketNumber, gen clock.Mono) {
	if !f.sentAny || now < f.due || now.Sub(f.due) >= f.interval {
		f.due = now
	}
	f.due = f.due.Add(f.interval)
	f.ratePolicy.OnUpdateSent(now, pn, gen)
}

// Signal is cc.SignalNone: a fixed rate acts on no delay.
func (f *Fixed) Signal() cc.DelaySignal { return cc.SignalNone }
