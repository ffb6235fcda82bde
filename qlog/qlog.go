// Package qlog defines the events of a fresh connection trace (Tracer) and
// writes them as qlog, the structured event log of
// draft-ietf-quic-qlog-main-schema, in its JSON-SEQ form (RFC 7464), which
// qvis (https://qvis.quictools.info) reads and draws: a sequence diagram
// of the packets each way, and the congestion window, bytes in flight and
// RTTs over time.
//
// The event names and fields are those of draft-ietf-quic-qlog-quic-events
// where a QUIC event fits (transport:packet_sent, transport:packet_received,
// recovery:metrics_updated, recovery:packet_lost,
// recovery:congestion_state_updated), and fresh's own in the "fresh"
// category where none does (fresh:owd_sample, fresh:clock_offset,
// fresh:update_age). A fresh datagram carries exactly one frame, so every
// packet event lists one frame; its frame_type is QUIC's name where the
// frame does QUIC's job ("stream", "ack", "ping", "crypto",
// "connection_close", "path_challenge", "path_response") and fresh's
// otherwise ("update", "accept", "commit", "pmtu_probe", "retry", and
// "initial" for a plaintext Initial; a TLS Initial is "crypto").
//
// The connection's sans-I/O session calls the Tracer with the time since
// the trace began on the connection's monotonic clock; the transport
// (transport.Config.Tracer) opens one per connection and closes it when the
// connection ends. DirTracer writes one file per connection into a
// directory, FromEnv does so into $QLOGDIR as quic-go does.
//
// This package imports only the standard library.
package qlog

import (
	"net"
	"time"
)

// Role is a trace's vantage point.
type Role string

// The two vantage points of a connection trace.
const (
	Client Role = "client"
	Server Role = "server"
)

// ConnInfo describes the connection a trace is opened for.
type ConnInfo struct {
	Role Role
	// ConnID is the client's connection ID, the one every packet to the
	// client carries: the same at both ends, so the two traces of a
	// connection share it (the qlog ODCID and group_id).
	ConnID uint64
	// Remote is the peer's address when the connection started.
	Remote net.Addr
	// Start is the wall-clock time the trace began: the qlog
	// reference_time, from which every event's time is counted.
	Start time.Time
}

// Packet is one datagram sent or received.
type Packet struct {
	// Type is the qlog packet_type, named after the keys that protect
	// it: "initial" (an Initial, or with TLS any packet sent before
	// keys), "handshake", "0RTT", "1RTT" (also every packet after the
	// Initial in plaintext mode), "retry", "stateless_reset" or
	// "version_negotiation".
	Type string
	// Number is the packet number. fresh numbers stream, update and probe
	// packets in one space and, with TLS, its control packets (ACK,
	// handshake, close) in a second; in plaintext control packets carry 0.
	Number int64
	// Length is the datagram's size in bytes, as on the wire.
	Length int
	Frame  Frame
}

// Frame is a packet's one frame.
type Frame struct {
	// Type is the qlog frame_type (see the package doc).
	Type string
	// Offset, Length and Fin describe a stream or crypto frame's bytes
	// (Length alone an update's payload).
	Offset int64
	Length int
	Fin    bool
	// AckDelay and AckRanges are an ACK's; AckRanges is valid only during
	// the call. OWDSamples counts the one-way delays the ACK carries.
	AckDelay   time.Duration
	AckRanges  []AckRange
	OWDSamples int
	// ErrorCode and Reason are a close's.
	ErrorCode uint32
	Reason    string
}

// AckRange is an acknowledged range of packet numbers, both ends included.
type AckRange struct{ Smallest, Largest int64 }

// Metrics is the sender's recovery state: qlog's recovery:metrics_updated.
// A zero field is unknown (no controller built yet, no RTT sample yet).
type Metrics struct {
	CongestionWindow int64 // bytes
	BytesInFlight    int64 // stream bytes in flight, the window's measure
	SmoothedRTT      time.Duration
	MinRTT           time.Duration
	LatestRTT        time.Duration
	RTTVariance      time.Duration
	PacingRate       uint64 // bits per second
}

// Loss triggers (qlog's packet_lost trigger).
const (
	TriggerReordering = "reordering_threshold" // 3 later packets acknowledged (RFC 9002 §6.1.1)
	TriggerTime       = "time_threshold"       // older than 9/8 RTT (RFC 9002 §6.1.2)
	TriggerTimeout    = "pto_expired"          // the retransmission timeout fired
)

// OWDSample is one forward one-way delay the peer measured for a packet
// of ours and returned on its ACK (fresh:owd_sample).
type OWDSample struct {
	PacketNumber int64
	OWD          time.Duration
	// MinOWD is the smallest trusted sample of the connection so far.
	MinOWD time.Duration
	// Synced says the peer trusted its clock-offset estimate for it; an
	// unsynced sample carries the clocks' raw offset.
	Synced bool
}

// Tracer receives one connection's events, in order. t is the time since
// ConnInfo.Start on the connection's monotonic clock. Calls are
// serialised by the connection, and a Tracer must not call back into it.
// Close is called once, when the connection has ended.
type Tracer interface {
	PacketSent(t time.Duration, p *Packet)
	PacketReceived(t time.Duration, p *Packet)
	// PacketLost: a packet of ours declared lost, with the qlog packet
	// type, its number and the trigger (TriggerReordering, …).
	PacketLost(t time.Duration, packetType string, pn int64, trigger string)
	// MetricsUpdated is called when any field changed.
	MetricsUpdated(t time.Duration, m Metrics)
	// CongestionStateUpdated: the controller moved between states
	// ("slow_start", "congestion_avoidance", "recovery", or a
	// controller's own mode name such as BBR's "probe_bw").
	CongestionStateUpdated(t time.Duration, old, new string)
	OWDSample(t time.Duration, s OWDSample)
	// ClockOffset is the estimate of the peer's clock offset (our clock
	// minus the peer's, from the in-band estimator) when it moved or its
	// trust changed; trusted says it comes from Config.TrustPeerClock.
	ClockOffset(t time.Duration, offset time.Duration, synced, trusted bool)
	// UpdateAge: an update delivered, with its packet number, its age on
	// arrival (now − its generation time, in our clock) and whether it
	// came in 0-RTT.
	UpdateAge(t time.Duration, pn int64, age time.Duration, early bool)
	Close() error
}
