package cc

import (
	"math"
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// H-TCP constants (Leith & Shorten, PFLDnet 2004; draft-leith-tcp-htcp-06).
const (
	// htcpDeltaL is Δ_L, how long after a congestion event the increase
	// stays Reno's (α = 1) before the high-speed mode starts.
	htcpDeltaL = time.Second
	// htcpBetaMin and htcpBetaMax clamp the adaptive backoff factor
	// β = RTTmin/RTTmax: never more than Reno's halving, never less than a
	// 20 % cut (β_max = 0.8), which would converge too slowly.
	htcpBetaMin = 0.5
	htcpBetaMax = 0.8
	// htcpDeltaB is Δ_B, the relative change of throughput between two
	// congestion events above which the path is taken to have changed (a
	// flow arrived or left) and β falls back to 0.5 ("adaptive reset").
	htcpDeltaB = 0.2
	// htcpRefRTT is the reference RTT of RTT scaling.
	htcpRefRTT = 100 * time.Millisecond
)

// HTCPConfig configures H-TCP. The zero value is the draft's algorithm with
// adaptive backoff and adaptive reset on, RTT scaling and HyStart++ off.
type HTCPConfig struct {
	// MSS is the maximum segment size in bytes; <= 0 selects DefaultMSS.
	MSS ByteCount
	// InitialWindow is the initial congestion window in bytes; <= 0
	// selects InitialWindowPackets·MSS (RFC 6928). Never below 2·MSS.
	InitialWindow ByteCount
	// DeltaL is Δ_L; <= 0 selects 1 s.
	DeltaL time.Duration
	// RTTScaling multiplies the high-speed increase by RTTmin/RefRTT (at
	// least 1), so flows with different RTTs gain window at the same rate
	// per second rather than per RTT. Off by default.
	RTTScaling bool
	// RefRTT is the reference RTT of RTTScaling; <= 0 selects 100 ms.
	RefRTT time.Duration
	// NoAdaptiveBackoff fixes β at 0.5 (then α = α(Δ), Reno's rule below
	// Δ_L). Adaptive backoff is on by default.
	NoAdaptiveBackoff bool
	// NoAdaptiveReset keeps β = RTTmin/RTTmax even when throughput changed
	// by more than 20 % between congestion events. Reset is on by default.
	NoAdaptiveReset bool
	// HyStart enables HyStart++ (RFC 9406) in the initial slow start: a
	// rise of the per-round minimum RTT switches to Conservative Slow Start
	// and then congestion avoidance before the first loss. Off by default.
	HyStart bool
}

// HTCP is H-TCP congestion control: the additive increase grows with the
// time Δ since the last congestion event, α(Δ) = 1 + 10(Δ−Δ_L) +
// ((Δ−Δ_L)/2)² once Δ exceeds Δ_L, scaled by 2(1−β) for friendliness, and
// the backoff β = RTTmin/RTTmax ∈ [0.5, 0.8] keeps the bottleneck queue from
// draining. Slow start and recovery are NewReno's. See the package
// documentation for every interpretation.
type HTCP struct {
	lw lossWindow

	deltaL          time.Duration
	rttScaling      bool
	refRTT          time.Duration
	adaptiveBackoff bool
	adaptiveReset   bool

	// beta is β of the last backoff (0.5 until the first one); it also
	// scales the increase until the next, α = 2(1−β)·α(Δ).
	beta float64
	// lastCongestion is when the last congestion event (loss or timeout)
	// happened; Δ is measured from it. Before any event (hadCongestion
	// false) Δ is measured from the first packet sent, flowStart.
	lastCongestion clock.Mono
	hadCongestion  bool
	flowStart      clock.Mono
	started        bool
	// maxRTT is the largest RTT sample from a packet sent since the last
	// congestion event: RTTmax, the RTT with the queue at its fullest.
	maxRTT time.Duration
	// lastThroughput is B(k) in bytes/s, the throughput just before the
	// last congestion event, estimated as cwnd/RTTmax; 0 = none yet.
	lastThroughput float64
}

var _ Controller = (*HTCP)(nil)

func init() {
	Register("htcp", func(mss ByteCount) Controller { return NewHTCP(HTCPConfig{MSS: mss}) })
}

// NewHTCP returns an H-TCP controller.
func NewHTCP(cfg HTCPConfig) *HTCP {
	h := &HTCP{
		lw:              newLossWindow(cfg.MSS, cfg.InitialWindow),
		deltaL:          cfg.DeltaL,
		rttScaling:      cfg.RTTScaling,
		refRTT:          cfg.RefRTT,
		adaptiveBackoff: !cfg.NoAdaptiveBackoff,
		adaptiveReset:   !cfg.NoAdaptiveReset,
		beta:            htcpBetaMin,
	}
	h.lw.useHyStart = cfg.HyStart
	if h.deltaL <= 0 {
		h.deltaL = htcpDeltaL
	}
	if h.refRTT <= 0 {
		h.refRTT = htcpRefRTT
	}
	return h
}

// Name returns "htcp".
func (h *HTCP) Name() string { return "htcp" }

// OnPacketSent records pn for the recovery rule and the flow's start time.
func (h *HTCP) OnPacketSent(now clock.Mono, pn PacketNumber, _ ByteCount, _ ByteCount) {
	if !h.started {
		h.started = true
		h.flowStart = now
	}
	h.lw.onSent(pn)
}

// htcpAlpha is the H-TCP increase function α(Δ) in packets per RTT, before
// the 2(1−β) and RTT scalings: 1 up to Δ_L, then 1 + 10(Δ−Δ_L) +
// ((Δ−Δ_L)/2)² with Δ in seconds.
func htcpAlpha(delta, deltaL time.Duration) float64 {
	if delta <= deltaL {
		return 1
	}
	d := (delta - deltaL).Seconds()
	return 1 + 10*d + d*d/4
}

// increase is the packets per RTT H-TCP adds at now: 2(1−β)·α, where α is
// α(Δ), RTT-scaled if configured.
func (h *HTCP) increase(now clock.Mono) float64 {
	since := h.flowStart
	if h.hadCongestion {
		since = h.lastCongestion
	}
	delta := now.Sub(since)
	alpha := htcpAlpha(delta, h.deltaL)
	if h.rttScaling && delta > h.deltaL {
		// Only the high-speed branch is scaled, and never below Reno's 1.
		minRTT := h.lw.rtt.Min()
		alpha = math.Max(1, alpha*minRTT.Seconds()/h.refRTT.Seconds())
	}
	return 2 * (1 - h.beta) * alpha
}

// OnAck grows the window: slow start below ssthresh, then
// increase(now)·MSS·acked/cwnd per ACK.
func (h *HTCP) OnAck(now clock.Mono, ack AckSample) {
	verdict := h.lw.onAck(ack)
	// RTTmax is taken only from packets sent after the last congestion
	// event: older ones still carry the queue that event just drained.
	if ack.RTT > h.maxRTT && ack.PacketNumber > h.lw.recover {
		h.maxRTT = ack.RTT
	}
	if verdict != ackGrow {
		return
	}
	if h.lw.inSlowStart() {
		h.lw.slowStart(ack.Bytes)
		return
	}
	// Never faster than slow start: α(Δ) grows without bound with the time
	// since the last congestion event (20 idle minutes make it ~10^5), and
	// one ACK must not add more window than it acknowledged.
	inc := h.increase(now) * float64(h.lw.mss) * float64(ack.Bytes) / h.lw.cwnd
	h.lw.cwnd += math.Min(inc, float64(ack.Bytes))
}

// backoff computes β for the congestion event happening now and remembers
// the throughput before it.
func (h *HTCP) backoff() float64 {
	minRTT, maxRTT := h.lw.rtt.Min(), h.maxRTT
	if !h.adaptiveBackoff || minRTT <= 0 || maxRTT <= 0 {
		// Fixed backoff, or no RTT sample since the last event (two events
		// within one RTT): halve, as Reno.
		h.lastThroughput = 0
		return htcpBetaMin
	}
	beta := min(max(minRTT.Seconds()/maxRTT.Seconds(), htcpBetaMin), htcpBetaMax)
	throughput := h.lw.cwnd / maxRTT.Seconds() // B(k+1), bytes/s
	if h.adaptiveReset && h.lastThroughput > 0 &&
		math.Abs(throughput-h.lastThroughput)/h.lastThroughput > htcpDeltaB {
		beta = htcpBetaMin
	}
	h.lastThroughput = throughput
	return beta
}

// OnLoss backs off once per congestion event: ssthresh = β·cwnd (at least
// 2·MSS), cwnd = ssthresh, and Δ restarts.
func (h *HTCP) OnLoss(now clock.Mono, loss LossEvent) {
	if !h.lw.onCongestion(loss.PacketNumber) {
		return
	}
	h.beta = h.backoff()
	h.lw.reduce(h.lw.cwnd * h.beta)
	h.congestion(now)
}

// congestion restarts Δ and the RTTmax measurement.
func (h *HTCP) congestion(now clock.Mono) {
	h.lastCongestion = now
	h.hadCongestion = true
	h.maxRTT = 0
}

// OnRetransmissionTimeout behaves as Reno (ssthresh = cwnd/2, cwnd = 1 MSS)
// and forgets the adaptive state: the path may have changed, so β returns to
// 0.5 and the throughput history is dropped.
func (h *HTCP) OnRetransmissionTimeout(now clock.Mono) {
	h.lw.onRTO(h.lw.cwnd / 2)
	h.beta = htcpBetaMin
	h.lastThroughput = 0
	h.congestion(now)
}

// Window returns the congestion window in bytes.
func (h *HTCP) Window() ByteCount { return h.lw.window() }

// PacingRate spreads the window over SRTT (see PacingRate).
func (h *HTCP) PacingRate() Bandwidth { return h.lw.pacingRate() }

// CanSend reports whether bytesInFlight < cwnd.
func (h *HTCP) CanSend(bytesInFlight ByteCount) bool { return h.lw.canSend(bytesInFlight) }

// Metrics returns the window state; Signal is SignalNone (loss-based; RTT
// only tunes β).
func (h *HTCP) Metrics() Metrics { return h.lw.metrics() }
