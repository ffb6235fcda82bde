package cc

import (
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// ByteCount is an amount of data in bytes.
type ByteCount int64

// Bandwidth is a rate in bits per second.
type Bandwidth uint64

// Common rates.
const (
	BitPerSecond  Bandwidth = 1
	KbitPerSecond           = 1000 * BitPerSecond
	MbitPerSecond           = 1000 * KbitPerSecond
)

// BytesPerSecond returns b in bytes per second.
func (b Bandwidth) BytesPerSecond() float64 { return float64(b) / 8 }

// PacketNumber identifies one transmission. Packet numbers are never reused:
// retransmitted data is sent under a new number (as in QUIC, RFC 9000 §12.3),
// so every ACK sample is unambiguous (no Karn's-algorithm ambiguity).
type PacketNumber int64

// InvalidPacketNumber is smaller than every valid packet number.
const InvalidPacketNumber PacketNumber = -1

// DefaultMSS is the default maximum segment size in bytes: the payload of a
// 1280-byte IPv6 minimum-MTU datagram minus IP/UDP and our header, rounded
// down; IoT paths (6LoWPAN, tunnels, cellular) often cannot carry more.
const DefaultMSS ByteCount = 1200

// AckSample describes one newly acknowledged packet. Controllers are driven
// per acknowledged packet (byte counting, RFC 3465), not per ACK frame, so a
// delayed ACK covering two packets grows the window as two ACKs would.
type AckSample struct {
	PacketNumber PacketNumber
	Bytes        ByteCount  // size of the acknowledged packet
	SentTime     clock.Mono // when the packet was sent (sender clock)
	// RTT is the round-trip sample this ACK yields (ACK delay already
	// removed), or 0 if it yields none (e.g. not the largest acknowledged).
	RTT time.Duration
	// OWD is the forward one-way delay of this packet as stamped by the
	// receiver with its offset-corrected clock. Valid only if
	// OWDValid; it may be wrong in sign or size if clocks are bad, which is
	// what ClockSynced and the RTT cross-check are for.
	OWD      time.Duration
	OWDValid bool
	// ClockSynced is the receiver's (or local estimator's) statement that the
	// clock offset used for OWD is trustworthy. When false, delay-based
	// controllers fall back to RTT/2 (see package owd, "RTT fallback").
	ClockSynced bool
	// PriorInFlight is the bytes in flight before this ACK was processed; a
	// controller compares it with its window to tell whether the flow is
	// window-limited (RFC 7661) before growing.
	PriorInFlight ByteCount
}

// LossEvent describes one packet declared lost.
type LossEvent struct {
	PacketNumber  PacketNumber
	Bytes         ByteCount
	SentTime      clock.Mono
	PriorInFlight ByteCount // bytes in flight before the loss was removed
}

// DelaySignal names the delay measurement a controller currently acts on.
type DelaySignal uint8

const (
	SignalNone DelaySignal = iota // loss-based controller, or no sample yet
	SignalRTT                     // round-trip time (or RTT/2 fallback)
	SignalOWD                     // receiver-stamped one-way delay
)

func (s DelaySignal) String() string {
	switch s {
	case SignalRTT:
		return "rtt"
	case SignalOWD:
		return "owd"
	default:
		return "none"
	}
}

// Mode names shared by window controllers (Metrics.Mode).
const (
	ModeSlowStart = "slow_start"
	ModeAvoidance = "avoidance"
)

// Metrics is a controller's state snapshot for stats, traces and tests: what
// every controller has. A field a controller does not have is zero. State of
// one algorithm goes through that algorithm's own type (owd's delay analyzer:
// owd.Delays), so this struct stays one vocabulary for all of them.
type Metrics struct {
	Window      ByteCount     // congestion window
	Ssthresh    ByteCount     // slow-start threshold (0 = infinite / not yet set)
	PacingRate  Bandwidth     // pacing or sending rate
	InSlowStart bool          //
	InRecovery  bool          //
	SRTT        time.Duration // smoothed RTT (RFC 6298)
	MinRTT      time.Duration //
	Signal      DelaySignal   // which delay signal is in use
	// Mode is the controller's current mode, a short snake_case name
	// from a fixed set of constants (so reading it never allocates):
	// "slow_start" or "avoidance" for the loss-based baselines; owd and
	// bbr document their own. Recovery is orthogonal (InRecovery).
	Mode string
}

// Controller is the congestion/rate controller contract shared by every
// algorithm in fresh (shaped like quic-go's SendAlgorithm). It is a sans-I/O
// state machine: every event carries now, nothing inside reads a clock, starts
// a goroutine or touches a socket. Controllers are not safe for concurrent use;
// the driver (endpoint, simulator) serialises calls.
type Controller interface {
	// Name is the registry name ("cubic", "owd", ...).
	Name() string
	// OnPacketSent is called for every packet that counts toward bytes in
	// flight. bytesInFlight includes this packet.
	OnPacketSent(now clock.Mono, pn PacketNumber, bytes ByteCount, bytesInFlight ByteCount)
	// OnAck is called once per newly acknowledged packet, in packet-number order.
	OnAck(now clock.Mono, ack AckSample)
	// OnLoss is called once per packet declared lost.
	OnLoss(now clock.Mono, loss LossEvent)
	// OnRetransmissionTimeout is called when the RTO (or QUIC's persistent
	// congestion) fires: the path may have changed entirely.
	OnRetransmissionTimeout(now clock.Mono)
	// Window is the congestion window in bytes.
	Window() ByteCount
	// PacingRate is the rate at which to spread the window over an RTT.
	PacingRate() Bandwidth
	// CanSend reports whether another packet may be sent now.
	CanSend(bytesInFlight ByteCount) bool
	// Metrics returns a snapshot of the internal state. It must not allocate.
	Metrics() Metrics
}
