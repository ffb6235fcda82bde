package cc

import (
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// Vegas thresholds (Brakmo & Peterson, "TCP Vegas: End to End Congestion
// Avoidance on a Global Internet", IEEE JSAC 13(8), 1995, §3.2–§3.3), in
// packets queued at the bottleneck.
const (
	rttDelayAlpha = 2.0 // below: +1 MSS per RTT
	rttDelayBeta  = 4.0 // above: −1 MSS per RTT
	rttDelayGamma = 1.0 // above, in slow start: leave slow start
)

// RTTDelayConfig configures the RTT-delay controller. The zero value is
// Vegas with α = 2, β = 4, γ = 1 packets.
type RTTDelayConfig struct {
	// MSS is the maximum segment size in bytes; <= 0 selects DefaultMSS.
	MSS ByteCount
	// InitialWindow is the initial congestion window in bytes; <= 0
	// selects InitialWindowPackets·MSS (RFC 6928). Never below 2·MSS.
	InitialWindow ByteCount
	// Alpha, Beta and Gamma are Vegas' thresholds in packets queued;
	// <= 0 selects 2, 4 and 1. Beta below Alpha is raised to Alpha (the
	// hold band is then empty).
	Alpha, Beta, Gamma float64
}

// RTTDelay is a Vegas-style delay-based controller. Once per round trip it
// estimates how many of its packets sit in the bottleneck queue,
//
//	diff = (expected − actual)·baseRTT = W·(1 − baseRTT/RTT)  [packets]
//
// with expected = W/baseRTT, actual = W/RTT, baseRTT the smallest RTT ever
// seen and RTT the smallest RTT of the last round, and steers that number
// into [α, β]: +1 MSS if diff < α, −1 MSS if diff > β, hold otherwise. Slow
// start ends once diff exceeds γ. Loss halves the window as Reno does.
//
// It is the control group for the one-way-delay controller: it measures the
// round trip, so queueing on the ACK (reverse) path raises RTT exactly as
// forward queueing does and makes it back off for congestion its own data
// does not meet; a one-way-delay controller sees only the forward path.
type RTTDelay struct {
	lw lossWindow

	alpha, beta, gamma float64 // packets

	// One round lasts from the ACK that starts it until the ACK of a packet
	// sent after that (numbered above roundEnd).
	roundEnd    PacketNumber
	roundMinRTT time.Duration // smallest RTT sample this round; 0 = none
	// roundCwnd is W: the window, in bytes, when the round began — the
	// window the round's samples were measured with. 0 marks a round not
	// to evaluate (the first one, or one begun in recovery, whose samples
	// carry the queue the loss just drained).
	roundCwnd float64
	// roundGrow: some ACK this round found the flow window-limited outside
	// recovery, so an increase is justified (RFC 7661).
	roundGrow bool
	// diff is the last evaluated queue estimate in packets (for traces).
	diff float64
}

var _ Controller = (*RTTDelay)(nil)

func init() {
	Register("rttdelay", func(mss ByteCount) Controller { return NewRTTDelay(RTTDelayConfig{MSS: mss}) })
}

// NewRTTDelay returns a Vegas-style RTT-delay controller.
func NewRTTDelay(cfg RTTDelayConfig) *RTTDelay {
	v := &RTTDelay{
		lw:       newLossWindow(cfg.MSS, cfg.InitialWindow),
		alpha:    cfg.Alpha,
		beta:     cfg.Beta,
		gamma:    cfg.Gamma,
		roundEnd: InvalidPacketNumber,
	}
	if v.alpha <= 0 {
		v.alpha = rttDelayAlpha
	}
	if v.beta <= 0 {
		v.beta = rttDelayBeta
	}
	if v.gamma <= 0 {
		v.gamma = rttDelayGamma
	}
	v.beta = max(v.beta, v.alpha)
	return v
}

// Name returns "rttdelay".
func (v *RTTDelay) Name() string { return "rttdelay" }

// OnPacketSent records pn for the recovery rule and the round boundaries.
func (v *RTTDelay) OnPacketSent(_ clock.Mono, pn PacketNumber, _ ByteCount, _ ByteCount) {
	v.lw.onSent(pn)
}

// OnAck grows the window by byte counting in slow start, collects the
// round's minimum RTT and, at the end of each round, applies the Vegas rule.
func (v *RTTDelay) OnAck(_ clock.Mono, ack AckSample) {
	verdict := v.lw.onAck(ack)
	if ack.RTT > 0 && (v.roundMinRTT == 0 || ack.RTT < v.roundMinRTT) {
		v.roundMinRTT = ack.RTT
	}
	if verdict == ackGrow {
		v.roundGrow = true
		if v.lw.inSlowStart() {
			v.lw.slowStart(ack.Bytes)
		}
	}
	if ack.PacketNumber > v.roundEnd {
		v.endRound()
	}
}

// endRound evaluates the round that just ended and starts the next.
func (v *RTTDelay) endRound() {
	base := v.lw.rtt.Min()
	if v.roundCwnd > 0 && v.roundMinRTT > 0 && base > 0 && !v.lw.inRecovery {
		packets := v.roundCwnd / float64(v.lw.mss)
		v.diff = packets * (1 - float64(base)/float64(v.roundMinRTT))
		v.adjust()
	}
	v.roundEnd = v.lw.largestSent
	v.roundMinRTT = 0
	v.roundGrow = false
	v.roundCwnd = 0
	if !v.lw.inRecovery {
		v.roundCwnd = v.lw.cwnd
	}
}

// adjust applies the Vegas rule for the queue estimate v.diff.
func (v *RTTDelay) adjust() {
	mss := float64(v.lw.mss)
	if v.lw.inSlowStart() {
		if v.diff > v.gamma {
			// Leave slow start (Vegas §3.3). The last round already
			// queued diff packets and the window has grown since, so
			// shrink it to the window that leaves γ packets queued,
			// W − (diff − γ), and make that ssthresh.
			target := v.roundCwnd - (v.diff-v.gamma)*mss
			v.lw.cwnd = max(min(v.lw.cwnd, target), v.lw.minWindow())
			v.lw.ssthresh = v.lw.cwnd
		}
		return
	}
	switch {
	case v.diff < v.alpha:
		if v.roundGrow {
			v.lw.cwnd += mss
		}
	case v.diff > v.beta:
		v.lw.cwnd = max(v.lw.cwnd-mss, v.lw.minWindow())
		// Stay in congestion avoidance: a delay-driven decrease is not a
		// reason to slow-start back up.
		v.lw.ssthresh = min(v.lw.ssthresh, v.lw.cwnd)
	}
}

// OnLoss halves the window once per congestion event, as Reno does, and
// discards the round in progress.
func (v *RTTDelay) OnLoss(_ clock.Mono, loss LossEvent) {
	if !v.lw.onCongestion(loss.PacketNumber) {
		return
	}
	v.lw.reduce(v.lw.cwnd / 2)
	v.roundCwnd = 0
}

// OnRetransmissionTimeout behaves as Reno (ssthresh = cwnd/2, cwnd = 1 MSS)
// and discards the round in progress.
func (v *RTTDelay) OnRetransmissionTimeout(_ clock.Mono) {
	v.lw.onRTO(v.lw.cwnd / 2)
	v.roundCwnd = 0
}

// Window returns the congestion window in bytes.
func (v *RTTDelay) Window() ByteCount { return v.lw.window() }

// PacingRate spreads the window over SRTT (see PacingRate).
func (v *RTTDelay) PacingRate() Bandwidth { return v.lw.pacingRate() }

// CanSend reports whether bytesInFlight < cwnd.
func (v *RTTDelay) CanSend(bytesInFlight ByteCount) bool { return v.lw.canSend(bytesInFlight) }

// Metrics returns the window state with Signal = SignalRTT once an RTT
// sample exists (SignalNone before).
func (v *RTTDelay) Metrics() Metrics {
	m := v.lw.metrics()
	if v.lw.rtt.HasSample() {
		m.Signal = SignalRTT
	}
	return m
}
