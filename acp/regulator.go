package acp

import (
	"fmt"
	"math"
	"time"

	"github.com/fresh-udp/fresh"
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// Action is the regulator's decision at the end of a control epoch (ACP's
// Algorithm 1; see the package doc).
type Action uint8

const (
	ActionHold Action = iota // keep the rate: b_k = 0, δ_k = 0, or not enough information
	ActionInc                // INC: b* = +κ
	ActionDec                // DEC: b* = −κ
	ActionMDec               // MDEC(γ): b* = −(1 − 2^−γ)·B̄_k
)

func (a Action) String() string {
	switch a {
	case ActionHold:
		return "hold"
	case ActionInc:
		return "INC"
	case ActionDec:
		return "DEC"
	case ActionMDec:
		return "MDEC"
	default:
		return fmt.Sprintf("Action(%d)", uint8(a))
	}
}

// row is the row of the decision table an epoch falls in.
type row uint8

const (
	rowNone     row = iota // b = 0 or δ = 0: no new information
	rowUpUp                // b > 0, δ > 0: DEC, or γ += 1 and MDEC(γ) if repeated
	rowDownUp              // b < 0, δ > 0: INC, reset γ
	rowUpDown              // b > 0, δ < 0: INC, reset γ
	rowDownDown            // b < 0, δ < 0: DEC, reset γ
)

// decide is ACP's sign table (Algorithm 1 of the paper): the row for backlog
// change b and age change delta (any units; only signs matter).
func decide(b, delta float64) row {
	switch {
	case b > 0 && delta > 0:
		return rowUpUp
	case b < 0 && delta > 0:
		return rowDownUp
	case b > 0 && delta < 0:
		return rowUpDown
	case b < 0 && delta < 0:
		return rowDownDown
	default: // a zero, or NaN
		return rowNone
	}
}

// nextRate is λ_{k+1} = 1/Z + b*/T clamped to [lo, hi]: deliver at
// the rate ACKs come back (1/Z keeps the backlog where it is) plus b* extra
// updates over the next epoch of length T. Z ≤ 0 (ACKs compressed into one
// instant) means an unbounded delivery rate, so the result is hi.
func nextRate(z time.Duration, bstar float64, t time.Duration, lo, hi Rate) Rate {
	inv := math.Inf(1)
	if z > 0 {
		inv = 1 / z.Seconds()
	}
	lambda := Rate(inv + bstar/t.Seconds())
	switch {
	case math.IsNaN(float64(lambda)):
		return lo
	case lambda < lo:
		return lo
	case lambda > hi:
		return hi
	}
	return lambda
}

// EpochStats describes one closed control epoch: the measurements, the
// decision and the rate it set. Durations are exact; backlog is in updates.
type EpochStats struct {
	Index      int64      // k, counting from 0
	Start, End clock.Mono // the epoch (sender time): [Start, End]
	// Backlog is B̄_k, the time-average number of sent, unacknowledged,
	// not-lost updates over [Start, End].
	Backlog float64
	// Age is Δ̄_k, the time-average monitor age over [AgeFrom, AgeTo] (the
	// part of the monitor's sawtooth the ACKs revealed during the epoch; see
	// the package doc). Valid only if AgeValid.
	Age            time.Duration
	AgeFrom, AgeTo clock.Mono
	AgeValid       bool
	Signal         cc.DelaySignal // how the latest r_i was learned: SignalOWD or SignalRTT
	Compared       bool           // b_k and δ_k were defined (this and the previous epoch measured, Z known)
	B              float64        // b_k = B̄_k − B̄_{k−1}
	Delta          time.Duration  // δ_k = Δ̄_k − Δ̄_{k−1}
	Action         Action         //
	Gamma          int            // γ after this epoch
	BStar          float64        // b*, target backlog change in updates
	Z              time.Duration  // Z used for the rate: the EWMA at the close, or the epoch's (Tuning.EpochZ); 0 = unknown
	Departures     int            // updates that left the backlog for Z during the epoch (ACKs; losses with ZCountsLosses)
	Ceiling        Rate           // Tuning.BinaryInc's ceiling after this epoch; 0 = none
	T              time.Duration  // next epoch length, used in b*/T
	Rate           Rate           // λ_{k+1}, the rate from now on
	RateBefore     Rate           // λ_k

	// Tuning.Gradient: ρ_k, the send rate of the updates acknowledged in
	// the epoch (0 = unknown), Δρ_k (when Compared; within RateBand it is
	// 0) and the step s after the epoch.
	SendRate     Rate
	DeliveryRate Rate          // the rate the path delivered those updates (0 = unknown)
	RateChange   Rate          //
	ExcessDelta  time.Duration // δ before the noise band: δ_k, minus ΔQ̄ with Tuning.ExcessAge
	Step         float64       //
	// Capacity is the delivery bound's capacity estimate C (0 before the
	// first saturation).
	Capacity Rate
	// Tuning.QueueBound: Q̄, the mean queueing delay of the updates
	// acknowledged in the epoch (or the latest epoch that had any; 0 =
	// unknown), and Queued = ρ_k·Q̄, the updates waiting at the bottleneck
	// by Little's law.
	QueueDelay time.Duration
	Queued     float64
	// ReturnQueueDelay is R̄, the mean queueing delay of the updates'
	// ACKs on the return path (RTT − OWD above its base; 0 = unknown),
	// which Tuning.BacklogBound keeps at most one ACK deep.
	ReturnQueueDelay time.Duration
	// Shared says a neighbour's queue was seen in the last 10 s, which
	// lowers Tuning.BacklogBound to 6 updates (see backlogbound.go).
	Shared bool
	// SourceRate is σ̂ when at least half the epoch's sends waited for the
	// source (Tuning.SourceHeadroom), else 0.
	SourceRate Rate
	// Bound is the bound that lowered the rate, if any.
	Bound Bound
}

// Counters are cumulative event counts of a Regulator.
type Counters struct {
	Sent        int64 // updates sent
	Acked       int64 // ACKs matched to a tracked update
	Lost        int64 // updates declared lost by OnLoss
	Evicted     int64 // outstanding updates pushed out of the ring: counted lost
	LateAcks    int64 // ACKs for updates already declared lost (still count for age)
	UnknownAcks int64 // ACKs for updates no longer (or never) tracked
	Epochs      int64 // control epochs closed
}

// Regulator is the Age Control Protocol update-rate regulator. See the
// package doc for the algorithm and every interpretation. It implements
// Policy. It is a sans-I/O state machine: every event carries now; it is not
// safe for concurrent use. After NewRegulator no method allocates.
type Regulator struct {
	name string // PolicyACP, or PolicyLiteral if built by NewLiteral
	cfg  Config // defaults filled in; Tuning nil (see tun)
	tun  Tuning // defaults filled in
	rtt  cc.RTTStats
	ring updateRing

	// Rate and pacing.
	rate     Rate          // λ, updates per second
	interval time.Duration // 1/λ
	lastSent clock.Mono
	sentAny  bool
	ruled    bool // a table row has set the rate since start / RTO; until then λ = 1/RTT

	// Time.
	started bool
	last    clock.Mono // latest event time: later events never go back before it

	// Backlog B(t), integrated over the current epoch.
	backlog     int
	backlogArea float64 // ∫ B dt over [epochStart, backlogT], update·s
	backlogT    clock.Mono

	// Epoch.
	epochStart clock.Mono
	epochIndex int64

	// Monitor age. The sawtooth is integrated up to a horizon; ageMark is the
	// horizon at the previous epoch close.
	saw          sawtooth
	ageMarkT     clock.Mono
	ageMarkArea  float64
	ageMarkValid bool
	lag          time.Duration // now − r_i of the latest ACK: how far behind the sender's view of the monitor is
	lagValid     bool
	signal       cc.DelaySignal

	// Z: EWMA of ACK (and, with ZCountsLosses, loss) inter-arrival times;
	// departures counts them in the current epoch (Tuning.EpochZ).
	z          time.Duration
	zValid     bool
	lastAck    clock.Mono
	ackSeen    bool
	departures int

	// Decision state.
	prevBacklog float64
	prevAge     time.Duration
	prevValid   bool // previous epoch had both B̄ and Δ̄
	gamma       int
	prevWasUpUp bool // previous epoch fell in row (b>0, δ>0)
	ceiling     Rate // Tuning.BinaryInc: λ of the last epoch that started a (b>0, δ>0) run; 0 = none
	lastEpoch   EpochStats
	counters    Counters

	// fresh's rule and its bounds (gradient.go, bounds.go).
	grad        gradientState
	queue       queueState
	deliv       deliveryState
	foreign     foreignState
	source      sourceState
	offered     offeredState
	outstanding bool // updates were in the backlog at some time in the epoch
}

var _ Policy = (*Regulator)(nil)

// NewRegulator returns the regulator fresh recommends, "acp": ACP's rule
// with the refinements of RecommendedTuning, unless cfg.Tuning says
// otherwise. The error wraps ErrInvalidConfig.
func NewRegulator(cfg Config) (*Regulator, error) {
	return newRegulator(PolicyACP, cfg)
}

// NewLiteral returns a regulator running ACP's rule alone, without fresh's
// refinements ("acp-literal"): the rule as published, kept as a baseline.
// It is NewRegulator with a zero Tuning, so cfg.Tuning must be nil. The
// error wraps ErrInvalidConfig.
func NewLiteral(cfg Config) (*Regulator, error) {
	if cfg.Tuning != nil {
		return nil, fresh.InvalidField("acp.Config.Tuning", "set for NewLiteral (the literal rule is the zero Tuning; use NewRegulator)")
	}
	cfg.Tuning = &Tuning{}
	return newRegulator(PolicyLiteral, cfg)
}

func newRegulator(name string, cfg Config) (*Regulator, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	r := &Regulator{name: name, cfg: cfg, tun: *cfg.Tuning, ring: newUpdateRing(cfg.Capacity), deliv: newDeliveryState()}
	r.grad.reset()
	r.cfg.Tuning = nil // r.tun is the one in use; Config hands out copies
	r.setRate(r.startRate())
	return r, nil
}

// Config returns the configuration in use, defaults filled in; its Tuning
// is a copy of the tuning in use.
func (r *Regulator) Config() Config {
	c, t := r.cfg, r.tun
	c.Tuning = &t
	return c
}

// Name implements Policy: "acp", or "acp-literal" if built by
// NewLiteral.
func (r *Regulator) Name() string { return r.name }

// smoothedRTT is SRTT, or the configured initial RTT before the first sample.
func (r *Regulator) smoothedRTT() time.Duration {
	if s := r.rtt.Smoothed(); s > 0 {
		return s
	}
	return r.cfg.InitialRTT
}

// epochLength is T = max(SRTT, MinEpoch), with Tuning.EpochUpdates
// max(SRTT, min(MinEpoch, EpochUpdates/λ)).
func (r *Regulator) epochLength() time.Duration {
	floor := r.tun.MinEpoch
	if n := r.tun.EpochUpdates; n > 0 && r.rate > 0 {
		floor = min(floor, secondsToDuration(float64(n)/float64(r.rate)))
	}
	return max(r.smoothedRTT(), floor)
}

// startRate is one update per RTT, ACP's start rate, or with
// Tuning.StartBurst the offered rate of a faster source (see
// OnUpdateOffered), clamped.
func (r *Regulator) startRate() Rate {
	l := Rate(1 / r.smoothedRTT().Seconds())
	if n := r.tun.StartBurst; n > 0 {
		if o := r.offered.rate(); o > 0 {
			l = max(l, min(o*Rate(1+r.tun.SourceHeadroom), Rate(n/r.smoothedRTT().Seconds())))
		}
	}
	return min(max(l, r.cfg.MinRate), r.cfg.MaxRate)
}

// minRate is λ_min: MinRate, raised to MinUpdatesPerRTT/SRTT if that option
// is on (never above MaxRate).
func (r *Regulator) minRate() Rate {
	lo := r.cfg.MinRate
	if r.tun.MinUpdatesPerRTT > 0 {
		lo = max(lo, Rate(r.tun.MinUpdatesPerRTT/r.smoothedRTT().Seconds()))
	}
	return min(lo, r.cfg.MaxRate)
}

func (r *Regulator) setRate(l Rate) {
	r.rate = l
	r.interval = l.Interval()
}

// Tick closes the current control epoch if it is due at now. Every event
// method does this first, so a driver need not call Tick; it may, at
// EpochEnd, to close epochs on time while nothing else happens.
func (r *Regulator) Tick(now clock.Mono) { r.tick(now) }

// tick starts the regulator at its first event, keeps time monotonic (an
// event earlier than the previous one is taken at the previous one's time)
// and closes a due epoch. It returns the time to use for the event.
func (r *Regulator) tick(now clock.Mono) clock.Mono {
	if !r.started {
		r.started = true
		r.last, r.epochStart, r.backlogT = now, now, now
		return now
	}
	if now < r.last {
		now = r.last
	}
	r.last = now
	if now.Sub(r.epochStart) >= r.epochLength() {
		r.closeEpoch(now)
	}
	return now
}

// EpochEnd is the earliest time at which the current epoch closes (0 before
// the first event).
func (r *Regulator) EpochEnd() clock.Mono {
	if !r.started {
		return 0
	}
	return r.epochStart.Add(r.epochLength())
}

// setBacklog integrates B(t) up to now and sets it to n.
func (r *Regulator) setBacklog(now clock.Mono, n int) {
	r.backlogArea += float64(r.backlog) * now.Sub(r.backlogT).Seconds()
	r.backlogT = now
	r.backlog = n
}

// epochAge integrates the monitor's sawtooth up to the horizon now − lag and
// returns the time-average age since the previous horizon.
func (r *Regulator) epochAge(now clock.Mono) (from, to clock.Mono, avg time.Duration, ok bool) {
	if !r.saw.started || !r.lagValid {
		return 0, 0, 0, false
	}
	r.saw.advance(now.Add(-r.lag)) // no-op if the horizon is not past the frontier
	from, fromArea := r.ageMarkT, r.ageMarkArea
	if !r.ageMarkValid || from < r.saw.start {
		from, fromArea = r.saw.start, 0
	}
	to = r.saw.front
	r.ageMarkT, r.ageMarkArea, r.ageMarkValid = to, r.saw.area, true
	if to <= from {
		return from, to, 0, false
	}
	return from, to, secondsToDuration((r.saw.area - fromArea) / to.Sub(from).Seconds()), true
}

// closeEpoch ends epoch k at now, applies the decision table and starts k+1.
func (r *Regulator) closeEpoch(now clock.Mono) {
	r.setBacklog(now, r.backlog)
	st := EpochStats{
		Index:      r.epochIndex,
		Start:      r.epochStart,
		End:        now,
		Backlog:    r.backlogArea / now.Sub(r.epochStart).Seconds(),
		Signal:     r.signal,
		T:          r.epochLength(),
		RateBefore: r.rate,
	}
	z := r.z
	if r.tun.EpochZ > 0 && r.departures >= r.tun.EpochZ {
		z = now.Sub(r.epochStart) / time.Duration(r.departures)
	}
	if r.zValid {
		st.Z = z
	}
	st.Departures = r.departures
	st.AgeFrom, st.AgeTo, st.Age, st.AgeValid = r.epochAge(now)

	r.queue.close()
	if r.queue.valid {
		st.QueueDelay = r.queue.delay
	}
	st.ReturnQueueDelay = r.queue.revDelay
	sigma := r.source.close()
	st.SourceRate = sigma
	r.grad.measure(&st)
	r.deliv.observe(now, r.grad.rho, r.grad.dlv, r.tun.RateBand)
	r.foreign.observe(now, r.queue.delay, r.queue.fresh && !r.deliv.recent(now), r.queue.queued(r.grad.rho))
	st.Shared = r.foreign.seen(now)

	var bstar float64
	if r.tun.Gradient {
		var lambda Rate
		st.Action, lambda = r.gradient(&st, r.outstanding, r.queue.delay, r.queue.fresh)
		if st.Action != ActionHold {
			r.setRate(lambda)
			r.ruled = true
		}
	} else if r.prevValid && st.AgeValid && r.zValid {
		st.Compared = true
		st.B = st.Backlog - r.prevBacklog
		st.Delta = st.Age - r.prevAge
		rw := decide(st.B, st.Delta.Seconds())
		if rw == rowNone && r.tun.ExploreOnHold {
			rw = rowUpDown // INC: see Tuning.ExploreOnHold
		}
		st.Action, bstar = r.apply(rw, st.Backlog)
	} else {
		// Not enough information: keep the rate. This epoch is not in row
		// (b>0, δ>0), so a run of MDECs ends here.
		st.Action, bstar = r.apply(rowNone, st.Backlog)
	}
	if st.Action != ActionHold && !r.tun.Gradient {
		lambda := nextRate(z, bstar, st.T, r.minRate(), r.cfg.MaxRate)
		if r.tun.BinaryInc {
			lambda = r.binaryInc(st.Action, r.prevWasUpUp, st.RateBefore, lambda, st.T)
		}
		r.setRate(lambda)
		r.ruled = true
	}
	st.Queued = r.queue.queued(r.grad.rho)
	st.Bound = r.applyBounds(sigma)
	st.Step, st.Capacity = r.grad.step, Rate(r.deliv.capacity)
	st.BStar, st.Gamma, st.Rate, st.Ceiling = bstar, r.gamma, r.rate, r.ceiling
	r.lastEpoch = st
	r.outstanding = r.backlog > 0

	r.prevBacklog, r.prevAge, r.prevValid = st.Backlog, st.Age, st.AgeValid
	r.epochStart, r.backlogArea, r.departures = now, 0, 0
	r.epochIndex++
	r.counters.Epochs++
}

// apply turns a table row into an action and b*, updating γ as ACP's table says. γ
// counts the MDECs of the current run of consecutive (b>0, δ>0) epochs: the
// first epoch of a run is a DEC and sets γ = 0, each further one increments γ
// and applies MDEC(γ); any other row ends the run (and the INC/DEC rows reset
// γ, as the table says; a hold leaves it, which is the same since the next
// run starts with DEC and γ = 0).
func (r *Regulator) apply(rw row, backlog float64) (Action, float64) {
	upUp := r.prevWasUpUp
	r.prevWasUpUp = rw == rowUpUp
	switch rw {
	case rowUpUp:
		if upUp {
			r.gamma++
			return ActionMDec, -(1 - math.Exp2(-float64(r.gamma))) * backlog
		}
		r.gamma = 0
		return ActionDec, -r.tun.Kappa
	case rowDownUp, rowUpDown:
		r.gamma = 0
		return ActionInc, math.Max(r.tun.Kappa, r.tun.IncFraction*backlog)
	case rowDownDown:
		r.gamma = 0
		return ActionDec, -r.tun.Kappa
	default:
		return ActionHold, 0
	}
}

// binaryInc is Tuning.BinaryInc: it records the ceiling at the DEC that
// starts a (b>0, δ>0) run (upUp: this epoch fell in that row; before: the
// epoch's rate) and bounds an INC from λ below the ceiling C to
// max(λ + κ/T, (λ + C)/2); an INC from λ ≥ C clears the ceiling. Other
// actions pass lambda through.
func (r *Regulator) binaryInc(a Action, upUp bool, before, lambda Rate, t time.Duration) Rate {
	switch {
	case a == ActionDec && upUp:
		r.ceiling = before
	case a == ActionInc && r.ceiling > 0 && lambda > r.rate:
		if r.rate >= r.ceiling {
			r.ceiling = 0 // probed past it without a (b>0, δ>0): the path got faster
			return lambda
		}
		return min(lambda, max(r.rate+Rate(r.tun.Kappa/t.Seconds()), (r.rate+r.ceiling)/2))
	}
	return lambda
}

// depart is an update leaving the backlog, for Z: an ACK, or with
// ZCountsLosses a loss. Z is the EWMA of the intervals between departures;
// departures counts them in the current epoch (Tuning.EpochZ).
func (r *Regulator) depart(now clock.Mono) {
	if r.ackSeen {
		sample := now.Sub(r.lastAck)
		if r.zValid {
			r.z += time.Duration(r.tun.ZGain * float64(sample-r.z))
		} else {
			r.z, r.zValid = sample, true
		}
	}
	r.lastAck, r.ackSeen = now, true
	r.departures++
}

// OnUpdateSent records that the update generated at gen was sent now as
// packet pn. gen after now is taken as now (an update cannot be sent before
// it exists).
func (r *Regulator) OnUpdateSent(now clock.Mono, pn cc.PacketNumber, gen clock.Mono) {
	now = r.tick(now)
	if gen > now {
		gen = now
	}
	r.source.onSend(now, gen, r.lastSent.Add(r.interval), r.sentAny)
	n := r.backlog + 1
	r.outstanding = true
	if r.ring.put(pn, uint64(r.counters.Sent), gen, now) == slotOutstanding {
		n-- // evicted: counted lost
		r.counters.Evicted++
	}
	r.setBacklog(now, n)
	r.lastSent, r.sentAny = now, true
	r.counters.Sent++
}

// SeedRTT implements Policy: an RTT from elsewhere on the path, used only
// until the regulator has a sample of its own.
func (r *Regulator) SeedRTT(rtt time.Duration) {
	if rtt <= 0 || r.rtt.HasSample() {
		return
	}
	r.rtt.Update(rtt)
	if !r.ruled {
		r.setRate(r.startRate())
	}
}

// OnAck implements Policy: update ack.PacketNumber was delivered. It
// updates SRTT (from ack.RTT), Z, the backlog and the monitor's sawtooth.
func (r *Regulator) OnAck(now clock.Mono, ack cc.AckSample) {
	now = r.tick(now)
	if ack.RTT > 0 {
		r.rtt.Update(ack.RTT)
		if !r.ruled {
			r.setRate(r.startRate())
		}
	}
	r.depart(now)

	s := r.ring.get(ack.PacketNumber)
	if s == nil {
		r.counters.UnknownAcks++
		return
	}
	if s.state == slotOutstanding {
		r.setBacklog(now, r.backlog-1)
	} else {
		r.counters.LateAcks++
	}
	r.counters.Acked++
	r.queue.sample(now, ack, r.owdTrusted(ack))
	recv, sig := r.deliveryTime(now, s.sent, ack)
	r.grad.onAck(s.seq, s.sent, recv)
	r.saw.deliver(s.gen, recv)
	r.lag, r.lagValid, r.signal = now.Sub(recv), true, sig
	s.state = slotFree
}

// deliveryTime is r_i for an update sent at sent and acknowledged now: the
// receiver's delivery time sent + OWD when the sample is trustworthy, else
// ACK arrival − RTT/2 with the ACK's own RTT sample (SRTT, then InitialRTT, if
// it has none). The result lies in [sent, now].
func (r *Regulator) deliveryTime(now, sent clock.Mono, ack cc.AckSample) (clock.Mono, cc.DelaySignal) {
	if r.owdTrusted(ack) {
		return min(sent.Add(ack.OWD), now), cc.SignalOWD
	}
	rtt := ack.RTT
	if rtt <= 0 {
		rtt = r.smoothedRTT()
	}
	return max(now.Add(-rtt/2), sent), cc.SignalRTT
}

// owdTrusted reports whether ack's OWD sample is used (Tuning.AgeSource,
// and a valid, synchronized, plausible sample: 0 ≤ OWD ≤ RTT sample).
func (r *Regulator) owdTrusted(ack cc.AckSample) bool {
	return r.tun.AgeSource == AgeFromOWD && ack.OWDValid && ack.ClockSynced &&
		ack.OWD >= 0 && (ack.RTT <= 0 || ack.OWD <= ack.RTT)
}

// OnLoss implements Policy: the update is gone (never retransmitted;
// a newer one replaces it), so it leaves the backlog. Its record stays until
// its slot is reused, so a late ACK still counts for age.
func (r *Regulator) OnLoss(now clock.Mono, loss cc.LossEvent) {
	now = r.tick(now)
	s := r.ring.get(loss.PacketNumber)
	if s == nil || s.state != slotOutstanding {
		return
	}
	r.setBacklog(now, r.backlog-1)
	s.state = slotLost
	r.counters.Lost++
	if r.tun.ZCountsLosses {
		r.depart(now)
	}
}

// OnRetransmissionTimeout implements Policy. The path may have changed
// entirely, so the epoch history (B̄_{k−1}, Δ̄_{k−1}, γ, fresh's step and the
// delivery bound's capacity) no longer describes it: the regulator restarts
// from its start rate, as at start, and needs two measured epochs before the
// table acts again.
func (r *Regulator) OnRetransmissionTimeout(now clock.Mono) {
	r.tick(now)
	r.prevValid, r.prevWasUpUp, r.gamma, r.ruled = false, false, 0, false
	r.ceiling = 0
	r.grad.reset()
	r.deliv = newDeliveryState()
	r.setRate(r.startRate())
}

// Rate is the current update rate λ in updates per second.
func (r *Regulator) Rate() Rate { return r.rate }

// NextSendTime is when the next update may be sent: the last send plus 1/λ.
// Before the first send it is 0, i.e. immediately (fresh clocks start at 0).
// The transport then sends the freshest update it has.
func (r *Regulator) NextSendTime() clock.Mono {
	if !r.sentAny {
		return 0
	}
	return r.lastSent.Add(r.interval)
}

// Signal implements Policy: how the latest delivery was placed on the
// monitor's timeline, cc.SignalOWD (send time + OWD) or cc.SignalRTT (ACK
// arrival − RTT/2; see Tuning.AgeSource); cc.SignalNone before the first.
func (r *Regulator) Signal() cc.DelaySignal { return r.signal }

// Backlog is the number of updates sent and neither acknowledged nor lost.
func (r *Regulator) Backlog() int { return r.backlog }

// Z is the smoothed ACK inter-arrival time (0 before two ACKs).
func (r *Regulator) Z() time.Duration {
	if !r.zValid {
		return 0
	}
	return r.z
}

// LastEpoch describes the most recently closed epoch (zero before the first).
func (r *Regulator) LastEpoch() EpochStats { return r.lastEpoch }

// Counters returns the cumulative event counts.
func (r *Regulator) Counters() Counters { return r.counters }
