package recovery

import (
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// What an acknowledgement tells the sender, written once for every
// driver: the session (fresh's ACK frames, under package transport and
// the simulator) and the quic-go hook (its feedback datagrams) each decode
// their own wire into an Ack and hand it to OnAck, which takes the RTT
// sample, acknowledges the packets with each one's sample for its
// controller (the receiver's one-way delay screened by the OWD guard),
// then runs loss detection and re-arms the timer: RFC 9002 Appendix A.7's
// OnAckReceived. OnLossTimeout and OnRTOTimeout are its timers (A.9).

// Ack is one acknowledgement as the sender takes it.
type Ack struct {
	// Ranges are the acknowledged packet numbers, descending and disjoint
	// (both decoders refuse anything else): Ranges[0].Hi is the largest.
	// A range past what was sent is the caller's to refuse first: the
	// session closes the connection (an optimistic ACK), the hook drops
	// the range.
	Ranges []Range
	// Samples are the one-way delays the receiver measured, at most one
	// per packet, in the order it received the packets (mostly
	// ascending).
	Samples []OWDSample
	// Delay is the receiver's ACK delay: how long it held the largest
	// before acknowledging it (RFC 9000 §13.2.5).
	Delay time.Duration
	// Synced says the receiver measured Samples against an estimate of
	// the sender's clock offset it trusts (cc.AckSample.ClockSynced). Only
	// those are screened: the others carry the raw offset, which may be
	// anything, and controllers ignore them.
	Synced bool
}

// OWDSample is the one-way delay the receiver measured for one packet.
type OWDSample struct {
	PN  cc.PacketNumber
	OWD time.Duration
}

// AckHandler is the sender above a Tracker: what it does with what an ACK
// tells it. OnAck calls the funcs in the order of the fields; a nil one is
// skipped. Method values of a long-lived sender (s.acked) in a handler on
// the caller's stack cost no allocation: OnAck keeps none of them.
type AckHandler struct {
	// WindowKind is the kind of packet the window controller counts: its
	// bytes in flight before the ACK are every sample's PriorInFlight.
	WindowKind uint8
	// RTT is told the RTT sample the ACK's largest packet gave (the ACK
	// delay taken out where RFC 9002 §5.3 allows) once the tracker's
	// estimator has it, before any packet is acknowledged; only when that
	// packet was still in flight.
	RTT func(rtt time.Duration)
	// Acked is told of each packet the ACK newly acknowledges, in
	// packet-number order, with its controller's sample: the RTT on the
	// largest only, the OWD already screened.
	Acked func(now clock.Mono, p *Packet, a cc.AckSample)
	// Taken is called after the last packet and before loss detection:
	// for what depends on the whole ACK and must be settled before any
	// of its gaps is declared lost (the session's path MTU probe).
	Taken func(now clock.Mono)
	// Lost is told of each packet loss detection then declares lost.
	Lost LostFunc
}

// AckResult is what OnAck counted.
type AckResult struct {
	// Acked counts the packets newly acknowledged.
	Acked int
	// Spurious counts packets acknowledged after they were declared
	// lost, while their record was still kept (behind an older packet in
	// flight); each counts once.
	Spurious int
	// OWDDiscarded counts the samples the guard found impossible (see
	// owdGuard): not given to the controller.
	OWDDiscarded int
	// NewLargest says the ACK's largest, a packet no longer in flight
	// (a retransmission timeout gave it up), is above every one
	// acknowledged before (OnAckFrame): the peer got a packet sent after
	// all of those, so the path answers even when nothing in flight is
	// acknowledged. (A largest still in flight is simply acknowledged.)
	NewLargest bool
}

// OnAck processes one acknowledgement at now (RFC 9002 §5 and §6.1): the
// RTT sample from the largest packet, each newly acknowledged packet in
// packet-number order, loss detection, the retransmission timer re-armed
// when new data was acknowledged, and the finished packets dropped.
func (t *Tracker) OnAck(now clock.Mono, a *Ack, h *AckHandler) (res AckResult) {
	if len(a.Ranges) == 0 {
		return res
	}
	prior := t.InFlight(h.WindowKind)
	// Nothing at or past t.next was sent: a range reaching there (the
	// callers refuse those first) acknowledges nothing more, however far
	// it claims to go.
	largest := min(a.Ranges[0].Hi, t.next-1)
	var rtt time.Duration
	if p := t.Get(largest); p != nil && p.State == InFlight {
		rtt = now.Sub(p.Sent)
		if m := t.rtt.Min(); m == 0 || rtt-a.Delay >= m { // RFC 9002 §5.3
			rtt -= a.Delay
		}
		t.rtt.Update(rtt)
		if h.RTT != nil {
			h.RTT(rtt)
		}
	}
	var look owdLookup
	for i := len(a.Ranges) - 1; i >= 0; i-- {
		r := a.Ranges[i]
		for pn := max(r.Lo, t.base); pn <= min(r.Hi, largest); pn++ {
			p, ok := t.Ack(pn)
			if !ok {
				if q := t.Get(pn); q != nil && q.State == Lost {
					q.State = Acked
					res.Spurious++
				}
				continue
			}
			res.Acked++
			s := cc.AckSample{PacketNumber: pn, Bytes: p.Bytes, SentTime: p.Sent, PriorInFlight: prior, ClockSynced: a.Synced}
			if pn == largest {
				s.RTT = rtt
			}
			s.OWD, s.OWDValid = look.find(a.Samples, pn)
			if s.OWDValid && a.Synced && !t.owd.check(s.OWD, now.Sub(p.Sent), t.rtt.Min()) {
				s.OWD, s.OWDValid = 0, false
				res.OWDDiscarded++
			}
			if h.Acked != nil {
				h.Acked(now, p, s)
			}
		}
	}
	res.NewLargest = t.OnAckFrame(largest)
	if h.Taken != nil {
		h.Taken(now)
	}
	t.DetectLost(now, h.Lost)
	if res.Acked > 0 {
		t.ArmRTO(now)
	}
	t.Compact()
	return res
}

// owdLookup finds a packet's sample among an ACK's: the first one for its
// number, as a scan from the start would, in one comparison in the usual
// case. The samples come in arrival order, mostly ascending, and OnAck
// asks in ascending order, each number once, so every sample before next
// is for a number below the one asked (found, or passed over as below an
// earlier one) and cannot be its first.
type owdLookup struct {
	next  int
	last  cc.PacketNumber
	asked bool
}

func (l *owdLookup) find(s []OWDSample, pn cc.PacketNumber) (time.Duration, bool) {
	if l.asked && pn <= l.last {
		l.next = 0 // not ascending after all: look from the start
	}
	l.last, l.asked = pn, true
	for l.next < len(s) && s[l.next].PN < pn {
		l.next++ // below every number still to be asked: nobody's
	}
	if l.next < len(s) && s[l.next].PN == pn {
		l.next++
		return s[l.next-1].OWD, true
	}
	for _, o := range s[l.next:] { // arrived ahead of its place
		if o.PN == pn {
			return o.OWD, true
		}
	}
	return 0, false
}

// Kinds is a set of packet kinds (bit k for kind k; MaxKinds fits).
type Kinds uint8

// Has reports whether kind is in the set.
func (k Kinds) Has(kind uint8) bool { return k&(1<<kind) != 0 }

// OnLossTimeout runs loss detection if the time threshold's deadline
// (LossTime) has passed at now, telling lost of each packet it declares
// lost, and reports whether it did.
func (t *Tracker) OnLossTimeout(now clock.Mono, lost LostFunc) bool {
	if t.lossTime == 0 || now.Before(t.lossTime) {
		return false
	}
	t.DetectLost(now, lost)
	t.Compact()
	return true
}

// OnRTOTimeout fires the retransmission timeout if its deadline (RTOAt)
// has passed at now: every packet in flight is declared lost (lost is
// told of each, as of any loss) and the timer backs off (OnRTO). It
// reports whether it fired, and the kinds that had bytes in flight: the
// caller tells their controllers OnRetransmissionTimeout, and only
// theirs, since a controller with nothing out has nothing to back off
// from (the timer outlives its flight when loss detection declared the
// last packets lost).
func (t *Tracker) OnRTOTimeout(now clock.Mono, lost LostFunc) (fired bool, had Kinds) {
	if t.rtoAt == 0 || now.Before(t.rtoAt) {
		return false, 0
	}
	for k, b := range t.inFlight {
		if b > 0 {
			had |= 1 << k
		}
	}
	t.OnRTO(now, lost)
	return true, had
}
