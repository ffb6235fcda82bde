package owd

import (
	"math"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// Controller is the one-way-delay window controller described in the
// package doc. Build it with New (the default, "owd": the normalised Eq. 7
// rule) or NewEq2 (the paper's Eq. 2, "owd-eq2"). It is a sans-I/O state
// machine, not safe for concurrent use.
type Controller struct {
	name string
	cfg  Config
	rule windowRule
	mss  float64

	// Window state, in bytes. Floats so that the per-ACK steps of ±MSS²/cwnd
	// are not lost to integer truncation.
	cwnd     float64
	ssthresh float64 // +Inf until the first slow-start exit

	rtt cc.RTTStats

	// Delay state: one analyzer per signal, both always fed, so a switch
	// between OWD and the RTT/2 fallback finds a warm history.
	owdA   Analyzer
	rttA   Analyzer
	signal cc.DelaySignal
	// goodRun counts consecutive trustworthy OWD samples while in fallback.
	goodRun int

	// Slow start: the largest OWDv seen during it, to seed OWDv_max at exit.
	ssMaxOWDv  float64
	ssExited   bool
	probeArmed bool // the first slowdown has been scheduled
	probeDone  bool // the first slowdown has ended

	// Recovery (RFC 6582 style, by packet number since numbers are never
	// reused): losses of packets sent before the episode began do not reduce
	// the window again; an ACK above recoverPN ends it.
	largestSent cc.PacketNumber
	recoverPN   cc.PacketNumber
	inRecovery  bool

	probe baseProbe
	disp  dispersion
	comp  compete
	resp  response
	// rebase: OWDmin rose (a longer path); slow start again (addSample).
	rebase bool
}

var _ cc.Controller = (*Controller)(nil)

func init() {
	cc.Register("owd", func(mss cc.ByteCount) cc.Controller { return New(Config{MSS: mss}) })
	cc.Register("owd-eq2", func(mss cc.ByteCount) cc.Controller { return NewEq2(Config{MSS: mss}) })
}

// New returns fresh's default OWD controller, "owd": the Eq. 7 rule,
// normalised by the base delay. Its decrease is multiplicative per round
// trip, so competing flows converge to equal windows (Chiu and Jain's AIMD
// argument), which Eq. 2's additive decrease does not do; see the package
// doc.
func New(cfg Config) *Controller { return newController("owd", cfg, eq7{}) }

// NewEq2 returns the paper's Eq. 2 controller ("owd-eq2"), kept as the
// literal baseline. Competitive mode (compete.go) is always off for it:
// Eq. 2 holds its window while μ < OWDv ≤ 2μ, so it keeps a standing queue
// of its own, which Copa's test takes for a buffer filler's (on the
// reverse-congestion path that switched it to CUBIC and cost it 14 % of
// its goodput).
func NewEq2(cfg Config) *Controller {
	cfg.Tuning.DisableCompetitiveMode = true
	return newController("owd-eq2", cfg, eq2{})
}

func newController(name string, cfg Config, rule windowRule) *Controller {
	cfg = cfg.withDefaults()
	c := &Controller{
		name:        name,
		cfg:         cfg,
		rule:        rule,
		mss:         float64(cfg.MSS),
		cwnd:        float64(cfg.InitialWindow),
		ssthresh:    math.Inf(1),
		signal:      cc.SignalOWD,
		largestSent: cc.InvalidPacketNumber,
		recoverPN:   cc.InvalidPacketNumber,
	}
	c.owdA.init(cfg.Tuning.Analyzer)
	c.rttA.init(cfg.Tuning.Analyzer)
	return c
}

// Name implements cc.Controller.
func (c *Controller) Name() string { return c.name }

// OnPacketSent implements cc.Controller.
func (c *Controller) OnPacketSent(now clock.Mono, pn cc.PacketNumber, _, _ cc.ByteCount) {
	if pn > c.largestSent {
		c.largestSent = pn
	}
	if c.comp.on {
		c.comp.cubic.OnPacketSent(now, pn, 0, 0)
	}
}

// OnAck implements cc.Controller: one call per newly acknowledged packet.
func (c *Controller) OnAck(now clock.Mono, ack cc.AckSample) {
	c.rtt.Update(ack.RTT)
	c.takeDelaySample(now, ack)
	c.observeHoldTest(now, ack)

	if c.inRecovery && ack.PacketNumber > c.recoverPN {
		c.inRecovery = false // full ACK: RFC 6582 §3.2 step 3
	}
	if c.comp.on {
		c.comp.cubic.OnAck(now, ack)
	}
	if c.probe.active {
		if c.probe.holding(now) {
			return
		}
		c.cwnd = math.Max(c.cwnd, c.finishProbe(now))
	}
	if c.comp.on {
		c.rebase = false
		c.maybeStartProbe(now)
		return
	}
	if c.inRecovery {
		return // partial ACK: no growth until the episode ends (RFC 6582)
	}
	c.restartAfterRebase()

	a := c.active()
	slowStart := c.cwnd < c.ssthresh
	limited := cc.WindowLimited(ack.PriorInFlight, c.Window(), c.cfg.MSS, slowStart)
	acked := float64(ack.Bytes) / c.mss // packets acknowledged

	if slowStart {
		c.slowStart(now, a, acked, limited)
		return
	}
	if !a.Ready() {
		// No delay history yet (e.g. neither OWD nor RTT samples): behave
		// as NewReno's congestion avoidance.
		if limited {
			c.grow(c.mss * acked / (c.cwnd / c.mss))
		}
		return
	}
	if !c.cfg.Tuning.DisableNoiseResponse {
		c.resp.observe(now, c.cwnd/c.mss, a.QueueingDelay(), max(a.last-a.Min(), 0), c.rtt.Smoothed())
		a.learned = c.resp.floor
	}
	v := a.Variation()
	mu := c.mu(now, a)
	// Per-ACK steps divided by the reverse scale keep the loop gain of the
	// forward loop when the ACK path queues (reverse.go).
	d := c.rule.delta(v, mu, a.Current(), a.floored(), c.cwnd/c.mss) * acked / c.reverseScale()
	if d > 0 {
		d *= c.growthScale(a)
	}
	if d < 0 || limited { // never grow an application-limited window (RFC 7661)
		c.grow(d * c.mss)
	}
	if d < 0 {
		// A delay-driven decrease must not drop the window below
		// ssthresh and so back into slow start (as Vegas/TCP-LP lower
		// ssthresh together with cwnd).
		c.ssthresh = math.Min(c.ssthresh, c.cwnd)
	}
	a.TrackMax(now, v)
	c.maybeStartProbe(now)
}

// takeDelaySample feeds the analyzers and decides which signal is in use.
// OWD is trusted when the receiver says its clock offset is synchronised and
// the sample is physically possible: 0 < OWD ≤ RTT (+ tolerance). Otherwise
// the controller falls back to RTT/2 (see the package doc, "RTT fallback")
// until Tuning.FallbackRecoverySamples good samples in a row say clocks are
// good again.
func (c *Controller) takeDelaySample(now clock.Mono, ack cc.AckSample) {
	if ack.RTT > 0 {
		c.addSample(now, &c.rttA, ack.RTT/2)
	}
	if !ack.OWDValid {
		return // no sample is no evidence either way
	}
	good := ack.ClockSynced && ack.OWD > 0
	if good && c.rtt.HasSample() {
		ceiling := max(c.rtt.Latest(), c.rtt.Smoothed()) + c.cfg.Tuning.OWDTolerance
		good = ack.OWD <= ceiling
	}
	if !good {
		c.signal = cc.SignalRTT
		c.goodRun = 0
		return
	}
	c.addSample(now, &c.owdA, ack.OWD)
	c.observeEmptiness(now, ack.OWD)
	c.disp.onSample(now, ack.PacketNumber, ack.SentTime, ack.OWD, ack.OWD > c.owdA.Min()+time.Millisecond)
	if c.signal == cc.SignalRTT {
		c.goodRun++
		if c.goodRun >= c.cfg.Tuning.FallbackRecoverySamples && c.owdA.Ready() {
			c.signal = cc.SignalOWD
		}
	}
}

// addSample feeds a and notes when its OWDmin rose past the noise as old
// buckets left the history (rebase, acted on in OnAck).
//
// A base delay that rises is a longer path (a route change), not a queue:
// queueing never raises a minimum taken over a history that spans a
// slowdown. Until the old minimum left the history the controller took
// the new path's extra delay for a queue of its own and held the window
// at its floor; the window the new path needs (a larger bandwidth-delay
// product) is unknown, and congestion avoidance from the floor would take
// hundreds of round trips to find it. Slow start finds it in a few, and
// its exit on queueing delay (HyStart-like) stops it before it overfills
// the queue, as BBR goes back to probing after its min-RTT filter moves.
// Either analyzer may see the rise first (the signal can fall back to
// RTT/2 meanwhile), so it is noted whichever it is.
func (c *Controller) addSample(now clock.Mono, a *Analyzer, d time.Duration) {
	prev := a.Min()
	a.Add(now, d)
	if prev > 0 && a.Min()-prev > max(a.NoiseFloor(), prev/8) {
		c.rebase = true
	}
}

// restartAfterRebase re-enters slow start once after OWDmin rose (see
// addSample), when no slowdown holds the window.
func (c *Controller) restartAfterRebase() {
	if !c.rebase || c.probe.active {
		return
	}
	c.rebase = false
	if c.cwnd >= c.ssthresh {
		c.ssthresh = math.Inf(1)
		c.ssMaxOWDv = 0
	}
}

// active is the analyzer of the signal in use.
func (c *Controller) active() *Analyzer {
	if c.signal == cc.SignalOWD {
		return &c.owdA
	}
	return &c.rttA
}

// slowStart grows the window by the bytes acknowledged (RFC 5681 §3.1) and
// leaves slow start early once the queueing delay passes the HyStart-style
// threshold, before the queue overflows.
func (c *Controller) slowStart(now clock.Mono, a *Analyzer, acked float64, limited bool) {
	if a.Ready() {
		v := a.Variation()
		c.ssMaxOWDv = math.Max(c.ssMaxOWDv, v)
		if !c.cfg.Tuning.DisableEarlySlowStartExit && a.QueueingDelay() > c.slowStartExitDelay(a) {
			if !c.cfg.Tuning.DisableSlowStartDrain && float64(a.Current()) > drainMinRatio*float64(a.floored()) {
				// The exit is one round trip late: the window has
				// doubled since the samples that showed the queue, and
				// what stands in the queue is cwnd·(1 − OWDmin/OWDcur).
				// When that is a long queue, take it out now, as BBR's
				// drain phase does, instead of leaving it to the delay
				// rule, whose per-ACK decrease shrinks as the queue grows
				// ((1 − r)/r² with r = OWDcur/OWDmin, largest at r = 2):
				// on a 100 kbit/s link an initial window's queue took
				// 10 s to drain. A short queue the rule drains well.
				c.cwnd = math.Max(c.cwnd*float64(a.floored())/float64(a.Current()), c.delayFloor())
			}
			c.ssthresh = c.cwnd
			c.exitSlowStart(now)
			return
		}
	}
	if limited {
		c.grow(acked * c.mss)
	}
	if c.cwnd >= c.ssthresh {
		c.exitSlowStart(now)
	}
}

// slowStartExitDelay is clamp(OWDmin·fraction, min, max), raised to the
// path's delay noise (Analyzer.NoiseFloor) so jitter does not end slow start.
func (c *Controller) slowStartExitDelay(a *Analyzer) time.Duration {
	t := time.Duration(float64(a.Min()) * c.cfg.Tuning.SlowStartExitFraction)
	t = min(max(t, c.cfg.Tuning.SlowStartExitMin), c.cfg.Tuning.SlowStartExitMax)
	return max(t, a.NoiseFloor())
}

// drainMinRatio is the OWDcur/OWDmin above which a delay-based slow-start
// exit drains the queue at once (the DisableSlowStartDrain doc). Below it
// the cut costs more than it saves: on the reverse-congested path it took
// 0.7 % of the goodput.
const drainMinRatio = 1.5

// exitSlowStart seeds OWDv_max from slow start (the paper measures μ's basis
// "in slow start") and schedules base-delay probes.
func (c *Controller) exitSlowStart(now clock.Mono) {
	c.owdA.ResetMax(now, c.ssMaxOWDv)
	c.rttA.ResetMax(now, c.ssMaxOWDv)
	c.ssMaxOWDv = 0
	c.ssExited = true
	c.armProbe(now)
}

// armProbe schedules the first slowdown 2 SRTT after the first slow-start
// exit (LEDBAT++'s initial slowdown), or as soon after it as an RTT sample
// exists: a flow whose first exit is a loss before any RTT sample (a long
// queue ahead of its first packets) must still get its slowdowns.
func (c *Controller) armProbe(now clock.Mono) {
	if c.probeArmed || !c.ssExited || !c.rtt.HasSample() {
		return
	}
	c.probeArmed = true
	c.probe.schedule(now.Add(2 * c.rtt.Smoothed()))
}

// maybeStartProbe begins a base-delay slowdown when one is due.
func (c *Controller) maybeStartProbe(now clock.Mono) {
	c.armProbe(now)
	if c.cfg.Tuning.DisableBaseDelayProbe || !c.probe.due(now) || !c.rtt.HasSample() {
		return
	}
	hold := time.Duration(c.cfg.Tuning.ProbeHoldRTTs * float64(c.rtt.Smoothed()) / c.reverseScale())
	c.probe.begin(now, c.cwnd, hold)
	c.startHoldTest(now, hold)
	c.cwnd = c.probeWindow()
}

// finishProbe ends a slowdown and returns the window to restore.
func (c *Controller) finishProbe(now clock.Mono) float64 {
	c.probeDone = true
	return c.probe.finish(now, c.cfg.Tuning.ProbeSpacing, c.cfg.Tuning.ProbeMinInterval)
}

// grow adds d bytes (possibly negative) and applies the 2-packet floor.
func (c *Controller) grow(d float64) {
	c.cwnd = math.Max(c.cwnd+d, c.delayFloor())
}

// OnLoss implements cc.Controller with loss differentiation: a loss while
// OWDv ≤ μ (short queue) is taken as non-congestive and costs a factor
// Config.NonCongestiveLossFactor; otherwise the window halves as in NewReno.
// One reduction per recovery episode.
func (c *Controller) OnLoss(now clock.Mono, loss cc.LossEvent) {
	if c.comp.on {
		c.comp.cubic.OnLoss(now, loss)
	}
	if loss.PacketNumber <= c.recoverPN {
		return // sent before the current episode began
	}
	if c.probe.active {
		// The lost packet was sent before the slowdown: judge the loss
		// against the window the flow had then.
		c.cwnd = c.finishProbe(now)
	}
	c.inRecovery = true
	c.recoverPN = c.largestSent
	slowStart := c.cwnd < c.ssthresh
	if c.congestiveLoss(now) {
		c.onCongestiveLoss(now)
		c.cwnd = math.Max(c.cwnd/2, cc.MinWindowPackets*c.mss)
	} else {
		c.cwnd = math.Max(c.cwnd*c.cfg.NonCongestiveLossFactor, cc.MinWindowPackets*c.mss)
	}
	c.ssthresh = c.cwnd
	if slowStart {
		c.exitSlowStart(now)
	}
}

// congestiveLoss classifies a loss by the delay signal: without a delay
// history every loss counts as congestion, as in TCP.
func (c *Controller) congestiveLoss(now clock.Mono) bool {
	a := c.active()
	if c.cfg.Tuning.DisableLossDifferentiation || !a.Ready() {
		return true
	}
	return a.Variation() > a.Mu(now)
}

// OnRetransmissionTimeout implements cc.Controller: the whole window was lost,
// so restart from the 2-packet floor in slow start (RFC 5681 §3.1 sets the
// loss window to one segment; this controller's floor is two packets).
func (c *Controller) OnRetransmissionTimeout(now clock.Mono) {
	if c.comp.on {
		c.comp.cubic.OnRetransmissionTimeout(now)
	}
	c.ssthresh = math.Max(c.cwnd/2, cc.MinWindowPackets*c.mss)
	c.cwnd = cc.MinWindowPackets * c.mss
	c.inRecovery = false
	c.recoverPN = c.largestSent
	if c.probe.active {
		c.finishProbe(now)
	}
}

// Window implements cc.Controller.
// With reverse-path compensation (reverse.go) it is the internal window
// scaled by RTTcur/(RTTcur − reverse queueing).
func (c *Controller) Window() cc.ByteCount {
	if c.comp.on && !c.probe.active {
		return c.comp.cubic.Window()
	}
	return cc.ByteCount(math.Max(c.cwnd, cc.MinWindowPackets*c.mss) * c.reverseScale())
}

// reverseScale is the reverse-path compensation factor (1 when off).
func (c *Controller) reverseScale() float64 {
	if c.cfg.Tuning.DisableReverseCompensation || c.signal != cc.SignalOWD || !c.owdA.Ready() || !c.rttA.Ready() {
		return 1
	}
	return reverseScale(c.rttA.Current(), c.rttA.Min(), c.owdA.Current(), c.owdA.Min())
}

// PacingRate implements cc.Controller.
func (c *Controller) PacingRate() cc.Bandwidth {
	if c.comp.on && !c.probe.active {
		return c.comp.cubic.PacingRate()
	}
	return cc.PacingRate(cc.ByteCount(c.cwnd*c.reverseScale()), c.rtt.Smoothed(), c.cwnd < c.ssthresh)
}

// CanSend implements cc.Controller.
func (c *Controller) CanSend(bytesInFlight cc.ByteCount) bool {
	return bytesInFlight < c.Window()
}

// Signal is the delay signal in use: cc.SignalOWD or cc.SignalRTT (fallback).
func (c *Controller) Signal() cc.DelaySignal { return c.signal }

// Metrics implements cc.Controller. The μ reported is as of the last ACK.
// In RTT fallback the OWD fields hold the RTT/2 analyzer's values.
func (c *Controller) Metrics() cc.Metrics {
	a := c.active()
	m := cc.Metrics{
		Window:      c.Window(),
		PacingRate:  c.PacingRate(),
		InSlowStart: c.cwnd < c.ssthresh,
		Mode:        c.modeName(),
		InRecovery:  c.inRecovery,
		SRTT:        c.rtt.Smoothed(),
		MinRTT:      c.rtt.Min(),
		Signal:      c.signal,
		OWDMin:      a.Min(),
		OWDCur:      a.Current(),
		OWDv:        a.Variation(),
		Mu:          a.Mu(a.maxUpdate),
	}
	if !math.IsInf(c.ssthresh, 1) {
		m.Ssthresh = cc.ByteCount(c.ssthresh)
	}
	return m
}

// modeName is the mode reported in Metrics.
func (c *Controller) modeName() string {
	switch {
	case c.probe.active:
		return "probe"
	case c.comp.on:
		return "competitive"
	case c.cwnd < c.ssthresh:
		return cc.ModeSlowStart
	}
	return cc.ModeAvoidance
}
