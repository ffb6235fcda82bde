package owd

import (
	"math"
	"math/cmplx"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// elasticity is the pulse test (our addition, off by default:
// Tuning.ElasticityTest; bench/RESULTS.md has what it measured): Nimbus's
// elasticity detection (Goyal et al., "Elasticity Detection: A Building
// Block for Internet Congestion Control", SIGCOMM 2022) asked with the
// flow's own packets, without losses and without a base delay.
//
// The flow modulates its sending rate S with an asymmetric pulse of known
// period T = 4·SRTT — S0 + A for a quarter period, S0 − A/3 for the rest,
// A a quarter of the bottleneck rate μ (packet-pair dispersion,
// dispersion.go) but at most elasticMaxPulse·S0, so the mean rate stays S0
// and the queue the pulse builds it also drains — and estimates the cross traffic's arrival rate
// at the bottleneck from how its own packets left it: in a busy FIFO
// queue the packets the flow sent over a span leave over a span stretched
// by whatever arrived between them, so z = μ·S/R − S (Nimbus's estimator,
// with S and R measured over the same packets: their send span and their
// arrival span at the receiver, send time + OWD). Traffic that is
// ACK-clocked (every window-based flow: CUBIC, Reno, a
// receive-window-limited TCP flow) answers the pulse: what this flow adds
// at the queue, it loses one of its round trips later. Unresponsive
// traffic (UDP at a fixed rate) does not; alone there is none.
//
// The test reads the transfer function H = Z(1/T) / S(1/T) at the pulse's
// frequency (Nimbus's η is |H|), with three checks Nimbus's magnitude alone
// lacks, each against a false answer measured alone on cellular traces:
//
//   - its phase: the answer lags by the cross traffic's round trip, about
//     this flow's (they share the queue), a quarter to three quarters of a
//     period, so Im H ≥ elasticEta; a bottleneck rate that is not the
//     link's rate now (a varying link) scales z with S itself, in phase,
//     which is real;
//   - its gain: |H| ≤ elasticMaxGain, an answer no larger than the pulse;
//   - its frequency: the answer stands elasticSNR times above the cross
//     traffic's components between the pulse's harmonics.
//
// Bins whose queue nearly emptied are left out: there the estimator reads
// the idle link as cross traffic.
//
// An answer alone does not make a buffer filler: delay-based flows are
// ACK-clocked too. So the verdict also needs the cross traffic to hold
// most of the link (its mean rate at least elasticShare·μ), which no fair
// share among a few delay-based flows does, and which is what a latecomer
// sees beside a buffer filler whatever base delay it measured: the test
// needs none, so the standing queue the flow found cannot hide the filler.
//
// The test runs in congestion avoidance, from the end of the first
// slowdown on, when the flow gets under a quarter of the bottleneck's rate
// (alone on a link it fills it gets all of it) and the queue did not
// nearly empty in the last window of Copa's test (compete.go), at most
// once every elasticInterval and not across a slowdown. A loss during the
// pulse is the pulse's own overflow: it is no evidence for the other
// tests (onCongestiveLoss).
type elasticity struct {
	active     bool
	next       clock.Mono // earliest next test
	start, end clock.Mono // the pulse: packets sent in [start, end)
	period     time.Duration
	s0, amp    float64 // bytes/s
	mu         float64 // bottleneck rate, bytes/s
	srtt       time.Duration
	bins       [elasticBins]elasticBin
	// The last verdict's H, the cross traffic's share of μ and the
	// answer's height above the noise (tests read them).
	h          complex128
	share, snr float64
}

// elasticBin is what the packets sent in one bin of the pulse saw.
type elasticBin struct {
	n                   int
	firstSent, lastSent clock.Mono
	firstArr, lastArr   time.Duration // send time + OWD
	minQ                time.Duration // smallest queueing delay
}

const (
	// elasticPeriods pulses of elasticBinsPerPeriod bins each.
	elasticPeriods       = 4
	elasticBinsPerPeriod = 8
	elasticBins          = elasticPeriods * elasticBinsPerPeriod
	// elasticEta is the least Im H of an answer.
	elasticEta = 0.5
	// elasticMaxGain bounds |H|: ACK-clocked traffic yields what the pulse
	// adds, not more.
	elasticMaxGain = 1.25
	// elasticSNR is how far the answer must stand above the cross
	// traffic's components between the pulse's harmonics.
	elasticSNR = 4
	// elasticShare is the share of the bottleneck the cross traffic must
	// hold for an answer to be a buffer filler's.
	elasticShare = 0.85
	// elasticMaxPulse caps the pulse at this many times the flow's own
	// rate: on a link with delay noise the packet pairs' smallest gap can
	// be far below the bottleneck's packet time, and a pulse of a quarter
	// of that μ would be a burst the link cannot carry.
	elasticMaxPulse = 8
	// elasticBinPackets is the fewest packets the pulse sends in a bin.
	elasticBinPackets = 5
	// elasticInterval is the least time between two tests.
	elasticInterval = 20 * time.Second
	// elasticMinPeriod is the shortest pulse period.
	elasticMinPeriod = 100 * time.Millisecond
)

// elasticNoiseFreqs are frequencies between the pulse's harmonics, in
// pulses per period: over elasticPeriods periods they are whole numbers of
// cycles, so the pulse itself has no component there.
var elasticNoiseFreqs = [...]float64{0.25, 0.5, 0.75, 1.25, 1.5, 1.75}

// maybeStartElasticity starts a pulse test when one may run (see the type
// doc).
func (c *Controller) maybeStartElasticity(now clock.Mono) {
	e := &c.elastic
	if !c.cfg.Tuning.ElasticityTest || c.cfg.Tuning.DisableCompetitiveMode || e.active || now.Before(e.next) ||
		!c.probe.done || c.mode != modeAvoidance || !c.rtt.HasSample() {
		return
	}
	pt := c.disp.packetTime()
	if pt <= 0 {
		return
	}
	srtt := c.rtt.Smoothed()
	mu := c.mss / pt.Seconds()
	s0 := c.cwnd / srtt.Seconds()
	if s0 >= mu/4 || c.comp.empty.full == 0 || !c.copaQuiet(now) {
		return
	}
	if !c.cfg.Tuning.DisableBaseDelayProbe && c.probe.at != 0 && c.probe.at.Sub(now) < time.Duration(elasticPeriods+1)*max(4*srtt, elasticMinPeriod) {
		return // a slowdown would cut it short
	}
	c.startElasticity(now, mu, s0, srtt)
}

// startElasticity starts a pulse test at now: mu is the bottleneck's
// rate and s0 the flow's, bytes/s.
func (c *Controller) startElasticity(now clock.Mono, mu, s0 float64, srtt time.Duration) {
	period := max(4*srtt, elasticMinPeriod)
	c.elastic = elasticity{active: true, start: now, end: now.Add(time.Duration(elasticPeriods) * period),
		period: period, s0: s0, amp: min(mu/4, elasticMaxPulse*s0), mu: mu, srtt: srtt}
}

// pulseRate is the test's sending rate at now, bytes/s; 0 outside a test
// (and outside congestion avoidance: a slowdown that begins during the
// pulse holds the window from its first moment).
func (c *Controller) pulseRate(now clock.Mono) float64 {
	e := &c.elastic
	if !e.active || c.mode != modeAvoidance || !now.Before(e.end) || now.Before(e.start) {
		return 0
	}
	if float64(now.Sub(e.start)%e.period) < 0.25*float64(e.period) {
		return e.s0 + e.amp
	}
	// At least elasticBinPackets per bin, so every bin has a rate.
	bin := (e.period / elasticBinsPerPeriod).Seconds()
	return max(e.s0-e.amp/3, e.s0/4, elasticBinPackets*c.mss/bin)
}

// observeElasticity folds one ACK into the test and gives the verdict
// once a packet sent after the pulse is acknowledged. A slowdown or a
// mode change ends the test without one.
func (c *Controller) observeElasticity(now clock.Mono, ack cc.AckSample) {
	e := &c.elastic
	if !e.active {
		return
	}
	if c.mode != modeAvoidance || !ack.SentTime.Before(e.end) {
		e.active = false
		e.next = now.Add(elasticInterval)
		if c.mode == modeAvoidance {
			c.elasticVerdict(now)
		}
		return
	}
	if ack.SentTime.Before(e.start) || !c.trustedOWD(ack) {
		return
	}
	i := int(ack.SentTime.Sub(e.start) / (e.period / elasticBinsPerPeriod))
	if i >= elasticBins {
		return
	}
	b := &e.bins[i]
	arr := time.Duration(ack.SentTime) + ack.OWD
	q := max(ack.OWD-c.owdA.Min(), 0)
	if b.n == 0 {
		b.firstSent, b.lastSent, b.firstArr, b.lastArr, b.minQ = ack.SentTime, ack.SentTime, arr, arr, q
	}
	b.firstSent, b.lastSent = min(b.firstSent, ack.SentTime), max(b.lastSent, ack.SentTime)
	b.firstArr, b.lastArr = min(b.firstArr, arr), max(b.lastArr, arr)
	b.minQ = min(b.minQ, q)
	b.n++
}

// elasticVerdict computes H, the cross traffic's share and the answer's
// height above the noise, and enters competitive mode when all say buffer
// filler.
func (c *Controller) elasticVerdict(now clock.Mono) {
	e := &c.elastic
	var s, z, t [elasticBins]float64
	k := 0
	busy := max(c.owdA.Jitter(), 2*c.disp.packetTime(), 2*time.Millisecond)
	for i := range e.bins {
		b := &e.bins[i]
		if b.n < 3 || b.lastSent <= b.firstSent || b.lastArr <= b.firstArr || b.minQ < busy {
			continue
		}
		sent := b.lastSent.Sub(b.firstSent).Seconds()
		si := float64(b.n-1) * c.mss / sent
		s[k] = si
		z[k] = max(e.mu*(b.lastArr-b.firstArr).Seconds()/sent-si, 0)
		t[k] = (float64(i) + 0.5) / elasticBinsPerPeriod // in periods
		k++
	}
	if k < elasticBins/2 {
		return // too few bins to tell
	}
	var ms, mz float64
	for i := range k {
		ms += s[i] / float64(k)
		mz += z[i] / float64(k)
	}
	// dft is x's component at f pulses per period.
	dft := func(x *[elasticBins]float64, mean, f float64) complex128 {
		var sum complex128
		for i := range k {
			sum += complex(x[i]-mean, 0) * cmplx.Exp(complex(0, -2*math.Pi*f*t[i]))
		}
		return sum
	}
	xs, xz := dft(&s, ms, 1), dft(&z, mz, 1)
	var noise float64
	for _, f := range elasticNoiseFreqs {
		noise += cmplx.Abs(dft(&z, mz, f)) / float64(len(elasticNoiseFreqs))
	}
	if xs == 0 || noise == 0 {
		return
	}
	e.h, e.share, e.snr = xz/xs, mz/e.mu, cmplx.Abs(xz)/noise
	if imag(e.h) >= elasticEta && cmplx.Abs(e.h) <= elasticMaxGain && e.share >= elasticShare && e.snr >= elasticSNR {
		c.enterCompetitive(now, reasonElastic)
	}
}
