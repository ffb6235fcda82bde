package acp

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/fresh-udp/fresh/cc"
)

// Rate is an update rate in updates per second (Hz).
type Rate float64

// Interval is the time between updates at rate r, 1/r; 0 for r ≤ 0 or +Inf.
func (r Rate) Interval() time.Duration {
	if !(r > 0) || math.IsInf(float64(r), 1) {
		return 0
	}
	return secondsToDuration(1 / float64(r))
}

// bandwidth is the bit rate of updates of size bytes sent at rate r.
func (r Rate) bandwidth(size cc.ByteCount) cc.Bandwidth {
	bps := float64(r) * float64(size) * 8
	if !(bps > 0) {
		return 0
	}
	return cc.Bandwidth(bps)
}

// AgeSource selects how the regulator learns the delivery time r_i of an
// acknowledged update, from which it computes the monitor's age.
type AgeSource uint8

const (
	// AgeFromOWD (default) computes the true monitor age: r_i = send time +
	// OWD when the ACK carries an OWD sample that is valid, stamped with a
	// synchronized clock (AckSample.ClockSynced) and plausible (0 ≤ OWD ≤
	// RTT sample); otherwise it falls back to the RTT approximation for that
	// ACK (SPEC §2: "our improvement; keep the RTT approximation as the
	// fallback").
	AgeFromOWD AgeSource = iota
	// AgeFromRTT always uses the original ACP's approximation,
	// r_i ≈ ACK arrival − RTT/2. For comparison benchmarks.
	AgeFromRTT
)

func (s AgeSource) String() string {
	switch s {
	case AgeFromOWD:
		return "owd"
	case AgeFromRTT:
		return "rtt"
	default:
		return fmt.Sprintf("AgeSource(%d)", uint8(s))
	}
}

// Defaults for the zero fields of Config.
const (
	// DefaultUpdateSize is the update size used by the ACP experiments of
	// the prioritisation paper (seeds/acp-prioritization-wifi.txt, §IV:
	// "An update packet is of size 1024 bytes").
	DefaultUpdateSize cc.ByteCount = 1024
	// DefaultInitialRTT is the RTT assumed before the first sample: the
	// initial RTO of RFC 6298 §2.1 (1 s), so the first update rate is 1 Hz
	// and the first epoch at most 1 s, shrinking to SRTT as soon as a sample
	// arrives.
	DefaultInitialRTT = time.Second
	// DefaultKappa is κ, the backlog step of INC and DEC, in updates (SPEC §2).
	DefaultKappa = 1.0
	// DefaultMinRate is λ_min: one update every 10 s. The regulator needs
	// ACKs to learn anything, so the rate never reaches 0; at 0.1 Hz a flow
	// that MDEC drove down still probes the path every 10 s (and its age
	// stays bounded by about 10 s plus the path delay).
	DefaultMinRate Rate = 0.1
	// DefaultMaxRate is λ_max: 1000 updates per second (8.2 Mbit/s of
	// 1024-byte updates). SPEC §2 takes λ_max from the application's sensing
	// rate; applications that sense more slowly should set theirs. It also
	// bounds 1/Z when ACKs arrive compressed (Z → 0).
	DefaultMaxRate Rate = 1000
	// DefaultZGain is the EWMA weight of a new ACK inter-arrival sample in Z,
	// the same 1/8 as SRTT's α (RFC 6298 §2.3): Z follows the delivery rate
	// over the last ~8 ACKs.
	DefaultZGain = 1.0 / 8
	// DefaultCapacity is the number of recent updates whose state is kept
	// (ring of per-update records, 32 B each): 1024 outstanding updates is a
	// backlog no age-optimal rate approaches.
	DefaultCapacity = 1024
)

// RateOnlyWindow is what the ACP controllers return from Window: they are
// rate based (the rate gate is NextSendTime), so the window never limits. It
// is large but far from overflow, so callers may subtract and add to it.
const RateOnlyWindow cc.ByteCount = 1 << 40

// ErrInvalidConfig is returned (wrapped) by the constructors for a Config they
// cannot run with.
var ErrInvalidConfig = errors.New("acp: invalid config")

// Config configures the ACP regulator (and, for UpdateSize and InitialRTT,
// Lazy and Fixed). Every zero field takes the documented default; the zero
// Config is the exact rule of SPEC §2.
type Config struct {
	// UpdateSize is the size of one update in bytes, for PacingRate.
	// Default DefaultUpdateSize.
	UpdateSize cc.ByteCount
	// InitialRTT is the RTT assumed before the first sample (epoch length
	// and start rate). Default DefaultInitialRTT.
	InitialRTT time.Duration
	// Kappa is κ, the target backlog change of INC/DEC, in updates.
	// Default DefaultKappa.
	Kappa float64
	// MinRate and MaxRate clamp λ_{k+1}. Defaults DefaultMinRate,
	// DefaultMaxRate.
	MinRate, MaxRate Rate
	// ZGain is the EWMA weight (0 < ZGain ≤ 1) of a new ACK inter-arrival
	// sample in Z. Default DefaultZGain.
	ZGain float64
	// Capacity is how many recent updates are tracked (rounded up to a power
	// of two). Default DefaultCapacity. See updateRing for overflow.
	Capacity int
	// AgeSource selects true monitor age (default) or the RTT approximation.
	AgeSource AgeSource

	// Improvements over the literal rule (all off by default). SPEC §2 notes
	// that ACP misbehaves on short, low-delay links: there an epoch of one
	// SRTT holds one update or none, so B̄ and Δ̄ are mostly sampling noise
	// and the sign table acts on noise.

	// MinEpoch is a floor on the epoch length T: T = max(SRTT, MinEpoch).
	// It makes each epoch average over several updates on short paths. 0 =
	// T is SRTT exactly.
	MinEpoch time.Duration
	// BacklogNoise treats |b_k| ≤ BacklogNoise (updates) as b_k = 0, i.e.
	// "no new information: keep the rate". 0 = only an exact zero.
	BacklogNoise float64
	// AgeNoise treats |δ_k| ≤ AgeNoise as δ_k = 0. 0 = only an exact zero.
	AgeNoise time.Duration
	// MinUpdatesPerRTT raises λ_min to max(MinRate, MinUpdatesPerRTT/SRTT)
	// when the table sets the rate; 1 = never slower than Lazy. Sending
	// less than one update per round trip leaves the path idle and cannot
	// lower the age (Lazy is the zero-wait policy), yet the literal rule
	// goes there: when about one update is in flight, DEC's b*/T = −κ/T is
	// as large as 1/Z, so one DEC lands on λ_min. 0 = off.
	MinUpdatesPerRTT float64
	// ExploreOnHold takes an INC step (b* = +κ) in an epoch the table
	// would hold (b_k = 0 or δ_k = 0 after the noise thresholds). On a
	// steady path — no cross traffic, constant service — the backlog is
	// exactly constant at whatever rate the regulator has, so the literal
	// rule holds for ever and never learns that a faster rate would lower
	// the age. Exploring turns "no information" into a probe; if it was
	// wrong, the next epoch reads (b>0, δ>0) and decreases.
	ExploreOnHold bool
	// IncFraction makes INC's target backlog change proportional to the
	// backlog: b* = +max(κ, IncFraction·B̄_k), the mirror of MDEC's
	// −(1−2^−γ)·B̄_k. With κ = 1 alone the regulator climbs one update per
	// epoch, so a path whose age-optimal backlog is a hundred updates (a
	// long fat path) takes minutes to get there. 0 = the literal +κ.
	IncFraction float64
	// ZCountsLosses makes an update declared lost (OnLoss) a departure for
	// Z, like an acknowledged one. SPEC §2's λ = 1/Z + b*/T relies on 1/Z
	// being the rate at which updates leave the backlog ("delivers at the
	// rate ACKs return, which keeps the backlog where it is"), and a lost
	// update leaves the backlog too (see the package doc, Loss). Counting
	// ACKs alone makes 1/Z the delivery rate, (1 − p)·λ at loss rate p, so
	// every step of the table is biased down by p·λ: at 5 % loss and
	// 100 Hz an INC of κ per 200 ms epoch is cancelled outright, and the
	// regulator random-walks far below the path's capacity. A loss is
	// counted like an update of the same ACK frame (a zero interval when it
	// comes with the ACK that revealed it). false = ACKs only (the paper).
	ZCountsLosses bool
	// EpochZ, when > 0, measures Z over the epoch the table just judged:
	// if at least EpochZ updates left the backlog during it (acknowledged,
	// or lost with ZCountsLosses), the rate uses Z = epoch length / that
	// count instead of the EWMA (EpochStats.Z reports the one used). B̄ and
	// Δ̄ are averages over the epoch; the EWMA of gain 1/8 averages the last
	// ~8 ACK intervals only, a few milliseconds on a fast path, so delay
	// jitter that bunches ACKs makes 1/Z, hence λ, swing by tens of percent
	// from one epoch to the next (at 5 ms of jitter on a 5 Mbit/s path the
	// regulator ran the queue full). Below EpochZ departures (slow rates)
	// the epoch count is too coarse and the EWMA is kept. 0 = always the
	// EWMA (the paper).
	EpochZ int
	// BinaryInc bounds INC by a binary search (BIC, L. Xu, K. Harfoush,
	// I. Rhee, "Binary Increase Congestion Control for Fast, Long Distance
	// Networks", INFOCOM 2004) below the ceiling, the rate λ_k of the last
	// epoch that started a (b>0, δ>0) run (its DEC, not the MDECs that
	// follow: those epochs' rates are already the reaction). An INC from λ
	// below the ceiling C goes to at most max(λ + κ/T, (λ + C)/2); an INC
	// from λ ≥ C clears the ceiling (the path got faster) and is not
	// bounded. The table finds out that a rate was too fast an epoch or two
	// late (the age is seen one ACK lag behind), and INC's step, +κ or
	// IncFraction·B̄ over one epoch, lands at the same rate again: with
	// IncFraction the literal table oscillates with a period of a few
	// epochs around the service rate, building a queue each time, and where
	// the backlog is large (a long path, a full queue) one INC can jump
	// past the capacity by half the backlog. The bisection approaches the
	// last rate that hurt in halving steps and probes past it by κ per
	// epoch. false = INC as the table says.
	BinaryInc bool
}

// withDefaults returns c with zero fields defaulted, or an error wrapping
// ErrInvalidConfig.
func (c Config) withDefaults() (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	if c.UpdateSize < 0 {
		return bad("UpdateSize %d < 0", c.UpdateSize)
	}
	if c.UpdateSize == 0 {
		c.UpdateSize = DefaultUpdateSize
	}
	if c.InitialRTT < 0 {
		return bad("InitialRTT %v < 0", c.InitialRTT)
	}
	if c.InitialRTT == 0 {
		c.InitialRTT = DefaultInitialRTT
	}
	if c.Kappa < 0 || math.IsNaN(c.Kappa) || math.IsInf(c.Kappa, 0) {
		return bad("Kappa %v", c.Kappa)
	}
	if c.Kappa == 0 {
		c.Kappa = DefaultKappa
	}
	if !validRate(c.MinRate) || !validRate(c.MaxRate) {
		return bad("MinRate %v / MaxRate %v", c.MinRate, c.MaxRate)
	}
	if c.MinRate == 0 {
		c.MinRate = DefaultMinRate
	}
	if c.MaxRate == 0 {
		c.MaxRate = DefaultMaxRate
	}
	if c.MinRate > c.MaxRate {
		return bad("MinRate %v > MaxRate %v", c.MinRate, c.MaxRate)
	}
	if c.ZGain < 0 || c.ZGain > 1 || math.IsNaN(c.ZGain) {
		return bad("ZGain %v outside (0, 1]", c.ZGain)
	}
	if c.ZGain == 0 {
		c.ZGain = DefaultZGain
	}
	if c.Capacity < 0 || c.Capacity > 1<<24 {
		return bad("Capacity %d outside [0, 2^24]", c.Capacity)
	}
	if c.Capacity == 0 {
		c.Capacity = DefaultCapacity
	}
	if c.AgeSource > AgeFromRTT {
		return bad("AgeSource %v", c.AgeSource)
	}
	if c.MinEpoch < 0 || c.AgeNoise < 0 || c.BacklogNoise < 0 || math.IsNaN(c.BacklogNoise) {
		return bad("negative MinEpoch %v, AgeNoise %v or BacklogNoise %v", c.MinEpoch, c.AgeNoise, c.BacklogNoise)
	}
	if !(c.MinUpdatesPerRTT >= 0) || math.IsInf(c.MinUpdatesPerRTT, 1) {
		return bad("MinUpdatesPerRTT %v", c.MinUpdatesPerRTT)
	}
	if c.EpochZ < 0 || c.EpochZ > 1<<20 {
		return bad("EpochZ %d outside [0, 2^20]", c.EpochZ)
	}
	if !(c.IncFraction >= 0) || c.IncFraction > 1 {
		return bad("IncFraction %v outside [0, 1]", c.IncFraction)
	}
	return c, nil
}

// validRate accepts 0 (default) and finite positive rates.
func validRate(r Rate) bool {
	return r >= 0 && !math.IsInf(float64(r), 0) && !math.IsNaN(float64(r))
}
