package acp

import (
	"fmt"
	"math"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
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

func init() {
	// "acp" is the regulator as fresh recommends it (Recommended); "acp-literal"
	// is SPEC §2's rule alone, kept for comparison.
	// "acp-literal" is SPEC §2's rule alone, kept for comparison.
	cc.Register("acp", func(mss cc.ByteCount) cc.Controller {
		return mustRegulator(Recommended(registryUpdateSize(mss)))
	})
	cc.Register("acp-literal", func(mss cc.ByteCount) cc.Controller {
		r := mustRegulator(Config{UpdateSize: registryUpdateSize(mss)})
		r.name = "acp-literal"
		return r
	})
	cc.Register("lazy", func(mss cc.ByteCount) cc.Controller {
		l, err := NewLazy(Config{UpdateSize: registryUpdateSize(mss)})
		if err != nil {
			panic(err)
		}
		return l
	})
	// "fixed" is deliberately not registered: a fixed rate only means
	// something for a given path (the benchmark sweeps it to find the
	// oracle), so there is no sensible default. Use NewFixed.
}

// registryUpdateSize is the update size of registry-built policies: the
// default 1024 bytes, or the MSS if that is smaller (an update is one packet).
func registryUpdateSize(mss cc.ByteCount) cc.ByteCount {
	if mss > 0 && mss < DefaultUpdateSize {
		return mss
	}
	return DefaultUpdateSize
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
		UpdateRate: float64(rate),
	}
}

// Lazy sends one update per round trip: λ = 1/SRTT (1/InitialRTT before the
// first sample), the "Lazy" baseline of SPEC §2. It keeps the pipe at one
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
func (l *Lazy) Name() string { return "lazy" }

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
// finds the age-optimal rate of a path (the oracle of SPEC §2). It ignores
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
		return nil, fmt.Errorf("%w: fixed rate %v", ErrInvalidConfig, hz)
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

// mustRegulator builds a registry regulator; its configs are constants, so an
// error is a broken invariant.
func mustRegulator(cfg Config) *Regulator {
	r, err := NewRegulator(cfg)
	if err != nil {
		panic(err)
	}
	return r
}

// Recommended is the configuration of the registered "acp": SPEC §2's rule
// with seven improvements that bring it within 1.02–1.07× of the best
// fixed rate on every path of bench/scenarios/acp-* (the literal rule:
// 1.2–1.7×, or a collapse to λ_min; numbers in bench/RESULTS.md). Four
// were chosen on those five paths:
//
//   - MinUpdatesPerRTT 1: never slower than Lazy (the literal rule collapses
//     to λ_min when about one update is in flight);
//   - ExploreOnHold: a steady path shows b = 0 for ever; probe upward;
//   - IncFraction 0.5: climb by half the backlog, so long fat paths whose
//     best backlog is a hundred updates get there in seconds;
//   - MinEpoch 200 ms: epochs of one short SRTT hold one update or none, so
//     B̄ and Δ̄ are noise there (the ESP32 study's short-path failure);
//
// and three keep it stable on paths those five do not cover (a long thin
// path, delay jitter, constant-rate cross traffic, a capacity change: up to
// 6× the oracle with the four alone, within 1.28× with all seven, on 25
// further simulated paths):
//
//   - ZCountsLosses: 1/Z counts lost updates as departures, so on a lossy
//     path "keep the backlog" is not a decrease by the loss rate;
//   - EpochZ 8: Z over the epoch rather than the last 8 ACKs, so ACK jitter
//     does not swing λ;
//   - BinaryInc: INC bisects toward the rate that last made backlog and age
//     rise, instead of jumping back to it every few epochs.
func Recommended(updateSize cc.ByteCount) Config {
	return Config{
		UpdateSize:       updateSize,
		MinUpdatesPerRTT: 1,
		ExploreOnHold:    true,
		IncFraction:      0.5,
		MinEpoch:         200 * time.Millisecond,
		ZCountsLosses:    true,
		EpochZ:           8,
		BinaryInc:        true,
	}
}
