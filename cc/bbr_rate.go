package cc

import (
	"math"
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// Delivery-rate estimation for BBR, after draft-cheng-iccrg-delivery-rate-
// estimation-00 ("Delivery Rate Estimation", Cheng, Cardwell, Hassas
// Yeganeh, Jacobson). Every sent packet remembers how much the connection
// had delivered, and when, at the moment it left; when it is acknowledged,
// the data delivered since then divided by the time that took is a sample
// of the rate the path delivered at (§3.1). Two elapsed times are compared,
// the send phase (first to last packet of the interval, as sent) and the ACK
// phase (as acknowledged), and the longer one is used, because either side
// alone can be compressed: a burst of sends, or ACKs bunched by a router
// (§3.3, "the sending rate can be higher than the delivery rate").
//
// The Controller contract reports sends and ACKs per packet with QUIC-style
// packet numbers that are never reused, so the per-packet state is kept in
// a ring indexed by packet number, amortised: it doubles (rarely) when the
// packets outstanding span more numbers than it holds, and never allocates
// in a steady state.

const (
	// rateRingInitial is the ring's first size in packets: an initial
	// window of 10 and a few hundred packets of headroom before the first
	// doubling.
	rateRingInitial = 256
	// rateRingMax caps the ring at 2^17 packets (about 157 MB of window at
	// a 1200-byte MSS; a few MB of memory). Past it the oldest outstanding
	// packet's slot is reused: its ACK then yields no rate sample, which
	// costs one sample of a window that large, not correctness.
	rateRingMax = 1 << 17
	// maxSampleRate caps a rate sample at 2^50 bit/s (about 1 Pbit/s): a
	// nonsense interval (a clock that barely moved) must not overflow the
	// estimate or everything derived from it.
	maxSampleRate = Bandwidth(1 << 50)
)

// sentRecord is the connection state a packet carries from its send to its
// ACK (the draft's P.delivered, P.delivered_time, P.first_sent_time,
// P.is_app_limited, §3.2).
type sentRecord struct {
	pn            PacketNumber
	inUse         bool
	sentTime      clock.Mono
	delivered     ByteCount  // C.delivered when the packet was sent
	deliveredTime clock.Mono // C.delivered_time then
	firstSentTime clock.Mono // C.first_sent_time then
	appLimited    bool       // sent while the connection was app-limited
}

// rateSample is one delivery-rate sample (the draft's rs, §3.3), taken
// when one packet is acknowledged.
type rateSample struct {
	// valid is false when the ACK says nothing about the rate: the packet's
	// send state was not kept, or the interval is shorter than the minimum
	// RTT, which no real delivery interval can be (the draft's "skip the
	// sample" and Linux's tcp_rate_gen, both for the same reason: a short
	// interval comes from a stretch or compressed ACK and overstates the
	// rate).
	valid          bool
	deliveryRate   Bandwidth     // delivered·8/interval
	delivered      ByteCount     // delivered over the interval
	interval       time.Duration // max(send elapsed, ACK elapsed)
	priorDelivered ByteCount     // C.delivered when the packet was sent
	isAppLimited   bool          // the packet was sent app-limited
}

// rateSampler is the connection-side state of the estimator (the draft's
// C.delivered, C.delivered_time, C.first_sent_time, C.app_limited, §3.2),
// and the ring of per-packet records.
type rateSampler struct {
	ring []sentRecord
	mask PacketNumber

	delivered     ByteCount  // bytes acknowledged so far
	deliveredTime clock.Mono // when delivered last grew
	firstSentTime clock.Mono // send time of the packet that began the current interval
	// appLimited is the draft's C.app_limited: 0 when the flow is not
	// application-limited, else the delivered count at which the
	// application-limited stretch ends (the last packet then outstanding
	// has been delivered). It starts at 1, as Linux's tcp_init_sock does:
	// the initial window goes out before anything has been measured, so
	// its samples are marked app-limited and the first delivery clears it.
	appLimited ByteCount
	lost       ByteCount // bytes declared lost so far
}

func newRateSampler() rateSampler {
	return rateSampler{
		ring:       make([]sentRecord, rateRingInitial),
		mask:       rateRingInitial - 1,
		appLimited: 1,
	}
}

// markAppLimited starts an application-limited stretch that lasts until
// everything now in flight (inFlight bytes) has been delivered (the draft's
// §3.4: C.app_limited = C.delivered + inflight, or 1 if that is 0).
func (r *rateSampler) markAppLimited(inFlight ByteCount) {
	r.appLimited = max(r.delivered+inFlight, 1)
}

// onSent records packet pn, sent at now with priorInFlight bytes
// outstanding before it (draft §3.2, "Transmitting a data packet").
func (r *rateSampler) onSent(now clock.Mono, pn PacketNumber, priorInFlight ByteCount) {
	if priorInFlight <= 0 {
		// Nothing in flight: the next interval starts now, not at the
		// last ACK before an idle period.
		r.firstSentTime = now
		r.deliveredTime = now
	}
	slot := r.slot(pn)
	*slot = sentRecord{
		pn:            pn,
		inUse:         true,
		sentTime:      now,
		delivered:     r.delivered,
		deliveredTime: r.deliveredTime,
		firstSentTime: r.firstSentTime,
		appLimited:    r.appLimited != 0,
	}
}

// slot returns the ring slot for pn, growing the ring if an outstanding
// packet holds it (up to rateRingMax, past which the old record is reused).
func (r *rateSampler) slot(pn PacketNumber) *sentRecord {
	for {
		s := &r.ring[pn&r.mask]
		if !s.inUse || s.pn == pn || len(r.ring) >= rateRingMax {
			return s
		}
		r.grow()
	}
}

// grow doubles the ring and re-files every outstanding record; where two
// collide in the larger ring (their numbers differ by a multiple of its
// size) the newer one is kept.
func (r *rateSampler) grow() {
	old := r.ring
	r.ring = make([]sentRecord, 2*len(old))
	r.mask = PacketNumber(len(r.ring) - 1)
	for _, s := range old {
		if !s.inUse {
			continue
		}
		d := &r.ring[s.pn&r.mask]
		if !d.inUse || s.pn > d.pn {
			*d = s
		}
	}
}

// take removes and returns pn's record, if it is still kept.
func (r *rateSampler) take(pn PacketNumber) (sentRecord, bool) {
	if len(r.ring) == 0 {
		return sentRecord{}, false
	}
	s := &r.ring[pn&r.mask]
	if !s.inUse || s.pn != pn {
		return sentRecord{}, false
	}
	rec := *s
	s.inUse = false
	return rec, true
}

// onAck counts bytes of packet pn as delivered at now and returns the rate
// sample it yields (draft §3.3, "Upon receiving ACK"). minRTT is the
// connection's minimum RTT (0 if none): shorter intervals are not samples.
func (r *rateSampler) onAck(now clock.Mono, pn PacketNumber, bytes ByteCount, minRTT time.Duration) rateSample {
	r.delivered += max(bytes, 0)
	r.deliveredTime = now
	if r.appLimited != 0 && r.delivered > r.appLimited {
		r.appLimited = 0 // everything sent app-limited is delivered
	}
	rec, ok := r.take(pn)
	if !ok {
		return rateSample{}
	}
	// The next interval starts where this packet's ended, so that
	// consecutive samples measure consecutive flights.
	r.firstSentTime = rec.sentTime
	rs := rateSample{
		delivered:      r.delivered - rec.delivered,
		priorDelivered: rec.delivered,
		isAppLimited:   rec.appLimited,
	}
	sendElapsed := rec.sentTime.Sub(rec.firstSentTime)
	ackElapsed := r.deliveredTime.Sub(rec.deliveredTime)
	rs.interval = max(sendElapsed, ackElapsed)
	if rs.interval <= 0 || rs.interval < minRTT || rs.delivered <= 0 {
		return rs
	}
	rs.valid = true
	rs.deliveryRate = rateOf(rs.delivered, rs.interval)
	return rs
}

// onLost forgets packet pn (it will never be acknowledged) and counts it.
func (r *rateSampler) onLost(pn PacketNumber, bytes ByteCount) {
	r.lost += max(bytes, 0)
	r.take(pn)
}

// rateOf is bytes over d in bit/s, capped at maxSampleRate.
func rateOf(bytes ByteCount, d time.Duration) Bandwidth {
	if bytes <= 0 || d <= 0 {
		return 0
	}
	bps := float64(bytes) * 8 / d.Seconds()
	if !(bps < float64(maxSampleRate)) { // also NaN
		return maxSampleRate
	}
	return max(Bandwidth(math.Round(bps)), 1) // some data in some time is a rate
}
