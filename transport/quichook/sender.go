package quichook

import (
	"math"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/pacer"
	"github.com/fresh-udp/fresh/internal/recovery"
)

// sender is one peer's sending half: the controller, and the same ACK
// processing (RTT samples, screened one-way delays), loss detection,
// retransmission timer and pacer as fresh's own sessions (packages
// internal/recovery and internal/pacer) over shim sequence numbers. The numbers count datagrams, not QUIC packets: quic-go
// retransmits what it declares lost itself; these losses only feed the
// hook's controller. Not safe for concurrent use.
type sender struct {
	ctl    cc.Controller
	tr     *recovery.Tracker
	pace   pacer.Pacer
	lostCB recovery.LostFunc // s.onLost, bound once

	echo   bool  // an echo of the latest feedback is pending
	t3, t4 int64 // that echo

	acked, lost, spurious, rtos int64
	badRanges                   int64
	owdDiscarded                int64 // impossible one-way delays (recovery.AckResult.OWDDiscarded)
}

// newSender returns a sender for a peer that delays its feedback by at
// most maxAckDelay (the peer's Config.MaxAckDelay: the shim does not
// announce it, so both ends are taken to run the same one).
func newSender(ctl cc.Controller, maxAckDelay time.Duration) sender {
	s := sender{ctl: ctl, tr: recovery.NewWithAckDelay(maxAckDelay)}
	return s
}

// inFlight is the shimmed bytes neither acknowledged nor declared lost.
func (s *sender) inFlight() cc.ByteCount { return s.tr.InFlight(0) }

// onSent records a datagram of n bytes leaving at now and returns its
// sequence number.
func (s *sender) onSent(now clock.Mono, n int) uint64 {
	pn := s.tr.OnSent(now, cc.ByteCount(n), 0, 0, 0)
	s.ctl.OnPacketSent(now, pn, cc.ByteCount(n), s.inFlight())
	s.pace.OnSent(now, cc.ByteCount(n), s.ctl.PacingRate())
	return uint64(pn)
}

// canSend reports whether the controller lets the next datagram go at now:
// the window has room and the pacer's time has come.
func (s *sender) canSend(now clock.Mono) bool {
	return s.ctl.CanSend(s.inFlight()) && s.pace.Ready(now)
}

// onFeedback processes one feedback datagram arriving at now (wall wallUS).
// A range reaching a sequence number never sent cannot come from an honest
// receiver: it is dropped and counted, and the ranges below it still
// count, so that one bad range (a bug, or a datagram a receiver accepted
// from someone else) cannot make every later feedback unusable. It
// reports how many ranges it dropped. What the rest says goes through
// the session's own ACK path (recovery.Tracker.OnAck): the same RTT
// samples, loss detection and screening of the one-way delays.
func (s *sender) onFeedback(now clock.Mono, wallUS int64, f *feedback) (dropped int) {
	next := uint64(s.tr.Next())
	first := 0 // the ranges are descending: the bad ones come first
	for first < f.nRanges && f.ranges[first].hi >= next {
		first++
	}
	s.badRanges += int64(first)
	if first == f.nRanges && f.nRanges > 0 {
		return first // nothing usable: not even the echo is trusted
	}
	s.echo, s.t3, s.t4 = true, f.t3, wallUS
	if first == f.nRanges {
		return 0
	}
	var ranges [maxRanges]recovery.Range
	var samples [maxSamples]recovery.OWDSample
	ack := recovery.Ack{
		Ranges:  ranges[:f.nRanges-first],
		Samples: samples[:f.nSamples],
		Delay:   time.Duration(f.ackDelay) * time.Microsecond,
		Synced:  f.synced,
	}
	for i, r := range f.ranges[first:f.nRanges] { // below next: they fit a PacketNumber
		ranges[i] = recovery.Range{Lo: cc.PacketNumber(r.lo), Hi: cc.PacketNumber(r.hi)}
	}
	for i, o := range f.samples[:f.nSamples] {
		// A number beyond a PacketNumber matches no datagram.
		samples[i] = recovery.OWDSample{PN: cc.PacketNumber(min(o.seq, math.MaxInt64)), OWD: time.Duration(o.owd) * time.Microsecond}
	}
	res := s.tr.OnAck(now, &ack, &recovery.AckHandler{Acked: s.onAcked, Lost: s.lostFn()})
	s.acked += int64(res.Acked)
	s.spurious += int64(res.Spurious)
	s.owdDiscarded += int64(res.OWDDiscarded)
	return first
}

// onAcked gives the controller one datagram's sample.
func (s *sender) onAcked(now clock.Mono, _ *recovery.Packet, a cc.AckSample) { s.ctl.OnAck(now, a) }

func (s *sender) lostFn() recovery.LostFunc {
	if s.lostCB == nil {
		s.lostCB = s.onLost
	}
	return s.lostCB
}

// onLost tells the controller of one datagram declared lost.
func (s *sender) onLost(now clock.Mono, pn cc.PacketNumber, p *recovery.Packet) {
	s.lost++
	s.ctl.OnLoss(now, cc.LossEvent{PacketNumber: pn, Bytes: p.Bytes, SentTime: p.Sent, PriorInFlight: s.inFlight() + p.Bytes})
}

// deadline is when onTimer next has work (0: none).
func (s *sender) deadline() clock.Mono { return s.tr.NextTimer() }

// onTimer runs time-threshold loss detection and the retransmission
// timeout, as the session's timers do: the timeout declares everything in
// flight lost (the controller hears of each datagram, then of the timeout
// if it had any out), so that a peer that fell silent cannot hold the
// window shut, and reports true.
func (s *sender) onTimer(now clock.Mono) (rto bool) {
	s.tr.OnLossTimeout(now, s.lostFn())
	rto, had := s.tr.OnRTOTimeout(now, s.lostFn())
	if rto {
		s.rtos++
		if had.Has(0) {
			s.ctl.OnRetransmissionTimeout(now)
		}
	}
	return rto
}
