package owd

import (
	"math"
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// Analyzer keeps the delay state of one flow:
//
//   - OWDmin: the base delay, the minimum over a history of buckets (LEDBAT's
//     base-delay history, RFC 6817 §4.4), so a route change to a longer path
//     is followed within HistoryBuckets·BucketLength (30 s by default: a
//     windowed minimum as BBR's min-RTT filter, kept honest by the
//     controller's periodic slowdowns, which drain the queue at least every
//     20 s, so every window holds a queue-free sample);
//   - OWDcur: the minimum of the last CurrentFilter samples, a noise filter
//     (RFC 6817 §4.3 uses the same "min of the last few" for current delay);
//   - OWDv = (OWDcur − OWDmin)/max(OWDmin, MinBaseDelay), Eq. 1 of the paper,
//     guarded against a near-zero base (loopback, LAN);
//   - OWDv_max: the largest OWDv seen, decayed exponentially with time
//     constant MaxDecay so old peaks fade ("continuously updated", §3 of the
//     paper); the controller reseeds it at slow-start exit (and, for
//     Eq. 2 only, folds in the samples of congestion avoidance: TrackMax);
//   - μ = max(μ_floor, β·OWDv_max) with μ_floor = max(MuFloorDelay,
//     JitterGain·J)/OWDmin, so μ never stands for less than MuFloorDelay of
//     queueing, nor for less than the path's own delay noise: J is RFC 3550
//     §6.4.1's interarrival jitter of the raw samples (the smoothed
//     difference of consecutive one-way delays). Queueing grows smoothly
//     from packet to packet, so it barely moves J; random per-packet delay
//     (Wi-Fi retries, cellular scheduling) does, and without this term the
//     controller takes that noise for congestion.
//
// The same type analyses RTT/2 samples for the RTT fallback; it does not care
// where the delays come from. All arrays are fixed-size: no allocation per
// sample.
type Analyzer struct {
	cfg AnalyzerConfig

	// Base-delay history: buckets[i] is the minimum delay seen during one
	// BucketLength; head is the current bucket, which started at bucketStart.
	buckets     [maxHistoryBuckets]time.Duration
	base        time.Duration // min over buckets, kept current (0 = none)
	nBuckets    int
	head        int
	bucketStart clock.Mono
	started     bool

	// Current-delay filter: a ring of the last CurrentFilter samples.
	recent  [maxCurrentFilter]time.Duration
	nRecent int
	next    int

	jitter float64 // RFC 3550 interarrival jitter J, ns
	// learned is a noise floor the controller learned from how the delay
	// responds to its window (response.go); 0 = none.
	learned time.Duration
	last    time.Duration // previous raw sample
	// fell is how far the last sample lowered OWDmin (0 if it did not):
	// the base this flow held contained a queue that has now drained
	// (probe.go's slowdown synchronisation).
	fell      time.Duration
	owdvMax   float64    // OWDv_max, decayed
	maxUpdate clock.Mono // when owdvMax was last decayed
	samples   uint64
}

// Limits of the fixed-size arrays.
const (
	maxHistoryBuckets = 64
	maxCurrentFilter  = 32
)

// AnalyzerConfig holds the analyzer's tunables. Zero values take the defaults
// documented on each field.
type AnalyzerConfig struct {
	// HistoryBuckets is the number of base-delay buckets. Default 10 (RFC 6817
	// BASE_HISTORY). At most 64.
	HistoryBuckets int
	// BucketLength is the time one bucket covers. Default 3 s, so the
	// history spans 30 s. RFC 6817 uses 1-minute buckets (a 10-minute
	// history): a path that got longer then looks like a standing queue
	// for up to 10 minutes, and a delay-based controller holds its window
	// at the floor all that time. 30 s is longer than the controller's
	// slowdown interval (Tuning.ProbeMinInterval, 20 s), so every history
	// holds at least one drained-queue sample and the base does not creep
	// up with the controller's own standing queue; it is of the order of
	// BBR's 10 s min-RTT window (Cardwell et al., "BBR: Congestion-Based
	// Congestion Control", ACM Queue 2016).
	BucketLength time.Duration
	// CurrentFilter is how many recent samples OWDcur is the minimum of.
	// Default 4: enough to filter one packet's scheduling noise, few enough
	// to follow a queue within a fraction of an RTT. At most 32.
	CurrentFilter int
	// MinBaseDelay floors OWDmin in Eq. 1's denominator. Default 1 ms:
	// below that, timestamp resolution and scheduling noise dominate.
	MinBaseDelay time.Duration
	// Beta scales OWDv_max into μ. Default 0.5: the window stops growing
	// at half the largest queueing seen, and shrinks above it.
	Beta float64
	// MuFloorDelay is the queueing delay μ never goes below. Default 5 ms,
	// the CoDel target (RFC 8289 §4.3): less than that is noise on most paths.
	MuFloorDelay time.Duration
	// MaxDecay is the time constant with which OWDv_max decays, so a peak
	// from long ago stops setting μ. Default 10 s: several RTTs of any path
	// this controller is for, short against the base-delay history.
	MaxDecay time.Duration
	// JitterGain scales the interarrival jitter J into the noise floor of
	// μ (and of the slow-start exit): queueing below JitterGain·J is not
	// taken for congestion. J is about the noise's mean deviation, so a
	// gain of a few is needed before random per-packet delay stops looking
	// like a queue; larger gains let a real queue grow unnoticed. Default
	// 5. Negative: ignore jitter.
	JitterGain float64
}

func (c AnalyzerConfig) withDefaults() AnalyzerConfig {
	if c.HistoryBuckets <= 0 {
		c.HistoryBuckets = 10
	}
	c.HistoryBuckets = min(c.HistoryBuckets, maxHistoryBuckets)
	if c.BucketLength <= 0 {
		c.BucketLength = 3 * time.Second
	}
	if c.CurrentFilter <= 0 {
		c.CurrentFilter = 4
	}
	c.CurrentFilter = min(c.CurrentFilter, maxCurrentFilter)
	if c.MinBaseDelay <= 0 {
		c.MinBaseDelay = time.Millisecond
	}
	if c.Beta <= 0 {
		c.Beta = 0.5
	}
	if c.MuFloorDelay <= 0 {
		c.MuFloorDelay = 5 * time.Millisecond
	}
	if c.MaxDecay <= 0 {
		c.MaxDecay = 10 * time.Second
	}
	if c.JitterGain == 0 {
		c.JitterGain = 5
	}
	if c.JitterGain < 0 {
		c.JitterGain = 0
	}
	return c
}

// NewAnalyzer returns an analyzer with cfg's zero fields defaulted.
func NewAnalyzer(cfg AnalyzerConfig) *Analyzer {
	a := &Analyzer{}
	a.init(cfg)
	return a
}

func (a *Analyzer) init(cfg AnalyzerConfig) {
	*a = Analyzer{cfg: cfg.withDefaults()}
}

// Add folds in one delay sample taken at now. Non-positive samples are
// ignored: a one-way delay cannot be zero or negative, so such a sample means
// the clocks are wrong, which the controller handles separately.
func (a *Analyzer) Add(now clock.Mono, d time.Duration) {
	if d <= 0 {
		return
	}
	if a.rollHistory(now) {
		a.recomputeBase()
	}
	if d < a.buckets[a.head] || a.buckets[a.head] == 0 {
		a.buckets[a.head] = d
	}
	a.fell = 0
	if a.base != 0 && d < a.base {
		a.fell = a.base - d
	}
	if a.base == 0 || d < a.base {
		a.base = d
	}
	if a.samples > 0 {
		// RFC 3550 §6.4.1: J += (|D(i−1, i)| − J)/16.
		diff := d - a.last
		if diff < 0 {
			diff = -diff
		}
		a.jitter += (float64(diff) - a.jitter) / 16
	}
	a.last = d
	a.recent[a.next] = d
	a.next = (a.next + 1) % a.cfg.CurrentFilter
	if a.nRecent < a.cfg.CurrentFilter {
		a.nRecent++
	}
	a.samples++
}

// rollHistory starts new buckets for every BucketLength elapsed, clearing
// buckets skipped during an idle period (they saw no sample). It reports
// whether any bucket was cleared.
func (a *Analyzer) rollHistory(now clock.Mono) bool {
	if !a.started {
		a.started = true
		a.bucketStart = now
		a.nBuckets = 1
		return false
	}
	rolled := false
	for now.Sub(a.bucketStart) >= a.cfg.BucketLength {
		rolled = true
		a.bucketStart = a.bucketStart.Add(a.cfg.BucketLength)
		a.head = (a.head + 1) % a.cfg.HistoryBuckets
		a.buckets[a.head] = 0
		if a.nBuckets < a.cfg.HistoryBuckets {
			a.nBuckets++
		}
		if a.nBuckets == a.cfg.HistoryBuckets && now.Sub(a.bucketStart) >= time.Duration(a.cfg.HistoryBuckets)*a.cfg.BucketLength {
			// Idle longer than the whole history: everything is stale.
			// Jump instead of looping once per skipped bucket.
			skipped := now.Sub(a.bucketStart) / a.cfg.BucketLength
			a.bucketStart = a.bucketStart.Add(skipped * a.cfg.BucketLength)
			clear(a.buckets[:])
		}
	}
	return rolled
}

// recomputeBase refreshes the cached minimum after buckets were cleared.
func (a *Analyzer) recomputeBase() {
	a.base = 0
	for i := 0; i < a.cfg.HistoryBuckets; i++ {
		if b := a.buckets[i]; b > 0 && (a.base == 0 || b < a.base) {
			a.base = b
		}
	}
}

// Samples is the number of samples taken.
func (a *Analyzer) Samples() uint64 { return a.samples }

// Ready reports whether the current-delay filter is full, so OWDcur is a
// filtered value and not one raw sample.
func (a *Analyzer) Ready() bool { return a.nRecent >= a.cfg.CurrentFilter }

// Min returns OWDmin (0 before the first sample).
func (a *Analyzer) Min() time.Duration { return a.base }

// Current returns OWDcur, the minimum of the recent samples (0 if none).
func (a *Analyzer) Current() time.Duration {
	var m time.Duration
	for i := 0; i < a.nRecent; i++ {
		if d := a.recent[i]; m == 0 || d < m {
			m = d
		}
	}
	return m
}

// floored is OWDmin floored at MinBaseDelay: Eq. 1's denominator.
func (a *Analyzer) floored() time.Duration {
	return max(a.Min(), a.cfg.MinBaseDelay)
}

// Variation returns OWDv (Eq. 1): the queueing delay relative to the base.
func (a *Analyzer) Variation() float64 {
	cur, low := a.Current(), a.Min()
	if cur == 0 || cur <= low {
		return 0
	}
	return float64(cur-low) / float64(a.floored())
}

// QueueingDelay is OWDcur − OWDmin.
func (a *Analyzer) QueueingDelay() time.Duration {
	return max(a.Current()-a.Min(), 0)
}

// Jitter is the RFC 3550 interarrival jitter of the samples.
func (a *Analyzer) Jitter() time.Duration { return time.Duration(a.jitter) }

// NoiseFloor is the queueing delay the analyzer does not take for
// congestion: max(MuFloorDelay, JitterGain·J, the floor the controller
// learned from the delay's response to its window).
func (a *Analyzer) NoiseFloor() time.Duration {
	return max(a.jitterFloor(), a.learned)
}

// jitterFloor is max(MuFloorDelay, JitterGain·J): the noise floor without
// the learned part.
func (a *Analyzer) jitterFloor() time.Duration {
	return max(a.cfg.MuFloorDelay, time.Duration(a.cfg.JitterGain*a.jitter))
}

// Mu returns the threshold μ = max(μ_floor, β·OWDv_max) as of now.
func (a *Analyzer) Mu(now clock.Mono) float64 {
	floor := float64(a.NoiseFloor()) / float64(a.floored())
	return math.Max(floor, a.cfg.Beta*a.maxAt(now))
}

// MaxVariation is OWDv_max, decayed to now.
func (a *Analyzer) MaxVariation(now clock.Mono) float64 { return a.maxAt(now) }

func (a *Analyzer) maxAt(now clock.Mono) float64 {
	dt := now.Sub(a.maxUpdate)
	if dt <= 0 || a.owdvMax == 0 {
		return a.owdvMax
	}
	return a.owdvMax * math.Exp(-dt.Seconds()/a.cfg.MaxDecay.Seconds())
}

// TrackMax folds v into OWDv_max: decay the old maximum to now, then keep the
// larger. The controller calls it after deciding on a sample, so a sample
// that sets a new maximum is judged against the previous one (otherwise, with
// β = 0.5, OWDv > 2μ could never hold for a new maximum).
func (a *Analyzer) TrackMax(now clock.Mono, v float64) {
	a.owdvMax = math.Max(a.maxAt(now), v)
	a.maxUpdate = now
}

// ResetMax sets OWDv_max to v, e.g. to the largest OWDv of slow start at its exit.
func (a *Analyzer) ResetMax(now clock.Mono, v float64) {
	a.owdvMax = v
	a.maxUpdate = now
}

// restartBase forgets the base-delay history and starts it again from the
// lowest of the recent samples: the path changed (a push test found the
// link idle under a delay that stays, push.go), and the old minimum no
// longer says anything about it.
func (a *Analyzer) restartBase() {
	if a.nRecent == 0 {
		return
	}
	low := a.recent[0]
	for _, d := range a.recent[:a.nRecent] {
		low = min(low, d)
	}
	clear(a.buckets[:])
	a.buckets[a.head] = low
	a.base = low
}
