package sim

import (
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// Loss detection and retransmission timers of a sender, shared by bulk and
// update flows. Packet numbers are never reused (a retransmission is a new
// packet), so an ACK names exactly one transmission.
//
//   - Loss (RFC 9002 §6.1): a packet below the largest acknowledged one is
//     lost once 3 later packets are acknowledged (kPacketThreshold) or it is
//     older than 9/8·max(SRTT, latest RTT) (kTimeThreshold), at least 1 ms.
//   - RTO (RFC 6298 §2, §5): SRTT + 4·RTTVAR, at least 200 ms (Linux's
//     TCP_RTO_MIN rather than RFC 6298's 1 s, as every deployed stack does),
//     1 s before the first sample, doubled per expiry (backoff), at most
//     60 s; restarted when an ACK acknowledges new data. On expiry every
//     packet in flight is declared lost.

const (
	packetThreshold                    = 3
	timeThresholdNum, timeThresholdDen = 9, 8
	minLossDelay                       = time.Millisecond
	minRTO                             = 200 * time.Millisecond
	initialRTO                         = time.Second
	maxRTO                             = 60 * time.Second
)

type sentState uint8

const (
	stateInFlight sentState = iota
	stateAcked
	stateLost
)

type sentPkt struct {
	sent  clock.Mono
	bytes cc.ByteCount
	chunk int64 // stream chunk carried (bulk), -1 for none
	state sentState
}

// tracker keeps the sent packets of one sender in packet-number order.
type tracker struct {
	base     cc.PacketNumber // packet number of pkts[0]
	pkts     []sentPkt
	next     cc.PacketNumber // next packet number to use
	inFlight cc.ByteCount

	rtt          cc.RTTStats
	largestAcked cc.PacketNumber
	lossTime     clock.Mono // time-threshold timer; 0 = unset
	rtoAt        clock.Mono // 0 = unset
	backoff      uint
}

func newTracker() tracker {
	return tracker{largestAcked: cc.InvalidPacketNumber}
}

// onSent registers a new packet and returns its number.
func (t *tracker) onSent(now clock.Mono, bytes cc.ByteCount, chunk int64) cc.PacketNumber {
	pn := t.next
	t.next++
	t.pkts = append(t.pkts, sentPkt{sent: now, bytes: bytes, chunk: chunk})
	t.inFlight += bytes
	if t.rtoAt == 0 {
		t.rtoAt = now.Add(t.rto())
	}
	return pn
}

func (t *tracker) get(pn cc.PacketNumber) *sentPkt {
	i := int(pn - t.base)
	if i < 0 || i >= len(t.pkts) {
		return nil
	}
	return &t.pkts[i]
}

// compact drops finished packets from the front.
func (t *tracker) compact() {
	i := 0
	for i < len(t.pkts) && t.pkts[i].state != stateInFlight {
		i++
	}
	if i > 0 {
		n := copy(t.pkts, t.pkts[i:])
		t.pkts = t.pkts[:n]
		t.base += cc.PacketNumber(i)
	}
}

func (t *tracker) rto() time.Duration {
	r := initialRTO
	if t.rtt.HasSample() {
		r = max(t.rtt.Smoothed()+4*t.rtt.Var(), minRTO)
	}
	r <<= t.backoff
	return min(r, maxRTO)
}

func (t *tracker) lossDelay() time.Duration {
	d := max(t.rtt.Smoothed(), t.rtt.Latest())
	return max(d*timeThresholdNum/timeThresholdDen, minLossDelay)
}

// markAcked moves pn to acked; it reports false if pn was not in flight.
func (t *tracker) markAcked(pn cc.PacketNumber) (*sentPkt, bool) {
	p := t.get(pn)
	if p == nil || p.state != stateInFlight {
		return nil, false
	}
	p.state = stateAcked
	t.inFlight -= p.bytes
	if pn > t.largestAcked {
		t.largestAcked = pn
	}
	return p, true
}

// detectLost calls lost for every packet declared lost at now and re-arms
// the time-threshold timer (RFC 9002 §6.1).
func (t *tracker) detectLost(now clock.Mono, lost func(pn cc.PacketNumber, p *sentPkt)) {
	t.lossTime = 0
	if t.largestAcked == cc.InvalidPacketNumber {
		return
	}
	delay := t.lossDelay()
	for i := range t.pkts {
		pn := t.base + cc.PacketNumber(i)
		if pn >= t.largestAcked {
			break
		}
		p := &t.pkts[i]
		if p.state != stateInFlight {
			continue
		}
		if t.largestAcked-pn >= packetThreshold || !now.Before(p.sent.Add(delay)) {
			p.state = stateLost
			t.inFlight -= p.bytes
			lost(pn, p)
			continue
		}
		if at := p.sent.Add(delay); t.lossTime == 0 || at.Before(t.lossTime) {
			t.lossTime = at
		}
	}
}

// onRTO declares everything in flight lost and backs the timer off.
func (t *tracker) onRTO(now clock.Mono, lost func(pn cc.PacketNumber, p *sentPkt)) {
	for i := range t.pkts {
		if p := &t.pkts[i]; p.state == stateInFlight {
			p.state = stateLost
			t.inFlight -= p.bytes
			lost(t.base+cc.PacketNumber(i), p)
		}
	}
	t.backoff = min(t.backoff+1, 16)
	t.lossTime = 0
	t.rtoAt = 0
	t.compact()
}

// armRTO restarts the retransmission timer after new data was acknowledged.
func (t *tracker) armRTO(now clock.Mono) {
	t.backoff = 0
	if t.inFlight > 0 {
		t.rtoAt = now.Add(t.rto())
	} else {
		t.rtoAt = 0
	}
}

// nextTimer is the earliest loss or RTO deadline (0 if none).
func (t *tracker) nextTimer() clock.Mono {
	return earliest(t.lossTime, t.rtoAt)
}

// earliest returns the earlier of two deadlines, 0 meaning unset.
func earliest(a, b clock.Mono) clock.Mono {
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
