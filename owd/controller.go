package owd

import (
	"fmt"
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
	mss  float64 // bytes

	// mode is written by setMode only (mode.go); lastChange is its last
	// change, onModeChange (tests only) sees every one.
	mode         mode
	lastChange   modeChange
	onModeChange func(modeChange)

	// Window state, in bytes. Floats so that the per-ACK steps of ±MSS²/cwnd
	// are not lost to integer truncation. In competitive mode the window in
	// force is competitiveWindow's (CUBIC's or BBR's); cwnd is then the
	// delay window the flow returns with.
	cwnd     float64
	ssthresh float64 // +Inf until the first slow-start exit

	rtt cc.RTTStats

	// Delay state (signal.go): one analyzer per signal, both always fed, so
	// a switch between OWD and the RTT/2 fallback finds a warm history.
	owdA   Analyzer
	rttA   Analyzer
	signal cc.DelaySignal
	// goodRun counts consecutive trustworthy OWD samples while in fallback.
	goodRun int
	// rebase: OWDmin rose past the noise (a longer path): slow start again.
	rebase bool

	// ssMaxOWDv is the largest OWDv of the current slow start; it seeds
	// OWDv_max at the exit.
	ssMaxOWDv float64
	ssExited  bool // the first slow start has ended
	// drainPN is the largest packet sent when drainQueue last cut: until
	// a later one is acknowledged, the cut has not shown.
	drainPN cc.PacketNumber
	// lossRate is the EWMA of the share of packets lost (freeLoss);
	// levels the same above and below the window losses last cut
	// (losslevel.go).
	lossRate float64
	levels   lossLevels

	// Recovery (RFC 6582 style, by packet number since numbers are never
	// reused): losses of packets sent before the episode began do not reduce
	// the window again; an ACK above recoverPN ends it. Orthogonal to mode.
	largestSent cc.PacketNumber
	recoverPN   cc.PacketNumber
	inRecovery  bool

	probe slowdown    // probe.go: the base-delay slowdowns and the drain test
	comp  compete     // compete.go: the buffer-filler detector, CUBIC and BBR
	disp  dispersion  // dispersion.go: the bottleneck's packet time
	resp  response    // response.go: does the delay follow the window?
	vel   velocity    // velocity.go: a faster increase while the queue is empty
	ssr   ssRate      // ssrate.go: does the delivery rate still grow in slow start?
	used  inFlight    // the most in flight in this round trip and the last
	bunch bunching    // bunching.go: does the link release packets in batches?
	sizes packetSizes // size.go: is a packet's delay comparable with the others?
	// elastic is the pulse test (elastic.go); pulse its sending rate at the
	// last event, bytes/s, 0 outside a pulse.
	elastic elasticity
	// push is the push test (push.go).
	push  pushTest
	pulse float64
}

// inFlight keeps the most bytes in flight seen in the current round trip
// (until a packet sent after it began is acknowledged) and the last one,
// as Linux keeps max_packets_out for tcp_is_cwnd_limited. A flow uses its
// window if it filled it at some moment of the round: on a link that
// delivers in bursts (cellular scheduling, Wi-Fi aggregation) the ACKs
// come in bursts too, and just after one the bytes in flight sit far below
// the window although the flow is sending all the window allows, so the
// bytes in flight at one ACK would call most such ACKs application-limited
// and stop the window from growing.
type inFlight struct {
	cur, prev cc.ByteCount
	roundEnd  cc.PacketNumber // the largest packet sent when the round began
}

// note folds bytes in flight seen at now; acked is the packet number an
// ACK is for (InvalidPacketNumber for a send), largest the largest sent.
func (u *inFlight) note(n cc.ByteCount, acked, largest cc.PacketNumber) {
	if acked != cc.InvalidPacketNumber && acked > u.roundEnd {
		u.prev, u.cur, u.roundEnd = u.cur, 0, largest
	}
	u.cur = max(u.cur, n)
}

func (u *inFlight) max() cc.ByteCount { return max(u.cur, u.prev) }

var _ cc.Controller = (*Controller)(nil)

// The registry names of New's and NewEq2's controllers (cc.New).
const (
	Name    = "owd"
	NameEq2 = "owd-eq2"
)

func init() {
	cc.Register(Name, func(mss cc.ByteCount) cc.Controller { return mustNew(New(Config{MSS: mss})) })
	cc.Register(NameEq2, func(mss cc.ByteCount) cc.Controller { return mustNew(NewEq2(Config{MSS: mss})) })
}

// mustNew is for the registry's factories, whose Config only sets a
// positive MSS: an error there is a broken invariant.
func mustNew(c *Controller, err error) *Controller {
	if err != nil {
		panic(fmt.Sprintf("owd: default config refused: %v", err))
	}
	return c
}

// New returns fresh's default OWD controller, "owd": the Eq. 7 rule,
// normalised by the base delay. Its decrease is multiplicative per round
// trip, so competing flows converge to equal windows (Chiu and Jain's AIMD
// argument), which Eq. 2's additive decrease does not do; see the package
// doc. A Config with a value out of range (the field docs say which) is
// refused with an error wrapping ErrInvalidConfig.
func New(cfg Config) (*Controller, error) { return newController(Name, cfg, eq7{}) }

// NewEq2 returns the paper's Eq. 2 controller ("owd-eq2"), kept as the
// literal baseline: its window follows Eq. 2 alone, without the queue
// drain, the velocity and the free random losses that "owd" adds. Competitive mode
// (compete.go) is always off for it: Eq. 2 holds its window while
// μ < OWDv ≤ 2μ, so it keeps a standing queue of its own, which Copa's
// test takes for a buffer filler's.
func NewEq2(cfg Config) (*Controller, error) {
	cfg.Tuning.DisableCompetitiveMode = true
	cfg.Tuning.DisableQueueDrain = true
	cfg.Tuning.DisableVelocity = true
	cfg.Tuning.DisableFreeRandomLoss = true
	cfg.Tuning.AvoidanceRaisesMax = true
	return newController(NameEq2, cfg, eq2{})
}

func newController(name string, cfg Config, rule windowRule) (*Controller, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	c := &Controller{
		name:        name,
		cfg:         cfg,
		rule:        rule,
		mss:         float64(cfg.MSS),
		mode:        modeSlowStart,
		cwnd:        float64(cfg.InitialWindow),
		ssthresh:    math.Inf(1),
		signal:      cc.SignalOWD,
		largestSent: cc.InvalidPacketNumber,
		recoverPN:   cc.InvalidPacketNumber,
		drainPN:     cc.InvalidPacketNumber,
	}
	c.owdA.init(cfg.Tuning.Analyzer)
	c.rttA.init(cfg.Tuning.Analyzer)
	return c, nil
}

// Name implements cc.Controller.
func (c *Controller) Name() string { return c.name }

// Mode is the controller's mode: ModeSlowStart, ModeAvoidance, ModeProbe
// or ModeCompetitive.
func (c *Controller) Mode() string { return c.mode.String() }

// OnPacketSent implements cc.Controller.
func (c *Controller) OnPacketSent(now clock.Mono, pn cc.PacketNumber, bytes, inFlight cc.ByteCount) {
	if pn > c.largestSent {
		c.largestSent = pn
	}
	c.used.note(inFlight, cc.InvalidPacketNumber, c.largestSent)
	c.levels.sent(pn, c.cwnd)
	c.pulse = c.pulseRate(now)
	if c.comp.cubic != nil {
		c.comp.cubic.OnPacketSent(now, pn, bytes, inFlight)
		if c.comp.bbr != nil {
			c.comp.bbr.OnPacketSent(now, pn, bytes, inFlight)
		}
	}
}

// OnAck implements cc.Controller: one call per newly acknowledged packet.
// The estimators are fed first, whatever the mode; then the mode's own
// transition function decides what the window does. The order of the
// mechanisms on every ACK, in one place (as tcp_bbr.c's bbr_update_model
// lists its steps):
//
//  1. A starved loss (or overflow) noted by the last OnLoss counts, unless
//     a timeout came first; two starved losses enter competitive mode
//     (countStarved, compete.go).
//  2. The loss rate decays (and, above or below the loss level, the
//     share lost: losslevel.go), the bytes in flight of the round trip are
//     noted, the RTT estimator is fed. A packet much smaller than the
//     flow's others gives no delay sample to the steps that follow
//     (size.go).
//  3. The delay sample feeds both analyzers (OWDmin, OWDcur, jitter, a
//     rebase when OWDmin rose), picks the signal (OWD or the RTT/2
//     fallback), and feeds the packet-pair dispersion and the bunching
//     test (takeDelaySample, signal.go).
//  4. The drain test folds the sample into the current slowdown's
//     experiment; the first ACK of a packet sent after the hold gives its
//     verdict, which may enter or leave competitive mode (drain.go). The
//     pulse test (Tuning.ElasticityTest) does the same with its pulse
//     (elastic.go), and the push test with its raised window (push.go),
//     whose verdict may enter competitive mode or rebase.
//  5. A full ACK ends loss recovery (RFC 6582).
//  6. CUBIC and BBR, in competitive mode, take the ACK.
//  7. The mode's transition function (onAck):
//     - slow start: the round's delivery rate (ssrate.go), the exit on
//     queueing delay unless that rate still grows on a batching link
//     (with the slow-start drain), growth by the bytes acknowledged,
//     the exit at ssthresh;
//     - avoidance: nothing while a push test holds its raised window;
//     Copa's test (which may start a push test at the floor, a slowdown,
//     or enter competitive mode), then, outside recovery: the rebase to slow start,
//     the learned noise floor (response.go), the targets, the queue drain,
//     the delay rule scaled by the reverse path, velocity and the thin-link
//     growth, OWDv_max, a slowdown when one is due, and the pulse test
//     when it may run;
//     - probe: nothing until the hold is over; then the window is
//     restored, the interrupted mode resumes and its function runs on this
//     ACK;
//     - competitive: a slowdown when one is due.
//  8. The pulse test's sending rate for the sends that follow.
func (c *Controller) OnAck(now clock.Mono, ack cc.AckSample) {
	c.countStarved(now)                     // 1
	c.lossRate -= lossRateGain * c.lossRate // 2
	c.levels.note(ack.PacketNumber, false)
	c.used.note(ack.PriorInFlight, ack.PacketNumber, c.largestSent)
	c.rtt.Update(ack.RTT)
	if !c.sizes.comparable(ack.Bytes) && !c.cfg.Tuning.DisableSizeFilter {
		ack.OWDValid, ack.RTT = false, 0 // a small packet's delay reads low (size.go)
	}
	c.takeDelaySample(now, ack)  // 3
	c.observeDrainTest(now, ack) // 4
	c.observeElasticity(now, ack)
	c.observePush(now, ack)
	if c.inRecovery && ack.PacketNumber > c.recoverPN { // 5
		c.inRecovery = false // full ACK: RFC 6582 §3.2 step 3
	}
	if c.comp.cubic != nil { // 6
		c.comp.cubic.OnAck(now, ack)
		if c.comp.bbr != nil {
			c.comp.bbr.OnAck(now, ack)
		}
	}
	c.onAck(now, ack)          // 7
	c.pulse = c.pulseRate(now) // 8
}

// onAck dispatches to the mode's transition function.
func (c *Controller) onAck(now clock.Mono, ack cc.AckSample) {
	switch c.mode {
	case modeSlowStart:
		c.onAckSlowStart(now, ack)
	case modeAvoidance:
		c.onAckAvoidance(now, ack)
	case modeProbe:
		c.onAckProbe(now, ack)
	case modeCompetitive:
		c.onAckCompetitive(now)
	}
}

// limited reports whether the flow was using its window (RFC 7661): at
// this ACK, or at any moment of this round trip or the last one (inFlight).
func (c *Controller) limited(ack cc.AckSample) bool {
	return cc.WindowLimited(max(ack.PriorInFlight, c.used.max()), c.Window(), c.cfg.MSS, c.mode == modeSlowStart)
}

// onAckSlowStart grows the window by the bytes acknowledged (RFC 5681
// §3.1) and leaves slow start early once the queueing delay passes the
// HyStart-style threshold, before the queue overflows.
func (c *Controller) onAckSlowStart(now clock.Mono, ack cc.AckSample) {
	if c.inRecovery {
		return // partial ACK: no growth until the episode ends (RFC 6582)
	}
	c.rebase = false // slow start is already what a rebase asks for
	a := c.active()
	acked := float64(ack.Bytes) / c.mss
	limited := c.limited(ack)
	c.ssr.observe(now, ack.PacketNumber, ack.Bytes, c.largestSent)
	if a.Ready() {
		c.ssMaxOWDv = math.Max(c.ssMaxOWDv, a.Variation())
		if !c.cfg.Tuning.DisableEarlySlowStartExit && a.QueueingDelay() > c.slowStartExitDelay(a) &&
			(c.cfg.Tuning.DisableRateCorroboratedExit || !c.bunch.batched() || !c.ssr.growing()) {
			if !c.cfg.Tuning.DisableSlowStartDrain && float64(a.Current()) > drainMinRatio*float64(a.floored()) {
				// The exit is one round trip late: the window has
				// doubled since the samples that showed the queue, and
				// what stands in the queue is cwnd·(1 − OWDmin/OWDcur).
				// When that is a long queue, take it out now, as BBR's
				// drain phase does, instead of leaving it to the delay
				// rule, whose per-ACK decrease shrinks as the queue grows
				// ((1 − r)/r² with r = OWDcur/OWDmin, largest at r = 2):
				// on a 100 kbit/s link an initial window's queue took
				// seconds to drain (bench/RESULTS.md, "Controller
				// research: the gaps", thin links). A short queue the
				// rule drains well.
				c.cwnd = math.Max(c.cwnd*float64(a.floored())/float64(a.Current()), c.targets(now).floor)
			}
			c.ssthresh = c.cwnd
			c.exitSlowStart(now, reasonExitDelay)
			return
		}
	}
	if limited {
		c.grow(acked*c.mss, c.targets(now).floor)
	}
	if c.cwnd >= c.ssthresh {
		c.exitSlowStart(now, reasonSsthresh)
	}
}

// onAckAvoidance applies the delay rule (Eq. 7 or Eq. 2) and starts the
// slowdowns, and competitive mode when a buffer filler is found.
func (c *Controller) onAckAvoidance(now clock.Mono, ack cc.AckSample) {
	if c.push.active {
		return // the push test holds its raised window (push.go)
	}
	c.observeEmptiness(now, ack)
	if c.push.active {
		// A push test began on this ACK: the queue drain and the delay
		// rule would take back its raised window at once (a queue of
		// three base delays is what a buffer filler leaves it).
		return
	}
	if c.inRecovery {
		return // partial ACK: no growth until the episode ends (RFC 6582)
	}
	if c.rebase {
		// OWDmin rose: a longer path, whose bandwidth-delay product is
		// unknown. Slow start finds it in a few round trips (addSample).
		c.rebase = false
		c.enterSlowStart(now)
		c.onAckSlowStart(now, ack)
		return
	}
	a := c.active()
	acked := float64(ack.Bytes) / c.mss // packets acknowledged
	limited := c.limited(ack)
	if !a.Ready() {
		// No delay history yet (e.g. neither OWD nor RTT samples): behave
		// as NewReno's congestion avoidance.
		if limited {
			c.grow(c.mss*acked/(c.cwnd/c.mss), c.targets(now).floor)
		}
		return
	}
	if !c.cfg.Tuning.DisableNoiseResponse {
		c.resp.batched = c.bunch.batched()
		c.resp.observe(now, c.cwnd/c.mss, a.QueueingDelay(), max(a.last-a.Min(), 0), c.rtt.Smoothed())
		a.learned = c.resp.floor
	}
	t := c.targets(now)
	v := a.Variation()
	if c.drainQueue(now, ack, a, v, t) {
		c.trackMax(now, a, v)
		return
	}
	// Per-ACK steps divided by the reverse scale keep the loop gain of the
	// forward loop when the ACK path queues (reverse.go).
	d := c.rule.delta(v, t.mu, a.Current(), a.floored(), c.cwnd/c.mss) * acked / c.reverseScale()
	speed := 1.0
	if !c.cfg.Tuning.DisableVelocity {
		maxSpeed := c.cfg.Tuning.VelocityMax * max(1, float64(c.rtt.Min())/float64(velocityRefRTT))
		speed = c.vel.observe(now, v, t.mu, c.rtt.Smoothed(), c.cwnd/c.mss, maxSpeed)
	}
	if d > 0 {
		d *= t.growth * speed
	}
	if d < 0 || limited { // never grow an application-limited window (RFC 7661)
		c.grow(d*c.mss, t.floor)
	}
	if d < 0 {
		// A delay-driven decrease must not drop the window below
		// ssthresh and so back into slow start (as Vegas/TCP-LP lower
		// ssthresh together with cwnd).
		c.ssthresh = math.Min(c.ssthresh, c.cwnd)
	}
	c.trackMax(now, a, v)
	if c.mode == modeAvoidance {
		c.syncSlowdown(now)
		c.maybeStartProbe(now)
		c.maybeStartElasticity(now)
	}
}

// onAckCompetitive: CUBIC and BBR (fed in OnAck) own the window; the periodic
// slowdowns ask whether the buffer filler is still there.
func (c *Controller) onAckCompetitive(now clock.Mono) {
	c.rebase = false // the base delay a buffer filler's queue inflates says nothing about the path
	c.maybeStartProbe(now)
}

// enterSlowStart restarts slow start toward an unknown ssthresh after a
// rebase.
func (c *Controller) enterSlowStart(now clock.Mono) {
	c.vel.reset()
	c.setMode(now, modeSlowStart, reasonRebase)
	c.ssthresh = math.Inf(1)
	c.ssMaxOWDv = 0
}

// exitSlowStart seeds OWDv_max from slow start (the paper measures μ's basis
// "in slow start") and schedules base-delay probes.
func (c *Controller) exitSlowStart(now clock.Mono, why reason) {
	c.vel.reset()
	c.setMode(now, modeAvoidance, why)
	c.owdA.ResetMax(now, c.ssMaxOWDv)
	c.rttA.ResetMax(now, c.ssMaxOWDv)
	c.ssMaxOWDv = 0
	c.ssExited = true
	c.armProbe(now)
}

// slowStartExitDelay is clamp(OWDmin·fraction, min, max), raised to the
// path's delay noise (Analyzer.NoiseFloor) so jitter does not end slow start.
func (c *Controller) slowStartExitDelay(a *Analyzer) time.Duration {
	t := time.Duration(float64(a.Min()) * c.cfg.Tuning.SlowStartExitFraction)
	t = min(max(t, c.cfg.Tuning.SlowStartExitMin), c.cfg.Tuning.SlowStartExitMax)
	return max(t, a.NoiseFloor())
}

// drainQueue cuts the window once per round trip to what would leave μ of
// queueing, cwnd·(1 + μ)/(1 + OWDv), when the queue stands far above the
// target: OWDv above 2μ and OWDcur above queueDrainRatio × OWDmin (our
// addition; Tuning.DisableQueueDrain). It reports whether the ACK was
// handled.
//
// Eq. 7's decrease, (1 − r)/r² per ACK with r = OWDcur/OWDmin, is largest
// at r = 2 and fades as the queue grows (−1/r per ACK, a 1/r cut per round
// trip): after a capacity drop that leaves a queue of ten base delays, the
// rule cuts 10 % per round trip of a round trip ten times longer, and the
// queue outlives the drop by seconds. A window that leaves μ of queueing
// is known at once: the delivery rate is cwnd/OWDcur-worth per base
// delay, so cwnd·OWDmin(1 + μ)/OWDcur does it, as FAST TCP's update
// (Wei et al., IEEE/ACM ToN 2006) and BBR's drain aim at the window the
// measured rate supports. The cut waits a round trip (until a packet sent
// after it is acknowledged) before it may repeat, and the rule's own
// decrease waits with it: the packets already in flight still report the
// queue the cut is draining.
func (c *Controller) drainQueue(now clock.Mono, ack cc.AckSample, a *Analyzer, v float64, t targets) bool {
	if c.cfg.Tuning.DisableQueueDrain {
		return false
	}
	if ack.PacketNumber <= c.drainPN {
		return true // a cut is on its way: nothing to add until it shows
	}
	if v <= 2*t.mu || float64(a.Current()) <= queueDrainRatio*float64(a.floored()) {
		return false
	}
	c.cwnd = math.Max(c.cwnd*(1+t.mu)/(1+v), t.floor)
	c.ssthresh = math.Min(c.ssthresh, c.cwnd)
	c.drainPN = c.largestSent
	return true
}

// queueDrainRatio is the OWDcur/OWDmin above which drainQueue cuts: a
// queue of twice the base delay, where Eq. 7's decrease has fallen to
// 2/9 per ACK and keeps falling. Below it the rule's own decrease is near
// its strongest; there, several delay-based flows share a standing queue
// that each cut would only shuffle between them.
const queueDrainRatio = 3

// drainMinRatio is the OWDcur/OWDmin above which a delay-based slow-start
// exit drains the queue at once (the DisableSlowStartDrain doc). Below it
// the cut costs more than it saves.
const drainMinRatio = 1.5

// grow adds d bytes (possibly negative) and applies the floor.
func (c *Controller) grow(d, floor float64) {
	c.cwnd = math.Max(c.cwnd+d, floor)
}

// OnLoss implements cc.Controller with loss differentiation: a loss while
// OWDv ≤ μ (short queue) is taken as non-congestive and costs a factor
// Config.NonCongestiveLossFactor; otherwise the window halves as in NewReno.
// One reduction per recovery episode.
func (c *Controller) OnLoss(now clock.Mono, loss cc.LossEvent) {
	if c.comp.cubic != nil {
		c.comp.cubic.OnLoss(now, loss)
		if c.comp.bbr != nil {
			c.comp.bbr.OnLoss(now, loss)
		}
	}
	c.lossRate += lossRateGain * (1 - c.lossRate)
	c.levels.note(loss.PacketNumber, true)
	c.onPushLoss()
	if loss.PacketNumber <= c.recoverPN {
		return // sent before the current episode began
	}
	if c.freeLoss() {
		return
	}
	if c.mode == modeProbe {
		// The lost packet was sent before the slowdown: judge the loss
		// against the window the flow had then.
		c.cwnd = c.finishProbe(now, reasonHoldCut)
	}
	c.inRecovery = true
	c.recoverPN = c.largestSent
	c.vel.reset()
	if !c.cfg.Tuning.DisableLossLevelTest {
		c.levels.cut(c.cwnd, c.lossRate)
	}
	if c.congestiveLoss(now) {
		c.onCongestiveLoss(now)
		c.cwnd = math.Max(c.cwnd/2, cc.MinWindowPackets*c.mss)
	} else {
		c.cwnd = math.Max(c.cwnd*c.cfg.NonCongestiveLossFactor, cc.MinWindowPackets*c.mss)
	}
	c.ssthresh = c.cwnd
	if c.mode == modeSlowStart {
		c.exitSlowStart(now, reasonLoss)
	}
}

// freeLoss reports whether a loss costs the window nothing (our addition;
// Tuning.DisableFreeRandomLoss): in slow start or congestion avoidance
// (slow start goes on: its exit on queueing delay finds the bottleneck),
// outside recovery, and either
//
//   - the losses were seen not to follow the window (the loss level test,
//     losslevel.go) and the window is above its floor, whatever the
//     queue: such a loss says nothing about the window, and the delay
//     rule alone keeps the queue near μ. With the queue as the judge, a
//     random loss that met the flow's own queue at μ halved the window: on
//     a 2.6 Mbit/s, 530 ms path with 2 % loss the window regrew one packet
//     per 530 ms round trip from half the path, and the flow had well under
//     BBR's goodput (bench/results/owd-round3.md, "Random losses, once
//     seen, cost nothing above the floor"). At the floor the queue still
//     judges, since beside a buffer filler the losses do not follow this
//     flow's window either, and its starved losses are what competitive
//     mode needs (compete.go); or
//   - the queue is short (OWDv under freeLossQueue·μ) and losses rare (the
//     loss rate under freeLossRate): the loss cannot have been the buffer
//     overflowing, and the delay rule keeps the queue short on its own.
//     Loss differentiation's ×0.9 per random loss costs a long path its
//     window: at 600 ms and 5 Mbit/s a window of 350 packets sees a loss
//     every round trip at 0.5 % loss, and ×0.9 per round trip against one
//     packet of increase holds the window near 45 packets, a small part of
//     the link (lossy-long-600ms's "before" in bench/RESULTS.md,
//     "Controllers on paths nobody tuned for"). Above freeLossRate a loss
//     costs ×0.9 again: a buffer too small to show as queueing delay
//     overflows at a rate that grows with the window, and the window must
//     then stop growing.
func (c *Controller) freeLoss() bool {
	if c.cfg.Tuning.DisableFreeRandomLoss || c.cfg.Tuning.DisableLossDifferentiation ||
		c.mode != modeAvoidance && c.mode != modeSlowStart || c.inRecovery {
		return false
	}
	random := !c.cfg.Tuning.DisableLossLevelTest && c.levels.random()
	if random && !c.starvedWindow() {
		return true
	}
	if c.lossRate > freeLossRate && !random {
		return false
	}
	a := c.active()
	return a.Ready() && !c.queueAbove(a, freeLossQueue, a.Mu(a.maxUpdate))
}

// Loss rate of the flow: an EWMA over packets (ACKs and losses) with gain
// lossRateGain (about the last 500 packets); a free loss needs it under
// freeLossRate.
const (
	lossRateGain = 1.0 / 512
	freeLossRate = 0.02
	// freeLossQueue is the fraction of μ under which the queue is short
	// enough for a loss to be free.
	freeLossQueue = 0.5
)

// congestiveLoss classifies a loss by the delay signal: without a delay
// history every loss counts as congestion, as in TCP.
func (c *Controller) congestiveLoss(now clock.Mono) bool {
	a := c.active()
	if c.cfg.Tuning.DisableLossDifferentiation || !a.Ready() {
		return true
	}
	return c.queueAbove(a, 1, a.Mu(now))
}

// OnRetransmissionTimeout implements cc.Controller: the whole window was lost,
// so restart from the 2-packet floor in slow start (RFC 5681 §3.1 sets the
// loss window to one segment; this controller's floor is two packets).
// Competitive mode survives it: CUBIC handles its own timeout.
func (c *Controller) OnRetransmissionTimeout(now clock.Mono) {
	if c.comp.cubic != nil {
		c.comp.cubic.OnRetransmissionTimeout(now)
		if c.comp.bbr != nil {
			c.comp.bbr.OnRetransmissionTimeout(now)
		}
	}
	if c.mode == modeProbe {
		c.finishProbe(now, reasonHoldCut)
	}
	c.ssthresh = math.Max(c.cwnd/2, cc.MinWindowPackets*c.mss)
	c.cwnd = cc.MinWindowPackets * c.mss
	c.vel.reset()
	c.comp.pendingStarved, c.comp.pendingOverflow = false, false // the timeout declared that loss
	c.inRecovery = false
	c.recoverPN = c.largestSent
	if c.mode != modeCompetitive {
		if c.cwnd < c.ssthresh {
			c.setMode(now, modeSlowStart, reasonTimeout)
		} else if c.mode == modeSlowStart {
			// The window was already at the floor: ssthresh = cwnd.
			c.exitSlowStart(now, reasonTimeout)
		}
	}
}

// Window implements cc.Controller.
// With reverse-path compensation (reverse.go) it is the internal window
// scaled by RTTcur/(RTTcur − reverse queueing).
func (c *Controller) Window() cc.ByteCount {
	if c.mode == modeCompetitive {
		return c.competitiveWindow()
	}
	if c.pulse > 0 {
		// The pulse test sets the rate: the window only keeps a round
		// trip and a half of its highest rate in flight.
		return cc.ByteCount(max(c.cwnd, 1.5*(c.elastic.s0+c.elastic.amp)*c.elastic.srtt.Seconds()))
	}
	return cc.ByteCount(math.Max(c.cwnd, cc.MinWindowPackets*c.mss) * c.reverseScale())
}

// PacingRate implements cc.Controller. Below ssthresh (slow start, and a
// slowdown's hold) the pacing gain is slow start's (cc.PacingRate).
func (c *Controller) PacingRate() cc.Bandwidth {
	if c.mode == modeCompetitive {
		if r := c.competitivePacingRate(); r > 0 {
			return r
		}
		// The CUBIC and BBR flows are new and have no RTT sample of
		// their own until their first ACK carries one: pace the window
		// over this flow's SRTT meanwhile, not send it at once.
		return cc.PacingRate(c.competitiveWindow(), c.rtt.Smoothed(), false)
	}
	if c.pulse > 0 {
		return cc.Bandwidth(8 * c.pulse)
	}
	return cc.PacingRate(cc.ByteCount(c.cwnd*c.reverseScale()), c.rtt.Smoothed(), c.cwnd < c.ssthresh)
}

// CanSend implements cc.Controller.
func (c *Controller) CanSend(bytesInFlight cc.ByteCount) bool {
	return bytesInFlight < c.Window()
}

// Signal is the delay signal in use: cc.SignalOWD or cc.SignalRTT (fallback).
func (c *Controller) Signal() cc.DelaySignal { return c.signal }

// Metrics implements cc.Controller. The delay analyzer's state is not in
// cc.Metrics, which holds only what every controller has: see Delays.
func (c *Controller) Metrics() cc.Metrics {
	m := cc.Metrics{
		Window:      c.Window(),
		PacingRate:  c.PacingRate(),
		InSlowStart: c.mode == modeSlowStart,
		Mode:        c.mode.String(),
		InRecovery:  c.inRecovery,
		SRTT:        c.rtt.Smoothed(),
		MinRTT:      c.rtt.Min(),
		Signal:      c.signal,
	}
	if !math.IsInf(c.ssthresh, 1) {
		m.Ssthresh = cc.ByteCount(c.ssthresh)
	}
	return m
}

// Delays is the delay analyzer's state, in the paper's terms (Eq. 1):
// OWDmin, OWDcur, OWDv = (OWDcur − OWDmin)/OWDmin and the threshold μ the
// rule compares OWDv with. Min, Cur and V are zero before the first sample.
type Delays struct {
	Min time.Duration // OWDmin: the base one-way delay
	Cur time.Duration // OWDcur: the filtered current one-way delay
	V   float64       // OWDv (Eq. 1), OWDmin floored at AnalyzerConfig.MinBaseDelay
	Mu  float64       // μ, in OWDv units
}

// Delays returns the delay analyzer's state without allocating, like
// Metrics. In RTT fallback (Metrics().Signal is cc.SignalRTT) it is the
// RTT/2 analyzer's. μ is as of the last ACK.
func (c *Controller) Delays() Delays {
	a := c.active()
	return Delays{Min: a.Min(), Cur: a.Current(), V: a.Variation(), Mu: a.Mu(a.maxUpdate)}
}
