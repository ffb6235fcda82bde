package session

import (
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/recovery"
	"github.com/fresh-udp/fresh/internal/wire"
	"github.com/fresh-udp/fresh/qlog"
)

// tracing is a session's connection trace (qlog.Tracer): nil when off,
// so an untraced session pays one nil check per event site and 8 bytes.
// The session stays sans-I/O: the tracer is the driver's callback, given
// the session's own now, and whatever it does with the events (the
// transport's qlog file) is the driver's I/O.
type tracing struct {
	t     qlog.Tracer
	start clock.Mono // the trace's time 0

	pkt    qlog.Packet // the packet being described (Poll: before protection)
	ranges [wire.MaxAckRanges]qlog.AckRange

	metrics  qlog.Metrics // last reported
	state    string       // last congestion state reported
	offset   time.Duration
	offKnown bool
	synced   bool
	minOWD   time.Duration
	timeout  bool // losses are the retransmission timeout's (Timeout)
}

// clockOffsetStep is how far the clock-offset estimate must move before a
// new fresh:clock_offset event: the estimate is refitted on every sample
// and drifts with the clocks' skew by a few µs a second, which would
// otherwise make one event per packet.
const clockOffsetStep = 10 * time.Microsecond

// SetTracer starts (or, with nil, stops) tracing the session's events into
// t, times counted from now. The driver calls Close on t; the session
// never does.
func (s *Session) SetTracer(now clock.Mono, t qlog.Tracer) {
	if t == nil {
		s.trace = nil
		return
	}
	s.trace = &tracing{t: t, start: now}
}

// Tracer is the tracer SetTracer gave, or nil.
func (s *Session) Tracer() qlog.Tracer {
	if s.trace == nil {
		return nil
	}
	return s.trace.t
}

func (tr *tracing) at(now clock.Mono) time.Duration { return now.Sub(tr.start) }

// traceDescribe fills the trace's packet with the frame of a datagram
// poll built, still in plaintext (protection encrypts the body in place).
func (s *Session) traceDescribe(d []byte) {
	tr := s.trace
	tr.pkt = qlog.Packet{}
	h, body, err := wire.ParseHeader(d)
	if err != nil {
		tr.pkt.Frame.Type = "unknown"
		return
	}
	s.traceFrame(h, body, len(d), &tr.pkt.Frame)
}

// traceSent reports a datagram about to leave, d as sent (protected: its
// header is readable, and now carries the control packet number and the
// epoch protection gave it).
func (s *Session) traceSent(now clock.Mono, d []byte) {
	tr := s.trace
	if h, _, err := wire.ParseHeader(d); err == nil {
		tr.pkt.Type, tr.pkt.Number = s.tracePacketType(h.Type, h.Epoch), h.PN
	}
	tr.pkt.Length = len(d)
	tr.t.PacketSent(tr.at(now), &tr.pkt)
	s.traceMetrics(now) // bytes in flight moved
}

// traceReceived reports a datagram taken for this connection, with its
// plaintext body.
func (s *Session) traceReceived(now clock.Mono, h wire.Header, body []byte, size int) {
	tr := s.trace
	tr.pkt = qlog.Packet{Type: s.tracePacketType(h.Type, h.Epoch), Number: h.PN, Length: size}
	s.traceFrame(h, body, size, &tr.pkt.Frame)
	tr.t.PacketReceived(tr.at(now), &tr.pkt)
}

// tracePacketType is the qlog packet_type of a packet of type t under
// epoch: QUIC's names for the key levels, so qvis colours them as it
// does QUIC's. In plaintext mode everything after the Initial is "1RTT".
func (s *Session) tracePacketType(t wire.Type, epoch uint8) string {
	switch t {
	case wire.TypeInitial:
		return "initial"
	case wire.TypeRetry:
		return "retry"
	case wire.TypeStatelessReset:
		return "stateless_reset"
	case wire.TypeVersionNegotiation:
		return "version_negotiation"
	}
	switch epoch {
	case wire.EpochInitial:
		return "initial"
	case wire.EpochHandshake:
		return "handshake"
	case wire.EpochEarly:
		return "0RTT"
	case wire.EpochApp0, wire.EpochApp1:
		return "1RTT"
	}
	if s.sec == nil {
		return "1RTT"
	}
	return "initial" // unprotected with TLS: a Close to a plaintext peer
}

// traceFrame describes the one frame of a plaintext datagram.
func (s *Session) traceFrame(h wire.Header, body []byte, size int, f *qlog.Frame) {
	switch h.Type {
	case wire.TypeData:
		var d wire.Data
		f.Type = "stream"
		if wire.ParseData(body, &d) == nil {
			f.Offset, f.Length, f.Fin = d.Offset, len(d.Payload), h.Flags&wire.FlagFIN != 0
		}
	case wire.TypeCrypto:
		var c wire.Crypto
		f.Type = "crypto"
		if wire.ParseCrypto(body, &c) == nil {
			f.Offset, f.Length = c.Offset, len(c.Data)
		}
	case wire.TypeUpdate:
		var u wire.Update
		f.Type = "update"
		if wire.ParseUpdate(body, &u) == nil {
			f.Length = len(u.Payload)
		}
	case wire.TypeAck:
		var a wire.Ack
		f.Type = "ack"
		if wire.ParseAck(body, &a) == nil {
			f.AckDelay = time.Duration(a.DelayMicros) * time.Microsecond
			for i := range a.NRanges {
				s.trace.ranges[i] = qlog.AckRange{Smallest: a.Ranges[i].Smallest, Largest: a.Ranges[i].Largest}
			}
			f.AckRanges, f.OWDSamples = s.trace.ranges[:a.NRanges], a.NSamples
		}
	case wire.TypeClose:
		var c wire.Close
		f.Type = "connection_close"
		if wire.ParseClose(body, &c) == nil {
			f.ErrorCode, f.Reason = c.Code, string(c.Reason)
		}
	case wire.TypePing:
		f.Type = "ping"
	case wire.TypePathChallenge:
		f.Type = "path_challenge"
	case wire.TypePathResponse:
		f.Type = "path_response"
	case wire.TypeInitial:
		var in wire.Initial
		f.Type = "initial" // plaintext mode's: no TLS inside
		if wire.ParseInitial(body, size, &in) == nil && len(in.Crypto) > 0 {
			f.Type, f.Offset, f.Length = "crypto", in.CryptoOffset, len(in.Crypto)
		}
	case wire.TypeAccept:
		f.Type = "accept"
	case wire.TypeRetry:
		f.Type = "retry"
	case wire.TypeCommit:
		f.Type = "commit"
	case wire.TypeAckFrequency:
		f.Type = "ack_frequency" // the draft's qlog name
	case wire.TypeNewToken:
		f.Type = "new_token" // RFC 9000's frame, qlog's name
	case wire.TypePMTUProbe:
		f.Type, f.Length = "pmtu_probe", size
	default:
		f.Type = "unknown"
	}
}

// traceLost reports a packet of ours declared lost, with the rule that
// declared it (RFC 9002 §6.1: three later packets acknowledged, else
// the time threshold; or the retransmission timeout).
func (s *Session) traceLost(now clock.Mono, pn cc.PacketNumber, p *recovery.Packet) {
	tr := s.trace
	trigger := qlog.TriggerTimeout
	if !tr.timeout {
		// Later packets, as the tracker counts them: skipped numbers
		// are not packets.
		later := s.tr.LargestAcked() - pn
		for _, k := range s.tr.Skipped() {
			if k > pn && k <= s.tr.LargestAcked() {
				later--
			}
		}
		trigger = qlog.TriggerTime
		if later >= recovery.PacketThreshold {
			trigger = qlog.TriggerReordering
		}
	}
	typ := "1RTT"
	if s.sec != nil && s.sec.appWrite == nil && p.Kind == kindUpdate {
		typ = "0RTT" // an early update (early.go)
	}
	tr.t.PacketLost(tr.at(now), typ, int64(pn), trigger)
}

// traceMetrics reports the recovery metrics and the congestion state when
// they changed.
func (s *Session) traceMetrics(now clock.Mono) {
	tr := s.trace
	rtt := s.tr.RTT()
	m := qlog.Metrics{
		BytesInFlight: int64(s.tr.InFlight(kindData)),
		SmoothedRTT:   rtt.Smoothed(),
		MinRTT:        rtt.Min(),
		LatestRTT:     rtt.Latest(),
		RTTVariance:   rtt.Var(),
	}
	state := ""
	if s.ctl != nil { // not built yet: no window, nothing sent
		m.CongestionWindow = int64(s.ctl.Window())
		m.PacingRate = uint64(s.ctl.PacingRate())
		cm := s.ctl.Metrics()
		switch {
		case cm.InRecovery:
			state = "recovery"
		case cm.Mode == cc.ModeAvoidance:
			state = "congestion_avoidance"
		case cm.Mode != "":
			state = cm.Mode // slow_start, or the controller's own (owd, bbr)
		case cm.InSlowStart:
			state = cc.ModeSlowStart
		}
	}
	t := tr.at(now)
	if m != tr.metrics {
		tr.metrics = m
		tr.t.MetricsUpdated(t, m)
	}
	if state != tr.state && state != "" {
		tr.t.CongestionStateUpdated(t, tr.state, state)
		tr.state = state
	}
}

// traceClock reports the clock-offset estimate after a packet stamped
// sentUS (the peer's clock) arrived, when it moved by clockOffsetStep or
// its trust changed.
func (s *Session) traceClock(now clock.Mono, sentUS int64) {
	tr := s.trace
	var offset time.Duration
	var synced bool
	switch {
	case s.cfg.TrustPeerClock:
		synced = true
	case s.cfg.NoInband || s.inband == nil:
		return
	default:
		offset, synced = s.inband.Offset(clock.Stamp(sentUS)), s.inband.Synced()
	}
	d := offset - tr.offset
	if tr.offKnown && synced == tr.synced && d < clockOffsetStep && d > -clockOffsetStep {
		return
	}
	tr.offset, tr.synced, tr.offKnown = offset, synced, true
	tr.t.ClockOffset(tr.at(now), offset, synced, s.cfg.TrustPeerClock)
}

// traceOWD reports one OWD sample the peer returned for packet pn.
func (s *Session) traceOWD(now clock.Mono, pn cc.PacketNumber, owd time.Duration, synced bool) {
	tr := s.trace
	if synced && owd >= 0 && (tr.minOWD == 0 || owd < tr.minOWD) {
		tr.minOWD = owd
	}
	tr.t.OWDSample(tr.at(now), qlog.OWDSample{PacketNumber: int64(pn), OWD: owd, MinOWD: tr.minOWD, Synced: synced})
}
