package clock

import (
	"errors"
	"math"
	"sync"
	"time"

	"github.com/fresh-udp/fresh"
)

// Stamp is a wall-clock timestamp in microseconds since the Unix epoch, read
// from one host's clock (Clock.Wall). It is the unit the wire carries (the
// send stamp PStime and arrival stamp PRtime of a one-way delay). Stamps
// from two different hosts differ by those hosts' clock offset; only the Inband
// estimator relates them.
type Stamp int64

// StampOf returns t as a Stamp (truncated to the microsecond).
func StampOf(t time.Time) Stamp { return Stamp(t.UnixMicro()) }

// Time returns s as a time.Time.
func (s Stamp) Time() time.Time { return time.UnixMicro(int64(s)) }

// Sub returns s − o. Both must come from the same host's clock for the result
// to be a duration rather than a duration plus an offset.
func (s Stamp) Sub(o Stamp) time.Duration { return time.Duration(s-o) * time.Microsecond }

// ErrBadExchange is returned by Inband.AddExchange for timestamps no real
// exchange can produce (the ACK received before the data was sent, or sent
// before the data was received). The sample is not used.
var ErrBadExchange = errors.New("clock: impossible four-timestamp exchange")

// ErrInvalidConfig is wrapped by every error a constructor of this package
// returns for a Config field out of range; the message names the field. It
// is the same value in every fresh package (clock, owd, acp, transport,
// …): errors.Is(err, transport.ErrInvalidConfig) holds for all of them.
var ErrInvalidConfig = fresh.ErrInvalidConfig

// InbandConfig configures an Inband estimator. The zero value is valid: every
// zero field takes the default written beside it.
type InbandConfig struct {
	// Window is the length of one envelope window, on the sender's clock.
	// Each window keeps only its minimum delay per direction, so Window
	// trades time resolution for queueing immunity: with a sample every
	// 10 ms a 1 s window keeps the best of ~100. Default 1 s; at least
	// 1 ms, at most 1 h (a sample's place in its window is kept in 32 bits
	// of µs).
	Window time.Duration
	// Windows is the history length in windows: the skew line is fitted and
	// the offset anchored over the last Windows·Window of samples. Memory is
	// fixed by it (a few dozen bytes per window). Default 64 (~1 minute,
	// NTP's minimum poll interval: long enough to see 100 ppm as 6.4 ms of
	// drift, short enough that oscillator wander stays small). At least 4.
	// Each window costs 16 bytes.
	Windows int
	// MinWindows is how many windows must hold samples (in the better-fed
	// direction) before Synced reports true: a skew fitted over fewer
	// windows is noise. Default 8. At least 2, at most Windows.
	MinWindows int
	// MaxSkewPPM bounds a believable relative skew, parts per million. Two
	// free-running crystals rarely differ by more than 200 ppm, and a host
	// slewed by ntpd/chrony adds at most 500 ppm each (both slew limits, see
	// ntpclock.Config.MaxSlewPPM). A fit beyond ±MaxSkewPPM is clamped and the
	// estimator reports itself not Synced. Default 1000.
	MaxSkewPPM float64
	// StepThreshold detects a clock step (see Inband.Steps): StepSamples
	// consecutive samples of one direction whose apparent delay, skew
	// removed, lies more than StepThreshold below that direction's
	// envelope minimum cannot come from queueing (queueing only adds
	// delay), so θ changed under the history (a host's clock was stepped,
	// as ntpd/chrony do beyond 128 ms) or the path got shorter. Either way
	// the history no longer describes the clocks: the estimator resets and
	// relearns from the current sample. Default 20 ms (a step well below
	// NTP's 128 ms, well above envelope noise); negative disables.
	StepThreshold time.Duration
	// StepSamples is how many consecutive samples confirm a step (one
	// corrupt stamp must not wipe the history). Default 3.
	StepSamples int
}

// Defaults of InbandConfig (see the fields).
const (
	DefaultInbandWindow        = time.Second
	DefaultInbandWindows       = 64
	DefaultInbandMinWindows    = 8
	DefaultInbandMaxSkewPPM    = 1000.0
	DefaultInbandStepThreshold = 20 * time.Millisecond
	DefaultInbandStepSamples   = 3
)

// MaxInbandWindow is the longest InbandConfig.Window: a sample's offset
// within its window, in µs, plus one (zero marks an empty slot) must fit
// the 32 bits the history keeps it in.
const MaxInbandWindow = time.Hour

func (c InbandConfig) withDefaults() (InbandConfig, error) {
	if c.Window == 0 {
		c.Window = DefaultInbandWindow
	}
	if c.Windows == 0 {
		c.Windows = DefaultInbandWindows
	}
	if c.MinWindows == 0 {
		c.MinWindows = min(DefaultInbandMinWindows, c.Windows)
	}
	if c.StepThreshold == 0 {
		c.StepThreshold = DefaultInbandStepThreshold
	}
	if c.StepSamples == 0 {
		c.StepSamples = DefaultInbandStepSamples
	}
	if c.MaxSkewPPM == 0 {
		c.MaxSkewPPM = DefaultInbandMaxSkewPPM
	}
	switch {
	case c.Window < time.Millisecond:
		return c, fresh.InvalidField("clock.InbandConfig.Window", "%v < 1ms", c.Window)
	case c.Window > MaxInbandWindow:
		return c, fresh.InvalidField("clock.InbandConfig.Window", "%v > %v", c.Window, MaxInbandWindow)
	case c.Windows < 4:
		return c, fresh.InvalidField("clock.InbandConfig.Windows", "%d < 4", c.Windows)
	case c.MinWindows < 2 || c.MinWindows > c.Windows:
		return c, fresh.InvalidField("clock.InbandConfig.MinWindows", "%d not in [2, Windows=%d]", c.MinWindows, c.Windows)
	case c.StepSamples < 1:
		return c, fresh.InvalidField("clock.InbandConfig.StepSamples", "%d < 1", c.StepSamples)
	case !(c.MaxSkewPPM > 0) || math.IsInf(c.MaxSkewPPM, 0):
		return c, fresh.InvalidField("clock.InbandConfig.MaxSkewPPM", "%v must be positive and finite", c.MaxSkewPPM)
	}
	return c, nil
}

// Inband estimates the offset and relative skew between two hosts' wall
// clocks from the timestamps already carried by data packets and ACKs, and
// turns a (send stamp, arrival stamp) pair into a one-way delay. It is pure:
// no goroutines, no clock reads, no I/O; memory is fixed at construction and
// no method allocates. It is not safe for concurrent use.
//
// Naming: the "sender" stamps data packets and receives ACKs (NTP's client:
// T1, T4); the "receiver" stamps data arrivals and sends ACKs (NTP's server:
// T2, T3). Offset is θ = receiver clock − sender clock, NTP's sign (RFC 5905
// §8), and is a function of time because of skew: θ(t) = θ₀ + skew·(t − t₀),
// with t read on the sender's clock. The "offset" of a one-way delay (sender − receiver,
// added to PRtime − PStime) is −θ. See the package doc for the method.
type Inband struct {
	cfg   InbandConfig
	winUS int64 // Window in µs

	// ring[w mod len] holds window w for newest−len < w ≤ newest: the
	// slots a window passes on its way out are cleared as newest
	// advances, so a slot's index is implied by its position.
	ring []inbandWindow
	// base[dir] is the apparent delay (µs) the ring's delays of that
	// direction are relative to (see fitDelay).
	base    [2]int64
	started bool
	newest  int64 // newest window index seen
	latest  Stamp // latest sender-axis time seen

	samples uint64 // samples accepted (a forward or reverse one-way delay each)
	dropped uint64 // samples older than the history, impossible exchanges, from before a step, or hours off (fitDelay)

	// Step detection (InbandConfig.StepThreshold): consecutive samples
	// below each direction's envelope, and resets done.
	belowF, belowR int
	steps          uint64
	// After a step: samples of the other direction taken before it
	// (apparent delay below guard, µs) still arrive for a round trip or
	// so, and must not enter the new history (see stepped).
	guardF, guardR stepGuard

	// The fit, cached until a sample changes the envelope (dirty); refit's
	// scratch comes from refitScratchPool.
	dirty bool
	fit   inbandFit
}

// inbandWindow keeps, per direction, the sample with the smallest apparent
// delay (arrival stamp − send stamp) that fell into one window. It is 16
// bytes rather than the 56 of two (time, delay, flag) triples of int64: a
// monitor holds one history per source (120 windows in the transport).
type inbandWindow struct {
	pt [2]envelopePoint // [fwd], [rev]
}

// Directions, indexes of inbandWindow.pt and Inband.base.
const (
	fwd = 0
	rev = 1
)

// envelopePoint is one lower-envelope candidate. off is its time on the
// sender's clock as µs into its window, plus one (0: no sample; Window ≤
// MaxInbandWindow keeps it in range). d is its apparent delay in µs (a
// one-way delay plus or minus θ, depending on direction) relative to the
// direction's Inband.base: θ may be anything (a device whose clock reads
// 1970 is 1.7·10¹⁵ µs off), but a direction's apparent delays across one
// history differ by path delay and skew drift, far less than the ±35 min
// an int32 of µs spans.
type envelopePoint struct {
	off uint32
	d   int32
}

func (p envelopePoint) ok() bool { return p.off != 0 }

// offer keeps (off, d) if it is below the point's delay; off is µs into
// the window, d relative to the direction's base.
func (p *envelopePoint) offer(off uint32, d int32) bool {
	if p.ok() && d >= p.d {
		return false
	}
	*p = envelopePoint{off: off + 1, d: d}
	return true
}

// inbandFit is the cached line θ(t) = theta0 + skew·(t − ref).
type inbandFit struct {
	ref      int64   // sender-axis µs the line is anchored at
	theta0   float64 // θ at ref, µs
	skew     float64 // dθ/dt, µs per µs (×1e6 = ppm)
	bound    float64 // ±bound µs contains θ if one-way delays are ≥ 0
	f0, r0   float64 // the envelopes' minima, skew removed (+Inf: no samples)
	nf, nr   int     // windows with forward / reverse samples
	hasTheta bool    // both directions seen: θ is defined
	hasSkew  bool    // a slope could be fitted
	skewOK   bool    // hasSkew and |skew| ≤ MaxSkewPPM
}

// NewInband returns an estimator with cfg (zero fields take defaults).
func NewInband(cfg InbandConfig) (*Inband, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	n := cfg.Windows
	return &Inband{
		cfg:   cfg,
		winUS: cfg.Window.Microseconds(),
		ring:  make([]inbandWindow, n),
	}, nil
}

// Config returns the configuration in use, defaults filled in.
func (e *Inband) Config() InbandConfig { return e.cfg }

// Reset forgets every sample (call it after either host's wall clock was
// stepped: the old envelope no longer describes the clocks). Steps larger
// than InbandConfig.StepThreshold are detected and reset automatically.
func (e *Inband) Reset() {
	e.reset()
	e.samples, e.dropped, e.steps = 0, 0, 0
}

// reset forgets the history but keeps the counters.
func (e *Inband) reset() {
	clear(e.ring)
	e.started, e.newest, e.latest = false, 0, 0
	e.base = [2]int64{}
	e.dirty, e.fit = false, inbandFit{}
	e.belowF, e.belowR = 0, 0
	e.guardF, e.guardR = stepGuard{}, stepGuard{}
}

// stepGuard holds out one direction's samples taken before a clock step
// that the other direction detected.
//
// A step moves the two directions' apparent delays apart: by −Δ in the
// direction that detects it (its samples fall below the envelope) and by
// +Δ in the other. Samples stamped before the step keep arriving after
// the reset, in the other direction only: an ACK's echoed T3/T4 rides on
// the next data packets, and data sent before the step is still in
// flight. In the new, empty history such a sample is Δ below every
// current one and would be that direction's minimum for the whole
// history, putting θ off by Δ/2 while Synced says true (a 2 s step of
// the receiver's clock read as a 1 s offset error, measured through the
// relay). The guard drops the other direction's samples whose apparent
// delay is below its old minimum + Δ − StepThreshold, until that
// direction has filled two windows after the step: by then the ordinary
// screen (which needs a fitted skew) holds out such stragglers.
type stepGuard struct {
	below   float64 // drop samples whose apparent delay (µs) is below this
	from    int64   // first window with a sample after the step
	started bool    // from is set
	active  bool
}

// pass reports whether a sample with apparent delay d (µs) at sender-axis
// time at (µs) may enter the history, and retires the guard once two
// windows of the direction have passed it.
func (g *stepGuard) pass(d, at, winUS int64) bool {
	if !g.active {
		return true
	}
	if float64(d) < g.below {
		return false
	}
	w := floorDiv(at, winUS)
	switch {
	case !g.started:
		g.from, g.started = w, true
	case w >= g.from+2 || w < g.from-2:
		// Two windows of current samples (or the sender's clock moved
		// back past the step: its own samples are all current).
		g.active = false
	}
	return true
}

// screen decides whether a sample may enter the envelope. d is its
// detrended apparent delay, base its direction's envelope minimum, *below
// the run of samples more than StepThreshold under base. Such a sample is
// held out (one corrupt stamp would otherwise be the window's minimum for
// the whole history) until StepSamples in a row confirm a step: then the
// history is reset, the step counted, and the sample used. It reads the
// cached fit, which may lag a few samples: a step is tens of milliseconds
// or more, the lag's effect microseconds.
func (e *Inband) screen(below *int, base float64, d int64, other *stepGuard, otherBase float64) bool {
	if e.cfg.StepThreshold < 0 || !e.fit.hasSkew || math.IsInf(base, 0) {
		return true
	}
	thr := float64(e.cfg.StepThreshold.Microseconds())
	if float64(d) >= base-thr {
		*below = 0
		return true
	}
	*below++
	if *below < e.cfg.StepSamples {
		return false
	}
	e.steps++
	e.reset()
	if !math.IsInf(otherBase, 0) {
		// The other direction's samples now read base−d higher.
		*other = stepGuard{below: otherBase + (base - float64(d)) - thr, active: true}
	}
	return true
}

// Steps counts the clock steps detected (and reset for) since construction
// or Reset.
func (e *Inband) Steps() uint64 { return e.steps }

// AddForward records a data packet: sent is its send stamp (sender clock),
// recv its arrival stamp (receiver clock). recv − sent = OWD + θ(sent).
// This is the one-direction mode: the receiver of a flow calls it for every
// data packet, and it alone yields the skew but not θ (see AddReverse).
func (e *Inband) AddForward(sent, recv Stamp) {
	if !e.guardF.pass(int64(recv-sent), int64(sent), e.winUS) {
		e.dropped++
		return
	}
	r0 := e.fit.r0 - float64(e.fit.detrend(int64(sent)))
	if !e.screen(&e.belowF, e.fit.f0, int64(recv-sent)-e.fit.detrend(int64(sent)), &e.guardR, r0) {
		return
	}
	e.record(fwd, int64(sent), int64(recv-sent))
}

// AddReverse records a packet the other way: sent is its send stamp on the
// receiver's clock (an ACK's T3), recv its arrival stamp on the sender's
// clock (T4). recv − sent = OWD_reverse − θ(recv). At least one reverse
// sample is needed to split apparent delay into delay and offset.
func (e *Inband) AddReverse(sent, recv Stamp) {
	if !e.guardR.pass(int64(recv-sent), int64(recv), e.winUS) {
		e.dropped++
		return
	}
	f0 := e.fit.f0 + float64(e.fit.detrend(int64(recv)))
	if !e.screen(&e.belowR, e.fit.r0, int64(recv-sent)+e.fit.detrend(int64(recv)), &e.guardF, f0) {
		return
	}
	e.record(rev, int64(recv), int64(recv-sent))
}

// AddExchange records NTP's four-timestamp exchange (RFC 5905 §8): t1 data
// sent (sender clock), t2 data received (receiver clock), t3 ACK sent
// (receiver clock), t4 ACK received (sender clock). It is AddForward(t1, t2)
// plus AddReverse(t3, t4); the single-exchange offset is
// θ = ((t2−t1)+(t3−t4))/2 with round trip δ = (t4−t1)−(t3−t2).
// It returns ErrBadExchange, and uses nothing, if t4 < t1 or t3 < t2.
func (e *Inband) AddExchange(t1, t2, t3, t4 Stamp) error {
	if t4 < t1 || t3 < t2 {
		e.dropped++
		return ErrBadExchange
	}
	e.AddForward(t1, t2)
	e.AddReverse(t3, t4)
	return nil
}

// record offers a sample of direction dir at sender-axis time at (µs) with
// apparent delay d (µs) to its window, advancing the history if at is
// newer. Samples older than the history, or whose delay no base can hold
// together with the direction's history (fitDelay), are dropped.
func (e *Inband) record(dir int, at, d int64) {
	w := floorDiv(at, e.winUS)
	n := int64(len(e.ring))
	switch {
	case !e.started:
		e.started, e.newest, e.latest = true, w, Stamp(at)
		e.dirty = true
	case w > e.newest:
		// Clear the slots of the windows falling out of the history,
		// which the new ones reuse.
		for v := e.newest + 1; v <= min(w, e.newest+n); v++ {
			e.ring[floorMod(v, n)] = inbandWindow{}
		}
		e.newest = w
		e.dirty = true // windows fell out of the history
	case w <= e.newest-n:
		e.dropped++
		return
	}
	rd, ok := e.fitDelay(dir, d)
	if !ok {
		e.dropped++
		return
	}
	e.latest = max(e.latest, Stamp(at))
	e.samples++
	if e.ring[floorMod(w, n)].pt[dir].offer(uint32(at-w*e.winUS), rd) {
		e.dirty = true
	}
}

// fitDelay returns apparent delay d (µs) of direction dir relative to the
// direction's base, moving the base if d is out of int32 range of it: to d
// if the direction's history is empty (the first sample, or the first
// after a reset), else to the middle of the history's delays and d, with
// every stored delay shifted, if they then all fit (skew drift over a
// long-lived flow: 1000 ppm moves the delays 35 min in 25 days). ok is
// false if they do not: the history's delays and d are more than 71 min
// apart, which no path delay and no believable skew explains within one
// history. The sample is dropped rather than the history: one corrupt
// stamp must not wipe it, and a real step that large is detected and
// reset for (StepThreshold) in the direction it lowers; in the direction
// it raises, the old history ages out and the base follows.
func (e *Inband) fitDelay(dir int, d int64) (int32, bool) {
	if r := d - e.base[dir]; r >= math.MinInt32 && r <= math.MaxInt32 {
		return int32(r), true
	}
	lo, hi := d, d
	for i := range e.ring {
		if p := e.ring[i].pt[dir]; p.ok() {
			v := e.base[dir] + int64(p.d)
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	base := lo + (hi-lo)/2
	if lo-base < math.MinInt32 || hi-base > math.MaxInt32 {
		return 0, false
	}
	for i := range e.ring {
		if p := &e.ring[i].pt[dir]; p.ok() {
			p.d = int32(e.base[dir] + int64(p.d) - base)
		}
	}
	e.base[dir] = base
	return int32(d - base), true
}

// Offset returns the estimated θ = receiver clock − sender clock at sender
// time at. It is 0 until both directions have been seen; trust it only
// while Synced.
func (e *Inband) Offset(at Stamp) time.Duration {
	f := e.current()
	return usToDuration(f.theta(int64(at)))
}

// SkewPPM returns the fitted relative skew dθ/dt in parts per million: how
// much faster the receiver's clock runs than the sender's (100 means the
// receiver gains 100 µs per second). 0 until a slope could be fitted; clamped
// to ±MaxSkewPPM.
func (e *Inband) SkewPPM() float64 { return e.current().skew * 1e6 }

// OWD returns the one-way delay of a data packet sent at sent (sender clock)
// and received at recv (receiver clock): recv − sent − θ(sent). ok is false
// while the estimator is not Synced, or when sent lies beyond the history
// horizon (more than Windows windows after the newest sample), where the
// skew extrapolation is no longer backed by data; the caller then falls
// back to RTT/2. It does not record the sample: call AddForward.
func (e *Inband) OWD(sent, recv Stamp) (owd time.Duration, ok bool) {
	f := e.current()
	if !e.synced(f) || floorDiv(int64(sent), e.winUS) > e.newest+int64(len(e.ring)) {
		return 0, false
	}
	return usToDuration(float64(recv-sent) - f.theta(int64(sent))), true
}

// Synced reports whether the estimate is usable: both directions seen, at
// least MinWindows windows of samples in one direction, and a fitted skew
// within ±MaxSkewPPM.
func (e *Inband) Synced() bool { return e.synced(e.current()) }

func (e *Inband) synced(f *inbandFit) bool {
	return f.hasTheta && f.skewOK && max(f.nf, f.nr) >= e.cfg.MinWindows
}

// InbandStatus is a snapshot of an Inband estimator, for logs and results.
type InbandStatus struct {
	// Offset is θ (receiver − sender) at the latest sample.
	Offset time.Duration
	// SkewPPM is the fitted relative skew, ppm (see Inband.SkewPPM).
	SkewPPM float64
	// ErrorBound is half the smallest round trip the history shows
	// (forward and reverse envelope minima added): θ is within ±ErrorBound
	// of Offset whatever the path asymmetry, as long as one-way delays are
	// non-negative (NTP's bound, RFC 5905 §8). Asymmetric base delays bias
	// Offset by half their difference, always inside this bound.
	ErrorBound time.Duration
	// ForwardWindows and ReverseWindows count history windows holding
	// samples of each direction.
	ForwardWindows, ReverseWindows int
	// Samples counts accepted one-way samples (an exchange is two);
	// Dropped counts those older than the history, impossible exchanges,
	// samples taken before a detected clock step, and samples whose
	// apparent delay lies so far from their direction's history that the
	// two span more than 71 min (real steps: InbandConfig.StepThreshold).
	Samples, Dropped uint64
	// Steps counts clock steps detected (see InbandConfig.StepThreshold).
	Steps uint64
	// Synced is Inband.Synced.
	Synced bool
}

// Status returns a snapshot of the estimate.
func (e *Inband) Status() InbandStatus {
	f := e.current()
	return InbandStatus{
		Offset:         usToDuration(f.theta(int64(e.latest))),
		SkewPPM:        f.skew * 1e6,
		ErrorBound:     usToDuration(f.bound),
		ForwardWindows: f.nf,
		ReverseWindows: f.nr,
		Samples:        e.samples,
		Dropped:        e.dropped,
		Steps:          e.steps,
		Synced:         e.synced(f),
	}
}

// detrend is the skew's contribution at sender time at, relative to the
// line's anchor: a forward apparent delay minus it (a reverse one plus it)
// is comparable with f0 (r0).
func (f *inbandFit) detrend(at int64) int64 { return int64(f.skew * float64(at-f.ref)) }

func (f *inbandFit) theta(at int64) float64 {
	if !f.hasTheta {
		return 0
	}
	return f.theta0 + f.skew*float64(at-f.ref)
}

// current returns the fit, recomputing it if a sample changed an envelope.
func (e *Inband) current() *inbandFit {
	if e.dirty {
		e.refit()
	}
	return &e.fit
}

// refit recomputes the offset line from the envelope minima.
//
//  1. Per direction, the window minima (x = sender time, y = apparent delay)
//     form a lower envelope. Forward y = OWD_f + θ(x), reverse
//     y = OWD_r − θ(x); on the envelope the OWDs are near their base, so the
//     slopes are +skew and −skew.
//  2. Each direction's slope is the lower-convex-hull edge above the mean x
//     (the linear program of Moon, Skelly & Towsley, "Estimation and removal
//     of clock skew from network delay measurements", INFOCOM 1999: the line
//     under every point that minimises the summed vertical distance).
//     Unlike least squares it ignores upward outliers, i.e. windows spent
//     behind a standing queue. The two slopes are averaged with
//     inverse-variance weights (slopeWeight), so the direction with many
//     samples per window dominates in one-direction mode.
//  3. With the skew removed, the smallest forward value F₀ and smallest
//     reverse value R₀ are minimum-delay samples in NTP's clock-filter sense,
//     taken per direction: F₀ = base_f + θ₀, R₀ = base_r − θ₀ (queueing
//     ≈ 0), so θ₀ = (F₀ − R₀)/2 exactly when base_f = base_r, and biased by
//     (base_f − base_r)/2 otherwise. (F₀ + R₀)/2 bounds the error.
func (e *Inband) refit() {
	sc := getRefitScratch(len(e.ring))
	defer refitScratchPool.Put(sc)
	e.dirty = false
	ref := e.newest * e.winUS
	f := inbandFit{ref: ref}
	oldest := e.newest - int64(len(e.ring)) + 1
	// Points are read relative to ref (time) and to each direction's
	// base (delay): the line is fitted in small numbers, and the bases
	// are added back to its minima below.
	for w := oldest; w <= e.newest; w++ {
		s := &e.ring[floorMod(w, int64(len(e.ring)))]
		start := w*e.winUS - ref - 1 // off is µs into the window plus one
		if p := s.pt[fwd]; p.ok() {
			sc.fx[f.nf], sc.fy[f.nf] = float64(start+int64(p.off)), float64(p.d)
			f.nf++
		}
		if p := s.pt[rev]; p.ok() {
			sc.rx[f.nr], sc.ry[f.nr] = float64(start+int64(p.off)), float64(p.d)
			f.nr++
		}
	}
	fx, fy, rx, ry := sc.fx[:f.nf], sc.fy[:f.nf], sc.rx[:f.nr], sc.ry[:f.nr]

	sf, okf := lowerHullSlope(fx, fy, sc.hull)
	sr, okr := lowerHullSlope(rx, ry, sc.hull)
	switch {
	case okf && okr:
		wf, wr := slopeWeight(fx, fy, sf), slopeWeight(rx, ry, sr)
		f.skew = (wf*sf - wr*sr) / (wf + wr)
	case okf:
		f.skew = sf
	case okr:
		f.skew = -sr
	}
	f.hasSkew = okf || okr
	maxSkew := e.cfg.MaxSkewPPM / 1e6
	f.skewOK = f.hasSkew && math.Abs(f.skew) <= maxSkew
	f.skew = max(-maxSkew, min(maxSkew, f.skew))

	f.f0, f.r0 = math.Inf(1), math.Inf(1)
	for i := range fx {
		f.f0 = min(f.f0, fy[i]-f.skew*fx[i])
	}
	for i := range rx {
		f.r0 = min(f.r0, ry[i]+f.skew*rx[i])
	}
	f.f0 += float64(e.base[fwd])
	f.r0 += float64(e.base[rev])
	if f.nf > 0 && f.nr > 0 {
		f.theta0 = (f.f0 - f.r0) / 2
		f.bound = max(0, (f.f0+f.r0)/2)
		f.hasTheta = true
	}
	e.fit = f
}

// refitScratch is refit's working memory: the envelope points of both
// directions and the hull stack, a window's worth each. It lives only
// during a refit, so estimators share it through refitScratchPool rather
// than each keeping its own (4.8 KiB with the transport's 120 windows: a
// monitor has one estimator per source).
type refitScratch struct {
	fx, fy, rx, ry []float64
	hull           []int
}

var refitScratchPool sync.Pool

// getRefitScratch returns scratch for n windows.
func getRefitScratch(n int) *refitScratch {
	if sc, ok := refitScratchPool.Get().(*refitScratch); ok && len(sc.hull) >= n {
		return sc
	}
	return &refitScratch{fx: make([]float64, n), fy: make([]float64, n), rx: make([]float64, n), ry: make([]float64, n), hull: make([]int, n)}
}

// lowerHullSlope returns the slope of the lower-convex-hull edge of the
// points (x ascending) that spans the mean x, using h (len ≥ len(x)) as the
// hull stack. ok is false with fewer than two points.
func lowerHullSlope(x, y []float64, h []int) (slope float64, ok bool) {
	if len(x) < 2 {
		return 0, false
	}
	n := 0
	var sum float64
	for i := range x {
		sum += x[i]
		// Andrew's monotone chain: pop while the last two hull points and
		// point i do not make a strict left (counter-clockwise) turn.
		for n >= 2 {
			a, b := h[n-2], h[n-1]
			if (x[b]-x[a])*(y[i]-y[a])-(y[b]-y[a])*(x[i]-x[a]) > 0 {
				break
			}
			n--
		}
		h[n] = i
		n++
	}
	mean := sum / float64(len(x))
	// The first and last points are always hull vertices, so some edge
	// spans the mean.
	k := 0
	for k+2 < n && x[h[k+1]] < mean {
		k++
	}
	a, b := h[k], h[k+1]
	return (y[b] - y[a]) / (x[b] - x[a]), true
}

// slopeWeight is the inverse variance, up to a common factor, of an envelope
// slope s fitted through (x, y): Σ(x − x̄)² / r², where r is the mean height
// of the points above the envelope line, the noise scale of the window
// minima (floored at 1 µs, the stamp resolution). A direction whose windows
// hold many samples (low minima) or span more time counts for more; one
// whose windows sat behind a standing queue counts for less.
func slopeWeight(x, y []float64, s float64) float64 {
	n := float64(len(x))
	var sx, lo float64
	lo = math.Inf(1)
	for i := range x {
		sx += x[i]
		lo = min(lo, y[i]-s*x[i])
	}
	mx := sx / n
	var sxx, r float64
	for i := range x {
		sxx += (x[i] - mx) * (x[i] - mx)
		r += y[i] - s*x[i] - lo
	}
	r = max(r/n, 1)
	return sxx / (r * r)
}

func usToDuration(us float64) time.Duration {
	return time.Duration(math.Round(us * float64(time.Microsecond)))
}

// floorDiv and floorMod divide rounding toward −∞, so windows tile time
// evenly on both sides of the epoch.
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }
