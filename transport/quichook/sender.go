package quichook

import (
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// Packet states in the sender's record.
const (
	stateInFlight uint8 = iota
	stateAcked
	stateLost
)

type sentPacket struct {
	sent  clock.Mono
	bytes int32
	state uint8
}

// Loss detection over shim sequence numbers, RFC 9002 §6.1: a datagram is
// lost once three later ones were acknowledged (kPacketThreshold) or 9/8 of
// the RTT after a later one was (kTimeThreshold), never sooner than
// kGranularity. The numbers count datagrams, not QUIC packets: quic-go
// retransmits what it declares lost itself; these losses only feed the
// hook's controller.
const (
	packetThreshold = 3
	granularity     = time.Millisecond
	// initialRTO is the retransmission timeout before any RTT sample
	// (RFC 6298 §2.1 says 1 s), minRTO its floor afterwards (RFC 6298
	// §2.4 allows 1 s; Linux's 200 ms is the common practice).
	initialRTO = time.Second
	minRTO     = 200 * time.Millisecond
	maxRTO     = 60 * time.Second
	// pacingBurst is how far the pacer may catch up after being late:
	// Go's timers fire up to ~1 ms late, so without credit a paced sender
	// would fall short of its rate.
	pacingBurst = 2 * time.Millisecond
)

// sender is one peer's sending half: the controller, the record of shimmed
// datagrams in flight, loss detection and the retransmission timeout that
// keeps a silent peer from freezing the gate. Not safe for concurrent use.
type sender struct {
	ctl cc.Controller
	rtt cc.RTTStats

	base         uint64       // sequence number of pkts[0]
	pkts         []sentPacket // base, base+1, … up to next−1
	next         uint64       // next sequence number
	inFlight     cc.ByteCount
	largestAcked uint64
	hasAcked     bool
	lossTime     clock.Mono // earliest time-threshold loss (0: none)
	progress     clock.Mono // last acknowledgement, or the start of the flight
	backoff      uint

	echo     bool  // an echo of the latest feedback is pending
	t3, t4   int64 // that echo
	nextSend clock.Mono

	acked, lost, spurious, rtos int64
}

// onSent records a datagram of n bytes leaving at now and returns its
// sequence number.
func (s *sender) onSent(now clock.Mono, n int) uint64 {
	if s.inFlight == 0 {
		s.progress = now
	}
	seq := s.next
	s.next++
	s.pkts = append(s.pkts, sentPacket{sent: now, bytes: int32(n)})
	s.inFlight += cc.ByteCount(n)
	s.ctl.OnPacketSent(now, cc.PacketNumber(seq), cc.ByteCount(n), s.inFlight)
	if rate := s.ctl.PacingRate(); rate > 0 {
		gap := time.Duration(float64(n) * 8 / float64(rate) * float64(time.Second))
		s.nextSend = max(s.nextSend, now.Add(-pacingBurst)).Add(gap)
	}
	return seq
}

// canSend reports whether the controller lets the next datagram go at now:
// the window has room and the pacer's time has come.
func (s *sender) canSend(now clock.Mono) bool {
	return s.ctl.CanSend(s.inFlight) && !now.Before(s.nextSend)
}

// onFeedback processes one feedback datagram arriving at now (wall wallUS).
// It reports false, changing nothing, if the feedback acknowledges a
// sequence number never sent: a broken or lying peer.
func (s *sender) onFeedback(now clock.Mono, wallUS int64, f *feedback) bool {
	if f.nRanges > 0 && f.ranges[0].hi >= s.next {
		return false
	}
	s.echo, s.t3, s.t4 = true, f.t3, wallUS
	if f.nRanges == 0 {
		return true
	}
	largest := f.ranges[0].hi
	prior := s.inFlight
	var rtt time.Duration
	if p := s.get(largest); p != nil && p.state == stateInFlight {
		rtt = now.Sub(p.sent)
		delay := time.Duration(f.ackDelay) * time.Microsecond
		if m := s.rtt.Min(); m == 0 || rtt-delay >= m { // RFC 9002 §5.3
			rtt -= delay
		}
		if rtt > 0 {
			s.rtt.Update(rtt)
		}
	}
	acked := false
	next := 0 // f.sample's cursor
	for i := f.nRanges - 1; i >= 0; i-- {
		r := f.ranges[i]
		for seq := max(r.lo, s.base); seq <= r.hi; seq++ {
			p := s.get(seq)
			if p == nil || p.state != stateInFlight {
				if p != nil && p.state == stateLost {
					s.spurious++
					p.state = stateAcked
				}
				continue
			}
			p.state = stateAcked
			acked = true
			s.acked++
			s.inFlight -= cc.ByteCount(p.bytes)
			a := cc.AckSample{PacketNumber: cc.PacketNumber(seq), Bytes: cc.ByteCount(p.bytes), SentTime: p.sent,
				PriorInFlight: prior, ClockSynced: f.synced}
			if seq == largest {
				a.RTT = rtt
			}
			if o, ok := f.sample(seq, &next); ok {
				a.OWD, a.OWDValid = time.Duration(o.owd)*time.Microsecond, true
			}
			s.ctl.OnAck(now, a)
		}
	}
	if acked {
		if !s.hasAcked || largest > s.largestAcked {
			s.largestAcked, s.hasAcked = largest, true
		}
		s.progress, s.backoff = now, 0
	}
	s.detectLost(now)
	s.compact()
	return true
}

func (s *sender) get(seq uint64) *sentPacket {
	if seq < s.base || seq-s.base >= uint64(len(s.pkts)) {
		return nil
	}
	return &s.pkts[seq-s.base]
}

func (s *sender) lossDelay() time.Duration {
	d := max(s.rtt.Smoothed(), s.rtt.Latest())
	if d == 0 {
		d = initialRTO / 3 // RFC 9002's kInitialRtt, 333 ms
	}
	return max(d*9/8, granularity)
}

// detectLost declares lost what the thresholds say is.
func (s *sender) detectLost(now clock.Mono) {
	s.lossTime = 0
	if !s.hasAcked {
		return
	}
	delay := s.lossDelay()
	prior := s.inFlight
	for seq := s.base; seq < s.largestAcked; seq++ {
		p := s.get(seq)
		if p == nil {
			break
		}
		if p.state != stateInFlight {
			continue
		}
		if s.largestAcked-seq >= packetThreshold || now.Sub(p.sent) >= delay {
			p.state = stateLost
			s.lost++
			s.inFlight -= cc.ByteCount(p.bytes)
			s.ctl.OnLoss(now, cc.LossEvent{PacketNumber: cc.PacketNumber(seq), Bytes: cc.ByteCount(p.bytes), SentTime: p.sent, PriorInFlight: prior})
			continue
		}
		if t := p.sent.Add(delay); s.lossTime == 0 || t.Before(s.lossTime) {
			s.lossTime = t
		}
	}
}

func (s *sender) rto() time.Duration {
	d := initialRTO
	if s.rtt.HasSample() {
		d = max(s.rtt.Smoothed()+4*s.rtt.Var(), minRTO)
	}
	return min(d<<min(s.backoff, 16), maxRTO)
}

// deadline is when onTimer next has work (0: none).
func (s *sender) deadline() clock.Mono {
	t := s.lossTime
	if s.inFlight > 0 {
		if r := s.progress.Add(s.rto()); t == 0 || r.Before(t) {
			t = r
		}
	}
	return t
}

// onTimer runs time-threshold loss detection and the retransmission
// timeout. The timeout declares everything in flight gone without telling
// OnLoss per datagram (the controller's OnRetransmissionTimeout is the one
// signal), so that a peer that fell silent cannot hold the window shut.
func (s *sender) onTimer(now clock.Mono) {
	if s.lossTime != 0 && !now.Before(s.lossTime) {
		s.detectLost(now)
	}
	if s.inFlight > 0 && !now.Before(s.progress.Add(s.rto())) {
		for i := range s.pkts {
			if s.pkts[i].state == stateInFlight {
				s.pkts[i].state = stateLost
				s.lost++
			}
		}
		s.inFlight = 0
		s.rtos++
		s.backoff++
		s.progress = now
		s.lossTime = 0
		s.ctl.OnRetransmissionTimeout(now)
	}
	s.compact()
}

// compact drops settled datagrams from the front of the record.
func (s *sender) compact() {
	i := 0
	for i < len(s.pkts) && s.pkts[i].state != stateInFlight {
		i++
	}
	if i == 0 {
		return
	}
	s.base += uint64(i)
	if i == len(s.pkts) {
		s.pkts = s.pkts[:0]
		return
	}
	s.pkts = s.pkts[i:]
}
