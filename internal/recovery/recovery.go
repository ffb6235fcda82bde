// Package recovery is the sender's side of acknowledgements: what an ACK
// tells it (OnAck: RTT samples, the packets acknowledged with their
// controller samples, the receiver's one-way delays screened), loss
// detection and the retransmission timer. It is the one copy of these
// for every driver: the session (internal/session, which transport runs
// over UDP and bench/sim in virtual time) and the quic-go hook
// (transport/quichook) over its shim's sequence numbers. It is sans-I/O:
// every call carries now.
//
// Packet numbers are never reused (a retransmission is a new packet), so an
// ACK names exactly one transmission and RTT samples are unambiguous.
//
//   - Loss (RFC 9002 §6.1): a packet below the largest acknowledged one is
//     lost once 3 later packets are acknowledged (kPacketThreshold) or it is
//     older than 9/8·max(SRTT, latest RTT) (kTimeThreshold), at least 1 ms.
//   - RTO (RFC 6298 §2, §5): SRTT + max(4·RTTVAR, 1 ms) + the peer's
//     maximum ACK delay, at least 200 ms (Linux's TCP_RTO_MIN rather than
//     RFC 6298's 1 s, as deployed stacks do), 1 s before the first sample,
//     doubled per expiry (backoff) up to MaxBackoffRTO (2 s) or the
//     un-backed-off RTO if that is longer, and never past 60 s; restarted
//     when an ACK
//     acknowledges new data. On expiry every packet in flight is declared
//     lost. The ACK-delay term is RFC 9002 §6.2.1's: RTT samples have the
//     receiver's ACK delay taken out, so on a steady path (RTTVAR → 0) a
//     timer of SRTT + 4·RTTVAR fires before the delayed ACK of a lone packet
//     arrives — a spurious timeout that collapses the window. The 1 ms floor
//     is RFC 9002's kGranularity.
package recovery

import (
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// Constants of RFC 9002 §6.1 and RFC 6298.
const (
	PacketThreshold  = 3
	timeThresholdNum = 9
	timeThresholdDen = 8
	minLossDelay     = time.Millisecond
	MinRTO           = 200 * time.Millisecond
	InitialRTO       = time.Second
	MaxRTO           = 60 * time.Second
	// MaxBackoffRTO bounds the backoff: once the doubling reaches 2 s (or
	// the un-backed-off RTO, if longer) a silent path is probed at that
	// interval. RFC 6298 §5.5 doubles towards 60 s so that retransmissions
	// do not add to a congested path; what goes out on expiry here is one
	// packet (the window collapses), and a probe every 2 s costs nothing,
	// while a 60 s cap leaves a device silent for up to half a minute
	// after its link came back (a 10 s outage: the next probe 2.6 s after
	// its end at most, against 6.4 s with the full doubling).
	MaxBackoffRTO = 2 * time.Second
	// initialRTT stands in for the RTT before the first sample in the time
	// threshold (RFC 9002 §6.2.2's kInitialRtt).
	initialRTT = 333 * time.Millisecond
	// granularity is RFC 9002's kGranularity: the smallest variance term.
	granularity = time.Millisecond
	// DefaultMaxAckDelay is the peer's ACK delay assumed by New (RFC 9000
	// §18.2's default max_ack_delay).
	DefaultMaxAckDelay = 25 * time.Millisecond
)

// State of a sent packet.
type State uint8

const (
	InFlight State = iota
	Acked
	Lost
	// Skipped: a packet number never sent (see skip.go), tracked so that
	// packet numbers stay the index of the packets slice.
	Skipped
)

// MaxKinds is how many packet kinds the tracker keeps separate in-flight
// counts for (stream data, updates, probes, …).
const MaxKinds = 8

// Packet is what the tracker remembers of one sent packet. Kind, Offset and
// Len are the caller's: what the packet carried.
type Packet struct {
	Sent   clock.Mono
	Bytes  cc.ByteCount
	State  State
	Kind   uint8
	Flags  uint8 // the caller's, e.g. "carried FIN"
	Offset int64
	Len    int
}

// Tracker keeps one sender's packets in packet-number order.
type Tracker struct {
	base     cc.PacketNumber // packet number of pkts[0]
	pkts     []Packet
	next     cc.PacketNumber
	inFlight [MaxKinds]cc.ByteCount

	rtt          cc.RTTStats
	maxAckDelay  time.Duration
	largestAcked cc.PacketNumber
	lossTime     clock.Mono // time-threshold timer; 0 = unset
	rtoAt        clock.Mono // 0 = unset
	backoff      uint
	skip         skipper
	owd          owdGuard // screens the receiver's one-way delays (OnAck)
}

// New returns an empty tracker whose first packet number is 0, for a peer
// that delays ACKs by at most DefaultMaxAckDelay.
func New() *Tracker { return NewWithAckDelay(DefaultMaxAckDelay) }

// NewWithAckDelay is New for a peer whose maximum ACK delay is maxAckDelay.
func NewWithAckDelay(maxAckDelay time.Duration) *Tracker {
	return &Tracker{largestAcked: cc.InvalidPacketNumber, maxAckDelay: max(maxAckDelay, 0)}
}

// MaxAckDelay is the peer's maximum ACK delay the retransmission timeout
// allows for.
func (t *Tracker) MaxAckDelay() time.Duration { return t.maxAckDelay }

// SetMaxAckDelay changes it: a sender that asked its peer for another
// delay (an ACK_FREQUENCY frame, draft-ietf-quic-ack-frequency §7) allows
// for the larger of the old and the new until the peer acknowledged the
// request, then for the new one.
func (t *Tracker) SetMaxAckDelay(d time.Duration) { t.maxAckDelay = max(d, 0) }

// OnSent registers a new packet and returns its number. kind must be below
// MaxKinds.
func (t *Tracker) OnSent(now clock.Mono, bytes cc.ByteCount, kind uint8, offset int64, n int) cc.PacketNumber {
	if t.skip.due() {
		t.skip.add(t.next, t.base)
		t.pkts = append(t.pkts, Packet{Sent: now, State: Skipped})
		t.next++
	}
	pn := t.next
	t.next++
	t.pkts = append(t.pkts, Packet{Sent: now, Bytes: bytes, Kind: kind, Offset: offset, Len: n})
	t.inFlight[kind] += bytes
	if t.rtoAt == 0 {
		t.rtoAt = now.Add(t.RTO())
	}
	return pn
}

// Next is the packet number the next OnSent returns.
func (t *Tracker) Next() cc.PacketNumber { return t.next }

// Get returns the record of pn, or nil if it is no longer (or never was)
// tracked.
func (t *Tracker) Get(pn cc.PacketNumber) *Packet {
	i := int(pn - t.base)
	if pn < t.base || i >= len(t.pkts) {
		return nil
	}
	return &t.pkts[i]
}

// Base is the smallest packet number still tracked; ACK processing can
// skip everything below it.
func (t *Tracker) Base() cc.PacketNumber { return t.base }

// InFlight is the bytes in flight of one kind.
func (t *Tracker) InFlight(kind uint8) cc.ByteCount { return t.inFlight[kind] }

// TotalInFlight is the bytes in flight of every kind.
func (t *Tracker) TotalInFlight() cc.ByteCount {
	var s cc.ByteCount
	for _, b := range t.inFlight {
		s += b
	}
	return s
}

// RTT gives access to the RTT estimators the timers use.
func (t *Tracker) RTT() *cc.RTTStats { return &t.rtt }

// LargestAcked is the largest packet number acknowledged so far.
func (t *Tracker) LargestAcked() cc.PacketNumber { return t.largestAcked }

// Compact drops finished packets from the front.
func (t *Tracker) Compact() {
	i := 0
	for i < len(t.pkts) && t.pkts[i].State != InFlight {
		i++
	}
	if i > 0 {
		n := copy(t.pkts, t.pkts[i:])
		t.pkts = t.pkts[:n]
		t.base += cc.PacketNumber(i)
	}
}

// RTO is the current retransmission timeout, backoff included.
func (t *Tracker) RTO() time.Duration {
	r := InitialRTO
	if t.rtt.HasSample() {
		r = max(t.rtt.Smoothed()+max(4*t.rtt.Var(), granularity)+t.maxAckDelay, MinRTO)
	}
	base := r
	r <<= t.backoff
	return min(r, max(base, MaxBackoffRTO), MaxRTO)
}

func (t *Tracker) lossDelay() time.Duration {
	d := max(t.rtt.Smoothed(), t.rtt.Latest())
	if !t.rtt.HasSample() {
		d = initialRTT
	}
	return max(d*timeThresholdNum/timeThresholdDen, minLossDelay)
}

// Ack moves pn to acknowledged; it reports false if pn was not in flight.
func (t *Tracker) Ack(pn cc.PacketNumber) (*Packet, bool) {
	p := t.Get(pn)
	if p == nil || p.State != InFlight {
		return nil, false
	}
	p.State = Acked
	t.inFlight[p.Kind] -= p.Bytes
	if pn > t.largestAcked {
		t.largestAcked = pn
	}
	return p, true
}

// OnAckFrame notes the largest packet number an ACK frame acknowledges,
// whatever the packet's state here, and reports whether it is larger than
// any acknowledged before: the peer received a packet sent after all of
// those. RFC 9002 (Appendix A.7) updates largest_acked_packet from every
// ACK frame in the same way, before it looks for newly acknowledged
// packets. That matters after a retransmission timeout: its packets are
// all declared lost (RFC 6298 §5.4 style, unlike RFC 9002's PTO, which
// declares nothing), so when a fade ends and the packets it held arrive,
// their ACKs acknowledge nothing in flight, and yet they are the path
// answering (the caller restarts the timer with ArmRTO).
func (t *Tracker) OnAckFrame(largest cc.PacketNumber) bool {
	if largest <= t.largestAcked {
		return false
	}
	t.largestAcked = largest
	return true
}

// DetectLost calls lost for every packet declared lost at now and re-arms
// the time-threshold timer (RFC 9002 §6.1). The packet threshold counts
// packets sent after a packet, not packet numbers: a skipped number is
// not a packet that arrived before it, and counting it would declare
// packets lost after 2 reordered ones.
func (t *Tracker) DetectLost(now clock.Mono, lost LostFunc) {
	t.lossTime = 0
	if t.largestAcked == cc.InvalidPacketNumber {
		return
	}
	delay := t.lossDelay()
	sk := t.skip.skipped
	k, kLargest := t.skip.first(t.base), t.skip.first(t.largestAcked)
	for i := range t.pkts {
		pn := t.base + cc.PacketNumber(i)
		if pn >= t.largestAcked {
			break
		}
		for k < len(sk) && sk[k] <= pn {
			k++
		}
		p := &t.pkts[i]
		if p.State != InFlight {
			continue
		}
		later := t.largestAcked - pn - cc.PacketNumber(kLargest-k) // sent after pn, up to largestAcked
		if later >= PacketThreshold || !now.Before(p.Sent.Add(delay)) {
			p.State = Lost
			t.inFlight[p.Kind] -= p.Bytes
			lost(now, pn, p)
			continue
		}
		if at := p.Sent.Add(delay); t.lossTime == 0 || at.Before(t.lossTime) {
			t.lossTime = at
		}
	}
}

// LostFunc is told of each packet declared lost at now.
type LostFunc func(now clock.Mono, pn cc.PacketNumber, p *Packet)

// OnRTO declares everything in flight lost at now and backs the timer off.
func (t *Tracker) OnRTO(now clock.Mono, lost LostFunc) {
	for i := range t.pkts {
		if p := &t.pkts[i]; p.State == InFlight {
			p.State = Lost
			t.inFlight[p.Kind] -= p.Bytes
			lost(now, t.base+cc.PacketNumber(i), p)
		}
	}
	t.backoff = min(t.backoff+1, 16)
	t.lossTime = 0
	t.rtoAt = 0
	t.Compact()
}

// ArmRTO restarts the retransmission timer after new data was acknowledged.
func (t *Tracker) ArmRTO(now clock.Mono) {
	t.backoff = 0
	if t.TotalInFlight() > 0 {
		t.rtoAt = now.Add(t.RTO())
	} else {
		t.rtoAt = 0
	}
}

// Backoff is how many retransmission timeouts have fired in a row without
// an acknowledgement of new data in between.
func (t *Tracker) Backoff() int { return int(t.backoff) }

// LossTime is the time-threshold deadline (0 = none).
func (t *Tracker) LossTime() clock.Mono { return t.lossTime }

// RTOAt is the retransmission deadline (0 = none).
func (t *Tracker) RTOAt() clock.Mono { return t.rtoAt }

// NextTimer is the earliest loss or RTO deadline (0 if none).
func (t *Tracker) NextTimer() clock.Mono { return Earliest(t.lossTime, t.rtoAt) }

// Earliest returns the earlier of two deadlines, 0 meaning unset.
func Earliest(a, b clock.Mono) clock.Mono {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	case a < b:
		return a
	}
	return b
}
