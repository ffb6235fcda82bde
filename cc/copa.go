package cc

import (
	"math"
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// Copa, the delay-based controller of V. Arun, H. Balakrishnan, "Copa:
// Practical Delay-Based Congestion Control for the Internet", NSDI 2018.
// It is here as a baseline: the published delay-based peer the one-way-delay
// controller (package owd) is measured against, beside Vegas (rttdelay) and
// BBR.
//
// # The rule (§2.1, §2.2)
//
// Copa steers its rate toward a target that falls as the queue grows:
//
//	RTTstanding = min RTT over the last srtt/2           (§2.1, Eq. 2)
//	RTTmin      = min RTT over the last 10 s
//	d_q         = RTTstanding − RTTmin                    queueing delay
//	λt          = 1/(δ·d_q)        packets per second     (§2.1, Eq. 1)
//	λ           = cwnd/RTTstanding packets per second     the current rate
//
// and on every ACK moves the window one step (§2.2 step 3):
//
//	λ <= λt:  cwnd += v/(δ·cwnd)      (packets)
//	λ >  λt:  cwnd −= v/(δ·cwnd)
//
// so about v/δ packets per round trip. At equilibrium d_q·λ = 1/δ: each Copa
// flow keeps 1/δ = 2 packets in the queue. The velocity v (§2.2 step 4)
// starts at 1; once per window the window is compared with what it was one
// window earlier, and if it has moved in the same direction for three round
// trips v doubles each further round trip; a change of direction resets it
// to 1. The sender paces at 2·cwnd/RTTstanding (§2.2), so RTTstanding,
// the minimum over half a round trip, sees a moment of short queue in every
// window.
//
// # Modes (§2.2, §2.3)
//
//	          |
//	          V
//	      SLOW_START ---------+   cwnd doubles each RTT while λ <= λt;
//	          |  λ > λt       |   the first ACK with λ > λt ends it
//	          V               |
//	 +--> DEFAULT  --------+  |   δ = 0.5; losses ignored
//	 |        |            |  |
//	 |  queue not nearly   |  |
//	 |  empty for 5 RTTs   |  |
//	 |        V            |  |
//	 +--- COMPETITIVE      |  |   1/δ: +1 per RTT, halved on loss, δ <= 0.5
//	 queue nearly empty    |  |
//	                       V  V
//	          retransmission timeout: cwnd 2 packets, SLOW_START
//
// In default mode a Copa flow alone (or among Copa flows) empties the queue
// about once every five round trips: the window oscillates around the
// target by about 1/δ packets with a period of about five RTTs (§2.2,
// Figure 1). A buffer-filling flow (CUBIC, Reno) keeps the queue standing,
// and Copa sees that as a queueing delay that never nearly empties:
// "nearly empty" means d_q < 10 % of (RTTmax − RTTmin), RTTmax the largest
// RTT of the last four round trips (§2.3). Not nearly empty once in the
// last 5 RTTs switches to competitive mode, where 1/δ is adjusted
// AIMD-style to compete with the filler: +1 each round trip without loss,
// halved on a loss, never below the default 2 (δ <= 0.5). The first time
// the queue is seen nearly empty again, Copa returns to default mode with
// δ = 0.5.
//
// # Interpretations
//
// Where the paper leaves a choice, these are ours:
//
//   - Units. The paper counts packets; the window here is bytes (float64,
//     so that per-ACK steps far below a byte accumulate) and one packet is
//     one MSS. An ACK of b bytes moves the window by (b/MSS)·v·MSS/(δ·cwnd)
//     packets' worth of bytes, the per-packet step of §2.2 byte-counted.
//   - Windows. RTTstanding, RTTmin and RTTmax are windowed minimum and
//     maximum filters (Kathleen Nichols' three-sample estimator,
//     windowed_filter.go, as Facebook's mvfst implementation of Copa uses
//     too) over srtt/2, 10 s and 4·srtt of wall time; srtt is RFC 6298's.
//     The three-sample filter is approximate: a best sample can outlive
//     its window by up to a quarter of it.
//   - Rounds. "Once per window" is a packet-number round, as for the other
//     baselines: a round ends with the ACK of the first packet sent after
//     it began, and the window then is compared with the window at the
//     round's start (the window the just-acknowledged packet was sent
//     with: §2.2's "cwnd at the time the latest acknowledged packet was
//     sent"). A window that did not move is no direction and resets v.
//   - Velocity. "Start doubling v only after the direction has remained
//     the same for three RTTs" is read as three round-to-round repeats of
//     the same direction: v doubles at the end of the fourth round in a row
//     that moved the same way, and at every further one. The paper explains
//     why not earlier: in steady state the direction lasts about 2.5 RTTs,
//     and v must stay 1 there. A direction change also resets v at the ACK
//     where the rule turns against a v > 1 built up the other way (as mvfst
//     does), instead of at the end of that round: otherwise a v of 2^k
//     meant for growing would cut up to 2^k/δ packets before the round
//     ends (and could even double once more). v never doubles past a step
//     of one window per round (v/δ <= cwnd in packets): faster than slow
//     start is never meant, and it bounds v.
//   - Slow start grows by the bytes acknowledged (doubling per round trip)
//     rather than doubling the window at once every srtt; it ends at the
//     first ACK with λ > λt, which then already applies the decrease. The
//     5-RTT emptiness clock starts at that exit (slow start builds the
//     queue on purpose).
//   - An increase needs a window-limited ACK (WindowLimited, RFC 7661): with
//     no queue λt is unbounded and an application-limited flow would grow
//     its window forever. A decrease does not. The paper does not say.
//   - Loss. §2.2's rule has no loss term: in default mode (and slow start)
//     losses do not touch the window; the paper's point is that a
//     delay-based controller need not react to non-congestive loss. Losses
//     matter only in competitive mode, through 1/δ (§2.3), once per
//     congestion event: losses of packets sent before the last halving
//     (RFC 6582's "recover" by packet number, as lossbased.go) do not halve
//     again, and a round with such a loss does not add 1.
//   - A retransmission timeout is persistent congestion (RFC 9002 §7.6.2:
//     the window MUST fall to the minimum): cwnd = 2 packets, v = 1,
//     δ = 0.5, and slow start again, whose exit is the delay test above.
//     The paper does not discuss timeouts.
//   - The queue is "nearly empty" at d_q <= 10 % of (RTTmax − RTTmin): with
//     a strict < a flow alone on a jitter-free link (d_q = 0 and RTTmax =
//     RTTmin) could never find its queue empty.
//   - Pacing is 2·cwnd/RTTstanding in payload bytes; fresh's pacer counts
//     each datagram's header as well, 4–5 % more, immaterial at a gain of 2.
//   - The window floor is 2 packets (MinWindowPackets).
//   - InRecovery is never reported: Copa has no recovery state.

// Copa constants, with the paper's values.
const (
	// copaDefaultDelta is δ in default mode (§2.1, §4: 0.5), so 1/δ = 2
	// packets per flow in the queue at equilibrium.
	copaDefaultDelta = 0.5
	// copaMinRTTWindow is RTTmin's window (§2.1: 10 s).
	copaMinRTTWindow = 10 * time.Second
	// copaMaxRTTRounds is RTTmax's window in smoothed RTTs (§2.3: the last
	// four round trips).
	copaMaxRTTRounds = 4
	// copaNearlyEmpty is the fraction of (RTTmax − RTTmin) below which the
	// queue counts as nearly empty (§2.3: 10 %).
	copaNearlyEmpty = 0.1
	// copaEmptyRounds: a queue not nearly empty once in this many smoothed
	// RTTs means a buffer filler shares it (§2.3: 5).
	copaEmptyRounds = 5
	// copaVelocityRounds is how many round-to-round repeats of the same
	// direction must pass before v starts doubling (§2.2 step 4: three).
	copaVelocityRounds = 3
	// copaPacingGain: pace at 2·cwnd/RTTstanding (§2.2).
	copaPacingGain = 2.0
)

// Copa's Metrics.Mode names (slow start is ModeSlowStart).
const (
	// ModeDefault is Copa's default mode: δ = 0.5, losses ignored.
	ModeDefault = "default"
	// ModeCompetitive is Copa's competitive mode beside a buffer filler:
	// 1/δ adjusted AIMD-style. owd names its own competitive mode the same.
	ModeCompetitive = "competitive"
)

type copaMode uint8

const (
	copaSlowStart copaMode = iota
	copaDefault
	copaCompetitive
)

func (m copaMode) String() string {
	switch m {
	case copaDefault:
		return ModeDefault
	case copaCompetitive:
		return ModeCompetitive
	default:
		return ModeSlowStart
	}
}

// CopaConfig configures Copa. The zero value is the paper's Copa with
// DefaultMSS and a 10-packet initial window.
type CopaConfig struct {
	// MSS is the maximum segment size in bytes; <= 0 selects DefaultMSS.
	MSS ByteCount
	// InitialWindow is the initial window in bytes; <= 0 selects
	// InitialWindowPackets·MSS. Never below 2 packets.
	InitialWindow ByteCount
}

// Copa is the Copa congestion controller; see the comment at the top of
// copa.go.
type Copa struct {
	mss  ByteCount
	cwnd float64 // bytes
	mode copaMode

	rtt RTTStats
	// The RTT filters run on nanoseconds since origin (the first event).
	origin   clock.Mono
	started  bool
	lastTick uint64
	standing windowedFilter[time.Duration] // RTTstanding, over srtt/2
	minRTT   windowedFilter[time.Duration] // RTTmin, over 10 s
	maxRTT   windowedFilter[time.Duration] // RTTmax, over 4·srtt
	dq       time.Duration                 // the last queueing delay d_q

	invDelta float64 // 1/δ: 2 in default mode, AIMD in competitive mode

	// Velocity (§2.2 step 4).
	velocity float64
	dir      int // direction of the last round: +1 up, −1 down, 0 none
	sameDir  int // round-to-round repeats of dir

	// Rounds by packet number: a round ends with the ACK of a packet
	// numbered above roundEnd.
	largestSent PacketNumber
	roundEnd    PacketNumber
	roundCwnd   float64 // cwnd when the round began; 0 = do not evaluate
	roundLoss   bool    // a congestion event happened in this round
	recover     PacketNumber

	// lastEmpty is when the queue was last seen nearly empty (§2.3).
	lastEmpty clock.Mono
}

var _ Controller = (*Copa)(nil)

func init() {
	Register("copa", func(mss ByteCount) Controller { return NewCopa(CopaConfig{MSS: mss}) })
}

// NewCopa returns a Copa controller in slow start.
func NewCopa(cfg CopaConfig) *Copa {
	mss, iw := sizeDefaults(cfg.MSS, cfg.InitialWindow)
	c := &Copa{
		mss:         mss,
		cwnd:        float64(max(iw, MinWindowPackets*mss)),
		invDelta:    1 / copaDefaultDelta,
		velocity:    1,
		largestSent: InvalidPacketNumber,
		roundEnd:    InvalidPacketNumber,
		recover:     InvalidPacketNumber,
		standing:    windowedFilter[time.Duration]{isMin: true},
		minRTT:      windowedFilter[time.Duration]{isMin: true},
	}
	return c
}

// Name returns "copa".
func (c *Copa) Name() string { return "copa" }

// OnPacketSent records the largest packet number sent (rounds, recover).
func (c *Copa) OnPacketSent(now clock.Mono, pn PacketNumber, _ ByteCount, _ ByteCount) {
	c.tick(now)
	c.largestSent = max(c.largestSent, pn)
}

// tick returns now as nanoseconds since the first event, never going back.
func (c *Copa) tick(now clock.Mono) uint64 {
	if !c.started {
		c.started, c.origin, c.lastEmpty = true, now, now
	}
	if d := now.Sub(c.origin); d > 0 {
		c.lastTick = max(c.lastTick, uint64(d))
	}
	return c.lastTick
}

// OnAck applies §2.2's per-ACK steps: update the delay estimates, end the
// round (velocity, competitive 1/δ), check the mode, move the window.
func (c *Copa) OnAck(now clock.Mono, ack AckSample) {
	t := c.tick(now)
	if ack.RTT > 0 {
		c.updateRTT(t, ack.RTT)
	}
	if ack.PacketNumber > c.roundEnd {
		c.endRound()
	}
	if !c.rtt.HasSample() {
		// Nothing to steer by yet: slow start grows as any would.
		if c.mode == copaSlowStart && c.windowLimited(ack) {
			c.cwnd += float64(ack.Bytes)
		}
		return
	}
	c.dq = max(c.standing.get()-c.minRTT.get(), 0)
	c.checkMode(now)

	increase := c.belowTarget()
	if c.mode == copaSlowStart {
		if increase {
			if c.windowLimited(ack) {
				c.cwnd += float64(ack.Bytes)
			}
			return
		}
		c.exitSlowStart(now)
	}
	c.step(ack, increase)
}

// updateRTT folds an RTT sample into SRTT and the three windowed filters.
func (c *Copa) updateRTT(t uint64, sample time.Duration) {
	first := !c.rtt.HasSample()
	c.rtt.Update(sample)
	srtt := uint64(c.rtt.Smoothed())
	if first {
		c.standing.reset(t, sample)
		c.minRTT.reset(t, sample)
		c.maxRTT.reset(t, sample)
		return
	}
	c.standing.update(srtt/2, t, sample)
	c.minRTT.update(uint64(copaMinRTTWindow), t, sample)
	c.maxRTT.update(copaMaxRTTRounds*srtt, t, sample)
}

// belowTarget is §2.2 step 3's test λ <= λt, that is
// cwnd/RTTstanding <= 1/(δ·d_q), written without division: with no queue
// (d_q = 0) the target is unbounded.
func (c *Copa) belowTarget() bool {
	packets := c.cwnd / float64(c.mss)
	return packets*c.dq.Seconds() <= c.invDelta*c.standing.get().Seconds()
}

// windowLimited reports whether the flow was using its window (RFC 7661).
func (c *Copa) windowLimited(ack AckSample) bool {
	return WindowLimited(ack.PriorInFlight, c.Window(), c.mss, c.mode == copaSlowStart)
}

// step moves the window by v/(δ·cwnd) packets per acknowledged packet
// (§2.2 step 3), up if below the target rate, else down. One ACK moves it
// by at most the bytes it acknowledges.
func (c *Copa) step(ack AckSample, increase bool) {
	d := +1
	if !increase {
		d = -1
	}
	if c.velocity > 1 && c.dir != d {
		// The rule turned against the direction v was built up in:
		// §2.2's reset on a change of direction, at once.
		c.resetVelocity(d)
	}
	mss := float64(c.mss)
	delta := c.velocity * c.invDelta * mss * float64(ack.Bytes) / c.cwnd
	delta = math.Min(delta, float64(ack.Bytes))
	if increase {
		if c.windowLimited(ack) {
			c.cwnd += delta
		}
		return
	}
	c.cwnd = math.Max(c.cwnd-delta, c.minWindow())
}

// endRound evaluates the round that just ended: the velocity's direction
// (§2.2 step 4) and, in competitive mode, 1/δ's additive increase (§2.3).
func (c *Copa) endRound() {
	if c.roundCwnd > 0 && c.mode != copaSlowStart {
		d := 0
		switch {
		case c.cwnd > c.roundCwnd:
			d = +1
		case c.cwnd < c.roundCwnd:
			d = -1
		}
		switch {
		case d == 0 || d != c.dir:
			c.resetVelocity(d)
		default:
			c.sameDir++
			// No faster than one window per round (v/δ <= cwnd).
			if c.sameDir >= copaVelocityRounds &&
				2*c.velocity*c.invDelta <= c.cwnd/float64(c.mss) {
				c.velocity *= 2
			}
		}
		if c.mode == copaCompetitive && !c.roundLoss {
			c.invDelta++
		}
	}
	c.roundEnd = c.largestSent
	c.roundCwnd = c.cwnd
	c.roundLoss = false
}

// resetVelocity sets v = 1 and makes d the direction, counted afresh from
// the current window.
func (c *Copa) resetVelocity(d int) {
	c.velocity = 1
	c.dir = d
	c.sameDir = 0
	c.roundCwnd = c.cwnd
}

// checkMode is §2.3's switch: competitive once the queue has not been
// nearly empty for 5 RTTs, default again as soon as it is.
func (c *Copa) checkMode(now clock.Mono) {
	spread := c.maxRTT.get() - c.minRTT.get()
	empty := float64(c.dq) <= copaNearlyEmpty*float64(spread)
	if empty {
		c.lastEmpty = now
	}
	switch c.mode {
	case copaDefault:
		if now.Sub(c.lastEmpty) > copaEmptyRounds*c.rtt.Smoothed() {
			c.mode = copaCompetitive
		}
	case copaCompetitive:
		if empty {
			c.mode = copaDefault
			c.invDelta = 1 / copaDefaultDelta
		}
	}
}

// exitSlowStart enters default mode; the emptiness clock starts now.
func (c *Copa) exitSlowStart(now clock.Mono) {
	c.mode = copaDefault
	c.lastEmpty = now
	c.resetVelocity(0)
}

func (c *Copa) minWindow() float64 { return float64(MinWindowPackets * c.mss) }

// OnLoss halves 1/δ in competitive mode, once per congestion event (a loss
// of a packet sent after the last halving). Default mode and slow start
// ignore losses (§2.2 has no loss term).
func (c *Copa) OnLoss(now clock.Mono, loss LossEvent) {
	c.tick(now)
	if loss.PacketNumber <= c.recover {
		return
	}
	c.recover = max(c.largestSent, loss.PacketNumber)
	c.roundLoss = true
	if c.mode == copaCompetitive {
		c.invDelta = math.Max(c.invDelta/2, 1/copaDefaultDelta)
	}
}

// OnRetransmissionTimeout is persistent congestion (RFC 9002 §7.6.2): the
// window falls to 2 packets, v and δ return to their defaults, and slow
// start begins again.
func (c *Copa) OnRetransmissionTimeout(now clock.Mono) {
	c.tick(now)
	c.cwnd = c.minWindow()
	c.mode = copaSlowStart
	c.invDelta = 1 / copaDefaultDelta
	c.resetVelocity(0)
	c.recover = max(c.recover, c.largestSent)
	c.lastEmpty = now
}

// Window returns the congestion window in bytes.
func (c *Copa) Window() ByteCount { return ByteCount(c.cwnd) }

// PacingRate is 2·cwnd/RTTstanding (§2.2); 0 (do not pace) before the first
// RTT sample.
func (c *Copa) PacingRate() Bandwidth {
	standing := c.standing.get()
	if !c.rtt.HasSample() || standing <= 0 {
		return 0
	}
	bps := copaPacingGain * c.cwnd * 8 / standing.Seconds()
	return max(Bandwidth(bps), 1)
}

// CanSend reports whether bytesInFlight < cwnd.
func (c *Copa) CanSend(bytesInFlight ByteCount) bool { return bytesInFlight < c.Window() }

// Metrics reports the mode ("slow_start", "default", "competitive"), the
// window, the pacing rate, SRTT and RTTmin (the 10 s minimum).
func (c *Copa) Metrics() Metrics {
	signal := SignalNone
	if c.rtt.HasSample() {
		signal = SignalRTT
	}
	return Metrics{
		Window:      c.Window(),
		PacingRate:  c.PacingRate(),
		InSlowStart: c.mode == copaSlowStart,
		SRTT:        c.rtt.Smoothed(),
		MinRTT:      c.minRTT.get(),
		Signal:      signal,
		Mode:        c.mode.String(),
	}
}
