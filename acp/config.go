package acp

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/fresh-udp/fresh"
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

// AgeSource selects how the regulator learns the delivery time r_i of an
// acknowledged update, from which it computes the monitor's age.
type AgeSource uint8

const (
	// AgeFromOWD (default) computes the true monitor age: r_i = send time +
	// OWD when the ACK carries an OWD sample that is valid, stamped with a
	// synchronized clock (AckSample.ClockSynced) and plausible (0 ≤ OWD ≤
	// RTT sample); otherwise it falls back to the RTT approximation for that
	// ACK. The original ACP only has the approximation; fresh's ACKs carry
	// the receiver's offset-corrected one-way delay, so it can do better.
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

// Defaults for the zero fields of Config and Tuning.
const (
	// DefaultUpdateSize is the update size, bytes: the 1024-byte updates of
	// the ACP measurements in Shreedhar, Kaul, Yates, "Coexistence of Age
	// Sensitive Traffic and High Throughput Flows: Does Prioritization
	// Help?" (§IV).
	DefaultUpdateSize cc.ByteCount = 1024
	// DefaultInitialRTT is the RTT assumed before the first sample: the
	// initial RTO of RFC 6298 §2.1 (1 s), so the first update rate is 1 Hz
	// and the first epoch at most 1 s, shrinking to SRTT as soon as a sample
	// arrives.
	DefaultInitialRTT = time.Second
	// DefaultKappa is κ, the backlog step of INC and DEC, in updates: ACP's
	// unit step.
	DefaultKappa = 1.0
	// DefaultMinRate is λ_min: one update every 10 s. The regulator needs
	// ACKs to learn anything, so the rate never reaches 0; at 0.1 Hz a flow
	// that MDEC drove down still probes the path every 10 s (and its age
	// stays bounded by about 10 s plus the path delay).
	DefaultMinRate Rate = 0.1
	// DefaultMaxRate is λ_max: 1000 updates per second (8.2 Mbit/s of
	// 1024-byte updates). λ_max should be the application's sensing rate:
	// there is no point sending updates faster than new data appears, so
	// applications that sense more slowly should set theirs. It also
	// bounds 1/Z when ACKs arrive compressed (Z → 0).
	DefaultMaxRate Rate = 1000
	// DefaultZGain is the EWMA weight of a new ACK inter-arrival sample in Z,
	// the same 1/8 as SRTT's α (RFC 6298 §2.3): Z follows the delivery rate
	// over the last ~8 ACKs.
	DefaultZGain = 1.0 / 8
	// DefaultCapacity is the number of recent updates whose state is kept
	// (ring of per-update records, 40 B each): 1024 outstanding updates is a
	// backlog no age-optimal rate approaches.
	DefaultCapacity = 1024
)

// ErrInvalidConfig is returned (wrapped) by the constructors for a Config they
// cannot run with; the message names the field. It is the same value in
// every fresh package (clock, owd, transport, …): errors.Is(err,
// transport.ErrInvalidConfig) holds for all of them.
var ErrInvalidConfig = fresh.ErrInvalidConfig

// Config configures the update-rate policies. The zero Config is the
// recommended regulator: every zero field takes the default written beside
// it. Lazy and Fixed use only UpdateSize and InitialRTT.
type Config struct {
	// UpdateSize is the size of one update in bytes: the unit between
	// Rate (updates/s) and a bit rate, λ × UpdateSize × 8 bit/s, for
	// reports (Regulator.Config returns it). The rate decisions do not
	// depend on it: they count updates. Default DefaultUpdateSize (1024 B).
	UpdateSize cc.ByteCount
	// InitialRTT is the RTT assumed before the first sample (the first
	// epoch length and the start rate, one update per RTT). Default
	// DefaultInitialRTT (1 s).
	InitialRTT time.Duration
	// MinRate and MaxRate clamp the update rate λ, updates per second.
	// MaxRate should be the application's sensing rate. Defaults
	// DefaultMinRate (0.1 Hz) and DefaultMaxRate (1000 Hz).
	MinRate, MaxRate Rate
	// Capacity is how many recent updates are tracked for their ACKs
	// (rounded up to a power of two, 40 B each); an update still
	// unacknowledged Capacity sends later is counted lost. Default
	// DefaultCapacity (1024).
	Capacity int

	// Tuning, if not nil, replaces the regulator's recommended refinements
	// and internal constants. For benchmarks that measure what each
	// refinement buys; its fields may change between versions.
	// Applications leave it nil.
	Tuning *Tuning
}

// Tuning holds the regulator's internal constants and its refinements of
// ACP's literal rule (see the package doc, "Refinements"), one switch each.
// It is for benchmarks and may change between versions.
//
// A Tuning is taken as given: a refinement is off unless its field is set,
// so the zero Tuning is ACP's literal rule (what NewLiteral runs), and
// RecommendedTuning is what a nil Config.Tuning means. Kappa and ZGain are
// constants of the rule itself, not refinements: zero takes their default.
type Tuning struct {
	// Kappa is κ, the target backlog change of INC and DEC, in updates.
	// Zero means DefaultKappa (1).
	Kappa float64
	// ZGain is the EWMA weight (0 < ZGain ≤ 1) of a new ACK inter-arrival
	// sample in Z. Zero means DefaultZGain (1/8).
	ZGain float64
	// AgeSource selects true monitor age (AgeFromOWD, the zero value) or
	// the original ACP's RTT approximation.
	AgeSource AgeSource

	// MinEpoch is a floor on the epoch length T: T = max(SRTT, MinEpoch).
	// Recommended 200 ms. 0 = T is SRTT exactly (literal).
	MinEpoch time.Duration
	// MinUpdatesPerRTT raises λ_min to max(MinRate, MinUpdatesPerRTT/SRTT)
	// when the table sets the rate; 1 = never slower than Lazy.
	// Recommended 1. 0 = off (literal).
	MinUpdatesPerRTT float64
	// ExploreOnHold takes an INC step (b* = +κ) in an epoch the table
	// would hold (b_k = 0 or δ_k = 0). Recommended on.
	ExploreOnHold bool
	// IncFraction makes INC's target backlog change proportional to the
	// backlog: b* = +max(κ, IncFraction·B̄_k), the mirror of MDEC's
	// −(1−2^−γ)·B̄_k. In [0, 1]; recommended 0.5. 0 = the literal +κ.
	IncFraction float64
	// ZCountsLosses makes an update declared lost (OnLoss) a departure for
	// Z, like an acknowledged one. Recommended on. Off = ACKs only
	// (literal).
	ZCountsLosses bool
	// EpochZ, when > 0, measures Z over the epoch the table just judged if
	// at least EpochZ updates left the backlog during it: Z = epoch length /
	// departures instead of the EWMA. Recommended 8. 0 = always the EWMA
	// (literal).
	EpochZ int
	// BinaryInc bounds INC by a binary search below the rate that last
	// made backlog and age rise. Off in the recommended tuning (Gradient
	// replaces it).
	BinaryInc bool

	// Gradient replaces ACP's decision by fresh's rule (see the package
	// doc, "fresh's regulator", and gradient.go): the sign table compares
	// the send rates of the measured updates instead of backlogs, and
	// steps are multiplicative with a size s adapted as in Rprop, in
	// [StepMin, StepMax]. Kappa, IncFraction, EpochZ, ZCountsLosses and
	// BinaryInc then have no effect on the rate. Recommended on.
	Gradient bool
	// StepMin and StepMax bound Gradient's step s (λ·(1+s) for INC,
	// λ/(1+s) for DEC). Zero means DefaultStepMin (0.02) and
	// DefaultStepMax (0.5).
	StepMin, StepMax float64
	// RateBand is the relative change of the send rate ρ that Gradient
	// treats as none, and the tolerance of the delivery bound's rate
	// comparisons. Zero means DefaultRateBand (1 %).
	RateBand float64
	// ExcessAge makes Gradient judge the age change net of the change in
	// the updates' mean queueing delay. Recommended on.
	ExcessAge bool
	// NoiseBand makes Gradient treat a (net) age change within NoiseBand
	// times the running mean of |δ| as no information. Recommended
	// DefaultNoiseBand (1). 0 = off.
	NoiseBand float64
	// EpochUpdates shortens the MinEpoch floor at high rates to the time
	// of EpochUpdates updates: T = max(SRTT, min(MinEpoch,
	// EpochUpdates/λ)), so a short fast path is judged every few
	// milliseconds, not every 200. Recommended DefaultEpochUpdates (20).
	// 0 = off.
	EpochUpdates int
	// QueueBound is K, the most updates kept waiting at the bottleneck:
	// λ ≤ K/Q̄ (see queuebound.go). Recommended DefaultQueueBound (4).
	// 0 = off.
	QueueBound float64
	// BacklogBound is B: at most B updates in flight, λ ≤ B/SRTT (see
	// backlogbound.go). Recommended DefaultBacklogBound. 0 = off.
	BacklogBound float64
	// DeliveryBound holds the rate just under the capacity the path showed
	// when the updates' own queue formed, drains such a queue at the
	// path's delivery rate and resumes there after a cut (see
	// delivery.go). Recommended on.
	DeliveryBound bool
	// SourceHeadroom is h: when most sends of an epoch waited for the
	// source, the rate is held at (1 + h) times the source's rate (see
	// source.go). Recommended DefaultSourceHeadroom (1). 0 = off.
	SourceHeadroom float64
	// StartBurst lets a source faster than one update per RTT start the
	// regulator at its own rate (times 1 + SourceHeadroom), at most
	// StartBurst updates per RTT (see source.go). Recommended
	// DefaultStartBurst (10). 0 = off.
	StartBurst float64
}

// DefaultEpochUpdates is Tuning.EpochUpdates: 20 updates per epoch, enough
// that ρ and the delivery rate move by under 5 % from one update more or
// less, and at 1000 Hz a 20 ms epoch, not 200 ms: a one-epoch overshoot on
// the 2 ms acp-short path no longer fills the queue, and its age came
// close to the oracle's (bench/results/history.md, "fresh's rule: the
// seven refinements were bistable").
const DefaultEpochUpdates = 20

// RecommendedTuning is the regulator's default tuning, what a nil
// Config.Tuning means: ACP's epochs and age measurement (with the floors of
// MinEpoch and MinUpdatesPerRTT, and ExploreOnHold) under fresh's rule and
// its bounds (see the package doc for what each one fixes).
func RecommendedTuning() Tuning {
	return Tuning{
		MinEpoch:         200 * time.Millisecond,
		MinUpdatesPerRTT: 1,
		ExploreOnHold:    true,
		Gradient:         true,
		StepMin:          DefaultStepMin,
		StepMax:          DefaultStepMax,
		RateBand:         DefaultRateBand,
		ExcessAge:        true,
		NoiseBand:        DefaultNoiseBand,
		EpochUpdates:     DefaultEpochUpdates,
		QueueBound:       DefaultQueueBound,
		BacklogBound:     DefaultBacklogBound,
		DeliveryBound:    true,
		SourceHeadroom:   DefaultSourceHeadroom,
		StartBurst:       DefaultStartBurst,
	}
}

// withDefaults returns c with zero fields defaulted and Tuning set to a
// private copy (RecommendedTuning if nil), or an error wrapping
// ErrInvalidConfig.
func (c Config) withDefaults() (Config, error) {
	// The format starts with the field's name; a Tuning field is checked
	// with t (the defaulted copy) among its arguments.
	field := func(prefix, format string) (string, string) {
		name, rest, _ := strings.Cut(format, " ")
		return prefix + strings.TrimSuffix(name, ":"), rest
	}
	bad := func(format string, args ...any) (Config, error) {
		f, rest := field("acp.Config.", format)
		return Config{}, fresh.InvalidField(f, rest, args...)
	}
	badT := func(format string, args ...any) (Config, error) {
		f, rest := field("acp.Tuning.", format)
		return Config{}, fresh.InvalidField(f, rest, args...)
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
	if c.Capacity < 0 || c.Capacity > 1<<24 {
		return bad("Capacity %d outside [0, 2^24]", c.Capacity)
	}
	if c.Capacity == 0 {
		c.Capacity = DefaultCapacity
	}
	t := RecommendedTuning()
	if c.Tuning != nil {
		t = *c.Tuning
	}
	if t.Kappa < 0 || math.IsNaN(t.Kappa) || math.IsInf(t.Kappa, 0) {
		return badT("Kappa %v", t.Kappa)
	}
	if t.Kappa == 0 {
		t.Kappa = DefaultKappa
	}
	if t.ZGain < 0 || t.ZGain > 1 || math.IsNaN(t.ZGain) {
		return badT("ZGain %v outside (0, 1]", t.ZGain)
	}
	if t.ZGain == 0 {
		t.ZGain = DefaultZGain
	}
	if t.AgeSource > AgeFromRTT {
		return badT("AgeSource %v", t.AgeSource)
	}
	if t.MinEpoch < 0 {
		return badT("MinEpoch %v < 0", t.MinEpoch)
	}
	if !(t.MinUpdatesPerRTT >= 0) || math.IsInf(t.MinUpdatesPerRTT, 1) {
		return badT("MinUpdatesPerRTT %v", t.MinUpdatesPerRTT)
	}
	if t.EpochZ < 0 || t.EpochZ > 1<<20 {
		return badT("EpochZ %d outside [0, 2^20]", t.EpochZ)
	}
	if !(t.IncFraction >= 0) || t.IncFraction > 1 {
		return badT("IncFraction %v outside [0, 1]", t.IncFraction)
	}
	if t.StepMin == 0 {
		t.StepMin = DefaultStepMin
	}
	if t.StepMax == 0 {
		t.StepMax = DefaultStepMax
	}
	if !(t.StepMin > 0) || !(t.StepMax >= t.StepMin) || math.IsInf(t.StepMax, 1) {
		return badT("StepMin %v / StepMax %v: want 0 < StepMin ≤ StepMax, finite", t.StepMin, t.StepMax)
	}
	if t.RateBand == 0 {
		t.RateBand = DefaultRateBand
	}
	if !(t.RateBand > 0) || t.RateBand >= t.StepMin {
		return badT("RateBand %v: want 0 < RateBand < StepMin (%v), or a step could not be seen", t.RateBand, t.StepMin)
	}
	if !(t.QueueBound >= 0) || math.IsInf(t.QueueBound, 1) {
		return badT("QueueBound %v: want ≥ 0 updates, finite", t.QueueBound)
	}
	if !(t.BacklogBound >= 0) || math.IsInf(t.BacklogBound, 1) {
		return badT("BacklogBound %v: want ≥ 0 updates, finite", t.BacklogBound)
	}
	if !(t.SourceHeadroom >= 0) || math.IsInf(t.SourceHeadroom, 1) {
		return badT("SourceHeadroom %v: want ≥ 0, finite", t.SourceHeadroom)
	}
	if !(t.NoiseBand >= 0) || math.IsInf(t.NoiseBand, 1) {
		return badT("NoiseBand %v: want ≥ 0, finite", t.NoiseBand)
	}
	if t.EpochUpdates < 0 || t.EpochUpdates > 1<<20 {
		return badT("EpochUpdates %d outside [0, 2^20]", t.EpochUpdates)
	}
	if !(t.StartBurst >= 0) || math.IsInf(t.StartBurst, 1) {
		return badT("StartBurst %v: want ≥ 0 updates per RTT, finite", t.StartBurst)
	}
	c.Tuning = &t
	return c, nil
}

// validRate accepts 0 (default) and finite positive rates.
func validRate(r Rate) bool {
	return r >= 0 && !math.IsInf(float64(r), 0) && !math.IsNaN(float64(r))
}
