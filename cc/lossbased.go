package cc

import "math"

// This file holds the bookkeeping the four baselines share: a window in bytes
// that keeps its fractional part, slow start with byte counting, and the
// RFC 6582 "recover" rule for telling a new congestion event from more losses
// of an old one, expressed with QUIC-style packet numbers.

// lossWindow is the state every loss-reacting baseline (Reno, Cubic, HTCP,
// RTTDelay) embeds. It is not a Controller by itself: the algorithms decide
// how much to grow in congestion avoidance and how much to cut on loss; this
// type decides whether they may.
type lossWindow struct {
	mss ByteCount // bytes; the unit of every "packet" below

	// cwnd and ssthresh are in bytes. They are float64 so that a per-ACK
	// increase of MSS·acked/cwnd (often well below one byte) accumulates
	// instead of being truncated away; float64 holds every integer byte
	// count below 2^53 exactly, far beyond any window.
	cwnd     float64
	ssthresh float64 // +Inf until the first congestion event (RFC 5681 §3.1)

	largestSent PacketNumber // largest packet number passed to onSent

	// recover is RFC 6582's "recover" variable in packet numbers: the
	// largest packet number sent when the last congestion event began
	// (InvalidPacketNumber before any). A loss of a packet numbered
	// <= recover was sent before that reduction and belongs to the same
	// event, so it never reduces the window again (RFC 6582 §3.2 steps 1–2,
	// RFC 9002 §7.3.2) — also after recovery has ended.
	recover PacketNumber
	// inRecovery is true from a congestion event until the first ACK of a
	// packet numbered > recover (RFC 6582's "full acknowledgment").
	inRecovery bool
	// rtoBackoff is true from a retransmission timeout until the next ACK:
	// a further timeout in between is a backoff of the same event and
	// leaves ssthresh alone (RFC 5681 §3.1: ssthresh is held across
	// repeated retransmissions of one segment).
	rtoBackoff bool

	// useHyStart runs HyStart++ (RFC 9406) in the initial slow start; it is
	// cleared at the first congestion event, since later slow starts stop at
	// the ssthresh that event set (RFC 9406 §4.3, last paragraph).
	useHyStart bool
	hystart    hystart

	rtt RTTStats
}

// ackVerdict says what one ACK may do to the window.
type ackVerdict uint8

const (
	// ackInRecovery: a partial ACK (a packet sent before the congestion
	// event was acknowledged). No growth: the window was just cut for the
	// very packets these ACKs belong to (RFC 9002 §7.3.2).
	ackInRecovery ackVerdict = iota
	// ackAppLimited: the flow was not using its window (RFC 7661 §4.1);
	// growing it now would license a burst nobody has measured.
	ackAppLimited
	// ackGrow: outside recovery and window-limited; the algorithm grows.
	ackGrow
)

// newLossWindow returns the shared state for MSS mss (DefaultMSS if <= 0) and
// initial window iw bytes (InitialWindowPackets·mss if <= 0, never below the
// MinWindowPackets floor).
func newLossWindow(mss, iw ByteCount) lossWindow {
	mss, iw = sizeDefaults(mss, iw)
	w := lossWindow{
		mss:         mss,
		ssthresh:    math.Inf(1),
		largestSent: InvalidPacketNumber,
		recover:     InvalidPacketNumber,
		hystart:     newHystart(),
	}
	w.cwnd = math.Max(float64(iw), w.minWindow())
	return w
}

// minWindow is the floor in bytes after a loss: 2 packets (MinWindowPackets).
func (w *lossWindow) minWindow() float64 { return float64(MinWindowPackets * w.mss) }

// window is cwnd in whole bytes (the fraction is kept, not reported).
func (w *lossWindow) window() ByteCount { return ByteCount(w.cwnd) }

// inSlowStart is RFC 5681 §3.1's test: cwnd < ssthresh.
func (w *lossWindow) inSlowStart() bool { return w.cwnd < w.ssthresh }

// onSent records the largest packet number sent, from which recover is taken.
func (w *lossWindow) onSent(pn PacketNumber) {
	if pn > w.largestSent {
		w.largestSent = pn
	}
}

// onAck folds the RTT sample in, ends recovery on a full ACK and says whether
// the window may grow. The ACK that ends recovery already grows the window:
// it acknowledges a packet sent under the reduced window, so that window is
// working (unlike TCP, there is no inflated window to deflate first).
func (w *lossWindow) onAck(ack AckSample) ackVerdict {
	w.rtt.Update(ack.RTT)
	w.rtoBackoff = false
	if w.inRecovery {
		if ack.PacketNumber <= w.recover {
			return ackInRecovery
		}
		w.inRecovery = false
	}
	if w.useHyStart && w.inSlowStart() &&
		w.hystart.onAck(ack.PacketNumber, ack.RTT, w.largestSent) {
		// CSS is over: congestion avoidance from the current window.
		w.ssthresh = w.cwnd
		w.useHyStart = false
	}
	if !WindowLimited(ack.PriorInFlight, w.window(), w.mss, w.inSlowStart()) {
		return ackAppLimited
	}
	return ackGrow
}

// slowStart grows cwnd by the bytes acknowledged (RFC 5681 §3.1 with byte
// counting, RFC 3465; ACKs arrive per packet, so the L = 2·SMSS cap of
// RFC 3465 §2.2 never binds), without overshooting ssthresh. The rest of an
// ACK that crosses ssthresh is dropped (at most one packet's worth, once).
//
// In HyStart++'s Conservative Slow Start the increase is a quarter of that
// (RFC 9406 §4.3).
func (w *lossWindow) slowStart(acked ByteCount) {
	inc := float64(acked)
	if w.useHyStart && w.hystart.inCSS {
		inc /= hystartCSSGrowthDivisor
	}
	w.cwnd = math.Min(w.cwnd+inc, w.ssthresh)
}

// onCongestion reports whether the loss of packet pn is a new congestion
// event, and if so enters recovery with recover = the largest packet number
// sent so far (RFC 6582 §3.2 step 2). The caller then cuts the window.
func (w *lossWindow) onCongestion(pn PacketNumber) bool {
	if pn <= w.recover {
		return false
	}
	w.inRecovery = true
	w.recover = max(w.largestSent, pn)
	w.useHyStart = false
	return true
}

// reduce sets ssthresh to newSsthresh bytes and cwnd to ssthresh, both floored
// at MinWindowPackets (RFC 5681 §3.1 eq. 4: ssthresh >= 2·SMSS).
func (w *lossWindow) reduce(newSsthresh float64) {
	w.ssthresh = math.Max(newSsthresh, w.minWindow())
	w.cwnd = w.ssthresh
}

// onRTO collapses cwnd to the loss window of one packet (RFC 5681 §3.1:
// LW = 1 SMSS) and reports whether this timeout is a new congestion event.
// Only then is ssthresh set to newSsthresh (floored at 2 packets). A timeout
// is not a new event when it repeats one that had no ACK since (RFC 5681
// §3.1) or fires during recovery: that event already cut ssthresh once, and
// halving the already-halved window again would punish one episode twice
// (RFC 9002 §7.6.2 likewise only collapses cwnd on persistent congestion).
// Recovery ends, and recover moves to the largest packet sent, so the losses
// the timeout implies for everything outstanding reduce nothing further
// (RFC 6582 §3.2 step 6, retransmit timeouts).
func (w *lossWindow) onRTO(newSsthresh float64) bool {
	newEvent := !w.rtoBackoff && !w.inRecovery
	w.useHyStart = false
	if newEvent {
		w.ssthresh = math.Max(newSsthresh, w.minWindow())
	}
	w.rtoBackoff = true
	w.cwnd = float64(w.mss)
	w.inRecovery = false
	w.recover = max(w.recover, w.largestSent)
	return newEvent
}

// pacingRate is PacingRate of the current window over SRTT.
func (w *lossWindow) pacingRate() Bandwidth {
	return PacingRate(w.window(), w.rtt.Smoothed(), w.inSlowStart())
}

// canSend is the window test every baseline uses.
func (w *lossWindow) canSend(bytesInFlight ByteCount) bool {
	return bytesInFlight < w.window()
}

// metrics fills the fields every baseline shares.
func (w *lossWindow) metrics() Metrics {
	var ssthresh ByteCount
	if !math.IsInf(w.ssthresh, 1) {
		ssthresh = ByteCount(w.ssthresh)
	}
	mode := ModeAvoidance
	if w.inSlowStart() {
		mode = ModeSlowStart
	}
	return Metrics{
		Window:      w.window(),
		Ssthresh:    ssthresh,
		PacingRate:  w.pacingRate(),
		InSlowStart: w.inSlowStart(),
		Mode:        mode,
		InRecovery:  w.inRecovery,
		SRTT:        w.rtt.Smoothed(),
		MinRTT:      w.rtt.Min(),
	}
}
