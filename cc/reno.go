package cc

import "github.com/fresh-udp/fresh/clock"

// RenoConfig configures NewReno. The zero value is the RFC behaviour with
// DefaultMSS, a 10-packet initial window and HyStart++ off.
type RenoConfig struct {
	// MSS is the maximum segment size in bytes; <= 0 selects DefaultMSS.
	MSS ByteCount
	// InitialWindow is the initial congestion window in bytes; <= 0
	// selects InitialWindowPackets·MSS (RFC 6928). Never below 2·MSS.
	InitialWindow ByteCount
	// HyStart enables HyStart++ (RFC 9406) in the initial slow start: a
	// rise of the per-round minimum RTT switches to Conservative Slow Start
	// and then congestion avoidance before the first loss. Off by default.
	HyStart bool
}

// Reno is NewReno congestion control (RFC 5681 + RFC 6582) adapted to
// QUIC-style packet numbers: slow start by byte counting, additive increase
// of one MSS per window in congestion avoidance, halving once per congestion
// event, recovery tracked by packet number, and a one-packet loss window after
// a retransmission timeout. See the package documentation for every
// interpretation.
type Reno struct {
	lw lossWindow
}

var _ Controller = (*Reno)(nil)

func init() {
	Register("reno", func(mss ByteCount) Controller { return NewReno(RenoConfig{MSS: mss}) })
}

// NewReno returns a NewReno controller.
func NewReno(cfg RenoConfig) *Reno {
	r := &Reno{lw: newLossWindow(cfg.MSS, cfg.InitialWindow)}
	r.lw.useHyStart = cfg.HyStart
	return r
}

// Name returns "reno".
func (r *Reno) Name() string { return "reno" }

// OnPacketSent records pn for the recovery rule.
func (r *Reno) OnPacketSent(_ clock.Mono, pn PacketNumber, _ ByteCount, _ ByteCount) {
	r.lw.onSent(pn)
}

// OnAck grows the window: by the bytes acknowledged in slow start, by
// MSS·acked/cwnd in congestion avoidance (RFC 5681 §3.1 eq. 3 with byte
// counting, so one window of ACKs adds one MSS).
func (r *Reno) OnAck(_ clock.Mono, ack AckSample) {
	if r.lw.onAck(ack) != ackGrow {
		return
	}
	if r.lw.inSlowStart() {
		r.lw.slowStart(ack.Bytes)
		return
	}
	r.lw.cwnd += float64(r.lw.mss) * float64(ack.Bytes) / r.lw.cwnd
}

// OnLoss halves the window once per congestion event: ssthresh =
// max(cwnd/2, 2·MSS), cwnd = ssthresh (RFC 5681 §3.2 step 2 with cwnd in place
// of FlightSize, as RFC 9002 §7.3.2 does; see the package doc).
func (r *Reno) OnLoss(_ clock.Mono, loss LossEvent) {
	if !r.lw.onCongestion(loss.PacketNumber) {
		return
	}
	r.lw.reduce(r.lw.cwnd / 2)
}

// OnRetransmissionTimeout sets ssthresh = max(cwnd/2, 2·MSS) (unless this
// timeout continues an event already counted) and cwnd = 1 MSS, the loss
// window of RFC 5681 §3.1.
func (r *Reno) OnRetransmissionTimeout(_ clock.Mono) {
	r.lw.onRTO(r.lw.cwnd / 2)
}

// Window returns the congestion window in bytes.
func (r *Reno) Window() ByteCount { return r.lw.window() }

// PacingRate spreads the window over SRTT (see PacingRate).
func (r *Reno) PacingRate() Bandwidth { return r.lw.pacingRate() }

// CanSend reports whether bytesInFlight < cwnd.
func (r *Reno) CanSend(bytesInFlight ByteCount) bool { return r.lw.canSend(bytesInFlight) }

// Metrics returns the window state; Signal is SignalNone (loss-based).
func (r *Reno) Metrics() Metrics { return r.lw.metrics() }
