package quichook

import (
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/pacer"
	"github.com/fresh-udp/fresh/internal/recovery"
)

// sender is one peer's sending half: the controller, and the same loss
// detection, retransmission timer and pacer as fresh's own sessions
// (packages internal/recovery and internal/pacer) over shim sequence
// numbers. The numbers count datagrams, not QUIC packets: quic-go
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
}

// newSender returns a sender for a peer that delays its feedback by at
// most maxAckDelay (the peer's Config.FeedbackDelay: the shim does not
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
// reports how many ranges it dropped.
func (s *sender) onFeedback(now clock.Mono, wallUS int64, f *feedback) (dropped int) {
	next := s.tr.Next()
	first := 0 // the ranges are descending: the bad ones come first
	for first < f.nRanges && cc.PacketNumber(f.ranges[first].hi) >= next {
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
	largest := cc.PacketNumber(f.ranges[first].hi)
	prior := s.inFlight()
	var rtt time.Duration
	if p := s.tr.Get(largest); p != nil && p.State == recovery.InFlight {
		rtt = now.Sub(p.Sent)
		delay := time.Duration(f.ackDelay) * time.Microsecond
		if m := s.tr.RTT().Min(); m == 0 || rtt-delay >= m { // RFC 9002 §5.3
			rtt -= delay
		}
		if rtt > 0 {
			s.tr.RTT().Update(rtt)
		}
	}
	acked := false
	cursor := 0 // f.sample's
	for i := f.nRanges - 1; i >= first; i-- {
		r := f.ranges[i]
		for pn := max(cc.PacketNumber(r.lo), s.tr.Base()); pn <= cc.PacketNumber(r.hi); pn++ {
			p, ok := s.tr.Ack(pn)
			if !ok {
				if q := s.tr.Get(pn); q != nil && q.State == recovery.Lost {
					s.spurious++
					q.State = recovery.Acked
				}
				continue
			}
			acked = true
			s.acked++
			a := cc.AckSample{PacketNumber: pn, Bytes: p.Bytes, SentTime: p.Sent, PriorInFlight: prior, ClockSynced: f.synced}
			if pn == largest {
				a.RTT = rtt
			}
			if o, ok := f.sample(uint64(pn), &cursor); ok {
				a.OWD, a.OWDValid = time.Duration(o.owd)*time.Microsecond, true
			}
			s.ctl.OnAck(now, a)
		}
	}
	s.tr.DetectLost(now, s.lostFn())
	if acked {
		s.tr.ArmRTO(now)
	}
	s.tr.Compact()
	return first
}

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

// countLost counts a datagram the retransmission timeout declared lost:
// the controller hears of the timeout once (OnRetransmissionTimeout), not
// per datagram.
func (s *sender) countLost(clock.Mono, cc.PacketNumber, *recovery.Packet) { s.lost++ }

// deadline is when onTimer next has work (0: none).
func (s *sender) deadline() clock.Mono { return s.tr.NextTimer() }

// onTimer runs time-threshold loss detection and the retransmission
// timeout. The timeout declares everything in flight gone, so that a peer
// that fell silent cannot hold the window shut, and reports true.
func (s *sender) onTimer(now clock.Mono) (rto bool) {
	if t := s.tr.LossTime(); t != 0 && !now.Before(t) {
		s.tr.DetectLost(now, s.lostFn())
	}
	if t := s.tr.RTOAt(); t != 0 && !now.Before(t) {
		s.tr.OnRTO(now, s.countLost)
		s.rtos++
		s.ctl.OnRetransmissionTimeout(now)
		rto = true
	}
	s.tr.Compact()
	return rto
}
