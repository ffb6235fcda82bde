package cc

import (
	"math"

	"github.com/fresh-udp/fresh/clock"
)

// RFC 9438 constants. CUBIC's formulas count windows in segments (MSS) and
// time in seconds, so C has unit segments/s³.
const (
	// cubicC is C, the aggressiveness of the cubic function (RFC 9438 §4.2,
	// §5: 0.4 segments/s³).
	cubicC = 0.4
	// cubicBeta is β_cubic, the multiplicative decrease factor (RFC 9438
	// §4.6: 0.7).
	cubicBeta = 0.7
	// cubicAlpha is α_cubic = 3(1−β_cubic)/(1+β_cubic) ≈ 0.529, the additive
	// increase (segments per RTT) under which the Reno-friendly estimate
	// W_est gets the same average throughput as Reno's AIMD(1, 0.5)
	// (RFC 9438 §4.3, eq. 4).
	cubicAlpha = 3 * (1 - cubicBeta) / (1 + cubicBeta)
)

// CubicConfig configures CUBIC. The zero value is RFC 9438 with fast
// convergence on, HyStart++ off, DefaultMSS and a 10-packet initial window.
type CubicConfig struct {
	// MSS is the maximum segment size in bytes; <= 0 selects DefaultMSS.
	MSS ByteCount
	// InitialWindow is the initial congestion window in bytes; <= 0
	// selects InitialWindowPackets·MSS (RFC 6928). Never below 2·MSS.
	InitialWindow ByteCount
	// NoFastConvergence turns off fast convergence (RFC 9438 §4.7, which
	// says implementations SHOULD use it; on by default).
	NoFastConvergence bool
	// HyStart enables HyStart++ (RFC 9406) in the initial slow start: a
	// rise of the per-round minimum RTT switches to Conservative Slow Start
	// and then congestion avoidance before the first loss. Off by default.
	HyStart bool
}

// Cubic is CUBIC congestion control (RFC 9438): the window follows
// W_cubic(t) = C·(t−K)³ + W_max after each congestion event, never grows
// slower than the Reno-friendly estimate W_est, and is cut by β = 0.7.
// Slow start, recovery and the application-limited rule are NewReno's
// (shared with Reno). See the package documentation for every
// interpretation.
type Cubic struct {
	lw              lossWindow
	fastConvergence bool

	// RFC 9438 state, in segments (float) and seconds.
	wMax      float64 // W_max: window before the last reduction; 0 = unset (§4.8, §4.10)
	k         float64 // K in seconds: time for W_cubic to reach W_max from cwnd_epoch (eq. 2)
	wEst      float64 // W_est: Reno-friendly window estimate (§4.3)
	cwndPrior float64 // cwnd_prior: window before the last reduction; 0 = none yet

	// epochStart is t_epoch, the start of the current congestion avoidance
	// stage; valid only while inEpoch. Every congestion event ends the epoch;
	// the next ACK that grows the window in congestion avoidance starts one.
	epochStart clock.Mono
	inEpoch    bool
	// appLimitedSince is when the current application-limited stretch began
	// (valid while appLimited). RFC 9438 §5.8: t must not include periods in
	// which the flow did not use its window, so the stretch is added to
	// epochStart when the flow is window-limited again.
	appLimitedSince clock.Mono
	appLimited      bool
}

var _ Controller = (*Cubic)(nil)

func init() {
	Register("cubic", func(mss ByteCount) Controller { return NewCubic(CubicConfig{MSS: mss}) })
}

// NewCubic returns a CUBIC controller.
func NewCubic(cfg CubicConfig) *Cubic {
	c := &Cubic{
		lw:              newLossWindow(cfg.MSS, cfg.InitialWindow),
		fastConvergence: !cfg.NoFastConvergence,
	}
	c.lw.useHyStart = cfg.HyStart
	return c
}

// Name returns "cubic".
func (c *Cubic) Name() string { return "cubic" }

// OnPacketSent records pn for the recovery rule.
func (c *Cubic) OnPacketSent(_ clock.Mono, pn PacketNumber, _ ByteCount, _ ByteCount) {
	c.lw.onSent(pn)
}

// OnAck grows the window: slow start below ssthresh, the cubic function or
// the Reno-friendly estimate above it.
func (c *Cubic) OnAck(now clock.Mono, ack AckSample) {
	switch c.lw.onAck(ack) {
	case ackInRecovery:
		return
	case ackAppLimited:
		if !c.appLimited {
			c.appLimited = true
			c.appLimitedSince = now
		}
		return
	}
	if c.appLimited {
		c.appLimited = false
		if c.inEpoch {
			c.epochStart = c.epochStart.Add(now.Sub(c.appLimitedSince))
		}
	}
	if c.lw.inSlowStart() {
		c.lw.slowStart(ack.Bytes)
		return
	}
	c.congestionAvoidance(now, ack.Bytes)
}

// wCubic is W_cubic(t) in segments for t seconds into the epoch (RFC 9438
// §4.2, eq. 1).
func (c *Cubic) wCubic(t float64) float64 {
	d := t - c.k
	return cubicC*d*d*d + c.wMax
}

// startEpoch begins a congestion avoidance stage with cwnd_epoch = cwnd
// segments (RFC 9438 §4.2).
func (c *Cubic) startEpoch(now clock.Mono, cwnd float64) {
	c.inEpoch = true
	c.epochStart = now
	if c.wMax <= cwnd {
		// No W_max above the window: the first congestion avoidance stage
		// (slow start left without loss, §4.10) or the first after a
		// timeout (§4.8). Both say K = 0 and W_max = cwnd_epoch, so the
		// window grows on the convex side of the curve from here.
		c.wMax = cwnd
		c.k = 0
	} else {
		// Eq. 2. After a plain loss cwnd_epoch = β·W_max and this is
		// ∛(W_max(1−β)/C); after fast convergence it is smaller.
		c.k = math.Cbrt((c.wMax - cwnd) / cubicC)
	}
	if c.cwndPrior == 0 {
		c.cwndPrior = cwnd // §4.10: no reduction yet
	}
	c.wEst = cwnd // §4.3: W_est starts at cwnd_epoch
}

// congestionAvoidance applies RFC 9438 §4.2–§4.5 for acked bytes.
func (c *Cubic) congestionAvoidance(now clock.Mono, acked ByteCount) {
	mss := float64(c.lw.mss)
	cwnd := c.lw.cwnd / mss // segments
	if !c.inEpoch {
		c.startEpoch(now, cwnd)
	}
	ackedSegs := float64(acked) / mss
	t := now.Sub(c.epochStart).Seconds()

	// §4.3 Reno-friendly region. W_est grows by α_cubic per window of ACKs
	// until it reaches the window before the last reduction, then by 1 (as
	// Reno does, so CUBIC is never slower than Reno there).
	alpha := cubicAlpha
	if c.wEst >= c.cwndPrior {
		alpha = 1
	}
	c.wEst += alpha * ackedSegs / cwnd
	if c.wCubic(t) < c.wEst {
		// An ACK never shrinks the window, even if W_est lags cwnd.
		c.lw.cwnd = math.Max(c.lw.cwnd, c.wEst*mss)
		return
	}

	// §4.4/§4.5 concave and convex regions: aim for W_cubic one RTT ahead,
	// at least cwnd (an ACK never shrinks the window) and at most 1.5·cwnd
	// (never faster than slow start), and move (target−cwnd)/cwnd segments
	// per segment acknowledged. RTT is SRTT, as RFC 9438 §4.2 specifies;
	// without a sample it is 0 and the target is W_cubic(t).
	rtt := c.lw.rtt.Smoothed().Seconds()
	target := min(max(c.wCubic(t+rtt), cwnd), 1.5*cwnd)
	c.lw.cwnd += (target - cwnd) / cwnd * ackedSegs * mss
}

// OnLoss reduces once per congestion event (RFC 9438 §4.6, §4.7):
// W_max = cwnd (or cwnd·(1+β)/2 with fast convergence if the window did not
// reach the previous W_max), ssthresh = cwnd·β, cwnd = ssthresh, both at
// least 2·MSS; the epoch ends.
func (c *Cubic) OnLoss(_ clock.Mono, loss LossEvent) {
	if !c.lw.onCongestion(loss.PacketNumber) {
		return
	}
	cwnd := c.lw.cwnd / float64(c.lw.mss)
	if c.fastConvergence && cwnd < c.wMax {
		c.wMax = cwnd * (1 + cubicBeta) / 2
	} else {
		c.wMax = cwnd
	}
	c.cwndPrior = cwnd
	c.inEpoch = false
	c.lw.reduce(c.lw.cwnd * cubicBeta)
}

// OnRetransmissionTimeout follows RFC 9438 §4.8: cwnd collapses to one MSS
// as in Reno, ssthresh = cwnd·β, and W_max is forgotten so the next
// congestion avoidance stage starts with K = 0 and W_max = W_est = cwnd_epoch.
func (c *Cubic) OnRetransmissionTimeout(_ clock.Mono) {
	cwnd := c.lw.cwnd
	if c.lw.onRTO(cwnd * cubicBeta) {
		c.cwndPrior = cwnd / float64(c.lw.mss)
		c.wMax = 0
	}
	c.inEpoch = false
}

// Window returns the congestion window in bytes.
func (c *Cubic) Window() ByteCount { return c.lw.window() }

// PacingRate spreads the window over SRTT (see PacingRate).
func (c *Cubic) PacingRate() Bandwidth { return c.lw.pacingRate() }

// CanSend reports whether bytesInFlight < cwnd.
func (c *Cubic) CanSend(bytesInFlight ByteCount) bool { return c.lw.canSend(bytesInFlight) }

// Metrics returns the window state; Signal is SignalNone (loss-based).
func (c *Cubic) Metrics() Metrics { return c.lw.metrics() }
