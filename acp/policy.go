package acp

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/cfgerr"
)

// Policy is what an update sender needs from a rate policy: the event side of
// cc.Controller plus the rate gate. Regulator (ACP), Lazy and Fixed implement
// it, so a benchmark swaps them by name or by value.
type Policy interface {
	cc.Controller
	// OnUpdateSent records that the update generated at gen was sent now
	// as packet pn (OnPacketSent is OnUpdateSent with gen = now).
	OnUpdateSent(now clock.Mono, pn cc.PacketNumber, gen clock.Mono)
	// NextSendTime is when the next update may be sent (0 before the
	// first: immediately).
	NextSendTime() clock.Mono
	// Rate is the current update rate in updates per second.
	Rate() Rate
	// SeedRTT offers an RTT measured elsewhere on the same path (the
	// handshake, the stream's ACKs). A policy uses it only while it has no
	// RTT sample of its own, so a lost first update does not leave it at
	// the initial RTT (1 s) until an update is acknowledged.
	SeedRTT(rtt time.Duration)
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
// to keep the monitor's age low, and their window never limits
// (RateOnlyWindow). They are therefore not in the cc registry, so a
// congestion-controller name can never select one by mistake.
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

// ratePolicy is the part Lazy and Fixed share: a send clock, an RTT
// estimator for Metrics (and Lazy's rate), and the cc.Controller plumbing of
// a rate-only controller.
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

// OnPacketSent implements cc.Controller: OnUpdateSent with gen = now.
func (p *ratePolicy) OnPacketSent(now clock.Mono, pn cc.PacketNumber, _, _ cc.ByteCount) {
	p.OnUpdateSent(now, pn, now)
}

// OnAck feeds the RTT sample to SRTT.
func (p *ratePolicy) OnAck(_ clock.Mono, ack cc.AckSample) { p.rtt.Update(ack.RTT) }

// OnLoss does nothing: the rate does not react to loss.
func (p *ratePolicy) OnLoss(clock.Mono, cc.LossEvent) {}

// OnRetransmissionTimeout does nothing: the rate does not react to timeouts.
func (p *ratePolicy) OnRetransmissionTimeout(clock.Mono) {}

// Window is RateOnlyWindow: rate-only, the window never limits.
func (p *ratePolicy) Window() cc.ByteCount { return RateOnlyWindow }

// CanSend is always true: the gate is NextSendTime.
func (p *ratePolicy) CanSend(cc.ByteCount) bool { return true }

func (p *ratePolicy) next(interval time.Duration) clock.Mono {
	if !p.sentAny {
		return 0
	}
	return p.lastSent.Add(interval)
}

func (p *ratePolicy) metrics(rate Rate, sig cc.DelaySignal) cc.Metrics {
	return cc.Metrics{
		Window:     RateOnlyWindow,
		PacingRate: rate.bandwidth(p.cfg.UpdateSize),
		SRTT:       p.rtt.Smoothed(),
		MinRTT:     p.rtt.Min(),
		Signal:     sig,
	}
}

// Lazy sends one update per round trip: λ = 1/SRTT (1/InitialRTT before the
// first sample), the "Lazy" baseline of the ACP paper (the zero-wait policy). It keeps the pipe at one
// update in flight, which is age-optimal only when the path has no queue to
// fill; it is not clamped by MinRate/MaxRate. It ignores loss.
type Lazy struct{ ratePolicy }

var (
	_ cc.Controller = (*Lazy)(nil)
	_ Policy        = (*Lazy)(nil)
)

// NewLazy returns a Lazy policy; only UpdateSize and InitialRTT of cfg are used.
func NewLazy(cfg Config) (*Lazy, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Lazy{ratePolicy{cfg: cfg}}, nil
}

// Name implements cc.Controller.
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

// PacingRate is Rate × UpdateSize × 8 bit/s.
func (l *Lazy) PacingRate() cc.Bandwidth { return l.Rate().bandwidth(l.cfg.UpdateSize) }

// Metrics implements cc.Controller.
func (l *Lazy) Metrics() cc.Metrics { return l.metrics(l.Rate(), cc.SignalRTT) }

// Fixed sends updates at a constant rate: the fixed-rate baseline whose sweep
// finds the age-optimal rate of a path (the oracle ACP is judged against). It ignores
// loss, ACKs (except for SRTT in Metrics) and timeouts.
type Fixed struct {
	ratePolicy
	rate     Rate
	interval time.Duration
	due      clock.Mono // earliest next send: the schedule, not the last send + 1/rate
}

var (
	_ cc.Controller = (*Fixed)(nil)
	_ Policy        = (*Fixed)(nil)
)

// NewFixed returns a policy sending hz updates per second (finite, > 0); only
// UpdateSize and InitialRTT of cfg are used. Errors wrap ErrInvalidConfig.
func NewFixed(hz Rate, cfg Config) (*Fixed, error) {
	if !(hz > 0) || math.IsInf(float64(hz), 1) {
		return nil, cfgerr.Field("acp.NewFixed hz", "%v: want a finite rate > 0", hz)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Fixed{ratePolicy: ratePolicy{cfg: cfg}, rate: hz, interval: hz.Interval()}, nil
}

// Name implements cc.Controller.
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

// OnPacketSent implements cc.Controller: OnUpdateSent with gen = now.
func (f *Fixed) OnPacketSent(now clock.Mono, pn cc.PacketNumber, _, _ cc.ByteCount) {
	f.OnUpdateSent(now, pn, now)
}

// PacingRate is rate × UpdateSize × 8 bit/s.
func (f *Fixed) PacingRate() cc.Bandwidth { return f.rate.bandwidth(f.cfg.UpdateSize) }

// Metrics implements cc.Controller.
func (f *Fixed) Metrics() cc.Metrics { return f.metrics(f.rate, cc.SignalNone) }
