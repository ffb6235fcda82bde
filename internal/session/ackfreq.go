package session

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/wire"
)

// ACK frequency, after the IETF draft "QUIC Acknowledgment Frequency"
// (draft-ietf-quic-ack-frequency). RFC 9000 §13.2.2 has a receiver
// acknowledge every second packet. On a narrow return path (an NB-IoT or
// LTE-M device's 64 kbit/s uplink under a 2 Mbit/s download) those ACKs
// fill the uplink: its queue stands full and the device's own traffic on
// it is dropped. The data sender knows its controller's needs, the
// receiver does not, so the sender asks, and only a receiver that said it
// can be asked (consent) is asked:
//
//   - consent: the receiver's min_ack_delay transport parameter (draft
//     §3), the smallest ACK delay it can honour (Config.MinAckDelay). In
//     the plaintext mode, which has no TLS to carry transport parameters,
//     the server sends it in its Accept; a plaintext client gives none, so
//     its server never asks it.
//   - the request: an AckFrequency frame (draft §4; wire.AckFrequency)
//     with a sequence number, the ack-eliciting threshold (packets the
//     receiver may take before it must ACK), the max ACK delay and the
//     reordering threshold. The receiver applies a frame only if its
//     sequence number is above every one it applied (draft §4: frames can
//     arrive out of order); a lost one is sent again, the newest only.
//   - the receiver (ackFreqReceiver) honours the request within its own
//     bounds: a threshold of at most wire.MaxAckSamples−1 (an ACK sent
//     sooner than asked is always allowed, draft §6); updates, PINGs,
//     commits and PMTU probes are still acknowledged at once; a packet
//     that arrives below the largest received, or a gap
//     reordering-threshold packets deep, is acknowledged at once (draft
//     §6.2), so loss detection keeps its speed. Thinned beyond
//     thinSamples packets per ACK, it carries the one-way delay sample of
//     every m-th packet only (sampleDue): the samples are the one part of
//     an ACK that thinning does not divide.
//
// The sender's policy (ackFreqSender.evaluate) thins only when the return
// path is the bottleneck, read from the ACKs themselves: each ACK carries
// its send time on the receiver's clock (the header timestamp, T3) and
// arrives at T4 on ours; T4 − T3 is the reverse one-way delay plus a
// clock offset that does not change within the filter's window, so its
// excess over the windowed minimum is the queueing delay on the return
// path. The smallest excess over one round trip is the standing queue:
// only a path whose queue never empties in a whole round trip — arrivals
// at or above its capacity, the ACKs' doing or not — has one; a wide
// return path (every symmetric path) empties between ACKs and reads ~0.
// Once per smoothed RTT:
//
//   - standing queue above max(5 ms, min RTT / 4) in two evaluations in a
//     row: double the packets per ACK (a multiplicative cut of the ACK
//     rate, as a congestion controller cuts its own). A quarter round
//     trip of ACK delay that lasts is what disturbs the controller's
//     clock; below it, and below 5 ms, a trace link's delivery
//     opportunities (a few ms apart on a slow cellular uplink) would pass
//     for a queue, and one round (an outage of the return path that
//     holds its ACKs) is not yet the ACKs' doing;
//   - below half that for 16 evaluations in a row: a quarter fewer
//     packets per ACK, down to Config.AckEvery (then the frame restores
//     RFC 9000's defaults). The slow step back keeps the policy from
//     oscillating, since thinning is what empties the queue;
//   - never fewer than minAcksPerRTT ACKs per window (the controller's
//     window in packets ÷ 4): window-based controllers clock their sending
//     by the ACKs, and BBR's and Copa's rate samples need several per
//     round (the draft's §8 leaves the choice to the sender's congestion
//     controller; four bounds the burst an ACK releases to a quarter
//     window, the draft's burst concern in §8), and the bound follows a
//     shrinking window at once;
//   - never more than wire.MaxAckSamples packets per ACK (the receiver's
//     cap above);
//   - the max ACK delay is a quarter of the minimum RTT, at least
//     Config.MaxAckDelay: long enough for the packets of one ACK to
//     arrive (else the timer sends the ACK first and thins nothing), short
//     enough that the timer alone gives 4 ACKs per round trip; the
//     retransmission timer allows for it (RFC 9002 §6.2.1, draft §7). A
//     peer whose min_ack_delay is above Config.MaxAckDelay is never asked;
//   - the reordering threshold is thinReorder (RFC 9002 §6.1.1's packet
//     threshold): a gap is reported no later than the sender's loss
//     detection could use it.

// Known limits. The reverse delay's minimum is kept over 5–10 s, so a
// standing queue that even 32 packets per ACK cannot drain (the samples,
// ranges and the device's own traffic still overfill the uplink) becomes
// the base after 10 s, reads as quiet, and the ratio steps back until the
// queue shows again. A connection whose return path is narrow from its
// first packet learns the base only once a queue drains. A return path
// that another flow's bulk data holds full (paper-sensitivity-rev: CUBIC
// on the reverse path) is thinned too, though the ACKs are not what fills
// it: there it gains nothing and costs owd a little goodput and some p95
// one-way delay (bench/results/history.md, "ACK frequency beside a
// return path another flow fills"); telling the two apart needs the ACKs'
// share of the return path, which the sender does not see. In the plaintext
// mode the server's Accept is 14 bytes longer for the parameter, which
// shifts the first packets' timing: runs on paths where nothing is ever
// thinned differ from before by that perturbation only.

// paramMinAckDelay (both ways, 4 bytes, µs): the min_ack_delay transport
// parameter (draft §3). The draft's id, 0xff04de1b, does not fit fresh's
// 16-bit ids; 0x1b, its last byte, does, and is below 64, so parseParams
// refuses it twice.
const paramMinAckDelay uint16 = 0x001b

// maxMinAckDelay bounds min_ack_delay: values of 2^24 µs or more are
// invalid (draft §3).
const maxMinAckDelay = 1 << 24 * time.Microsecond

// kindAckFreq is the recovery tracker's kind of an AckFrequency packet
// (its Offset is the frame's sequence number).
const kindAckFreq uint8 = 5

// The policy's bounds (see above).
const (
	minAcksPerRTT = 4                     // ACKs per window, at least
	maxAckRatio   = wire.MaxAckSamples    // packets per ACK, at most
	thinReorder   = 3                     // reordering threshold once thinned (kPacketThreshold)
	minStanding   = 5 * time.Millisecond  // standing reverse queue that thins, at least
	overRounds    = 2                     // evaluations in a row with a standing queue before a cut
	quietRounds   = 16                    // evaluations with an empty return path before a step back
	revMinWindow  = 5 * time.Second       // half the reverse-delay minimum's window
	minEvalPeriod = 10 * time.Millisecond // evaluations at most this often
)

// ackFreqSender is the data sender's side, allocated when the peer
// consents (its Session field is nil otherwise): the peer's min_ack_delay
// and the policy's state. Apart from the Session, which it would take past
// 2 KiB.
type ackFreqSender struct {
	peerMin   time.Duration // the peer's min_ack_delay
	ratio     int           // packets per ACK the policy wants (0 until the first evaluation: Config.AckEvery) …
	delay     time.Duration // … and the max ACK delay that goes with it
	seq       int64         // the latest frame's sequence number (0: none sent yet; the first is 1)
	acked     int64         // the largest sequence number acknowledged
	pending   bool          // a frame asking for ratio is due
	sentDelay time.Duration // the max ACK delay the latest frame asked for

	revMin      [2]int64   // minimum of T4 − T3, µs: this window's and the last one's
	revAt       clock.Mono // when this window started
	revHave     bool
	standing    time.Duration // smallest reverse queueing delay since the last evaluation …
	hasStanding bool          // … if an ACK came since
	evalAt      clock.Mono    // next evaluation
	quiet       int           // evaluations in a row with the return path empty
	over        int           // evaluations in a row with a standing queue
}

// ackFreqReceiver is the ACK sender's side: what the peer asked, allocated
// with the first frame applied (its Session field is nil until then).
type ackFreqReceiver struct {
	seq       int64 // the largest sequence number applied
	threshold int   // ack-eliciting packets taken without an ACK at once
	maxDelay  time.Duration
	reorder   int
	gapAt     cc.PacketNumber // smallest missing number not yet reported (InvalidPacketNumber: none)
	largestAt clock.Mono      // when the largest packet number received arrived
}

// errAckFrequency wraps every AckFrequency frame the receiver refuses.
var errAckFrequency = errors.New("ACK_FREQUENCY frame")

// appendMinAckDelay appends the min_ack_delay parameter for d.
func appendMinAckDelay(b []byte, d time.Duration) []byte {
	return appendParam(b, paramMinAckDelay, binary.BigEndian.AppendUint32(nil, uint32(d.Microseconds())))
}

// parseMinAckDelay decodes a min_ack_delay value.
func parseMinAckDelay(v []byte) (time.Duration, error) {
	if len(v) != 4 {
		return 0, fmt.Errorf("%w: min_ack_delay of %d bytes, want 4", errParams, len(v))
	}
	d := time.Duration(binary.BigEndian.Uint32(v)) * time.Microsecond
	if d >= maxMinAckDelay {
		return 0, fmt.Errorf("%w: min_ack_delay of %v: values of 2^24 µs or more are invalid (draft-ietf-quic-ack-frequency §3)", errParams, d)
	}
	return d, nil
}

// minAckDelay is the min_ack_delay this end advertises, and whether it
// consents at all (Config.MinAckDelay negative: no).
func (s *Session) minAckDelay() (time.Duration, bool) {
	return s.cfg.MinAckDelay, s.cfg.MinAckDelay >= 0
}

// plaintextParams is what a plaintext server's Accept carries: its
// min_ack_delay, if it consents (nil otherwise, and with TLS).
func (s *Session) plaintextParams() []byte {
	d, ok := s.minAckDelay()
	if s.sec != nil || !ok {
		return nil
	}
	return peerParams{hasMinAckDelay: true, minAckDelay: d}.append()
}

// onPlaintextParams takes the parameters of a plaintext server's Accept.
func (s *Session) onPlaintextParams(b []byte) error {
	if s.sec != nil || b == nil {
		return nil // with TLS they came in the handshake
	}
	p, err := parseParams(b, false)
	if err != nil {
		return err
	}
	s.takeMinAckDelay(&p)
	return nil
}

// takeMinAckDelay records the peer's consent.
func (s *Session) takeMinAckDelay(p *peerParams) {
	s.afs = nil
	if p.hasMinAckDelay {
		s.afs = &ackFreqSender{peerMin: p.minAckDelay}
	}
}

// onAckFrequency takes the peer's AckFrequency frame (draft §4): a frame
// from a peer we never consented to, or asking for a delay below our
// min_ack_delay, or with a value out of range, is a protocol violation; an
// old sequence number changes nothing.
func (s *Session) onAckFrequency(now clock.Mono, wallUS int64, h wire.Header, body []byte) {
	var f wire.AckFrequency
	switch err := wire.ParseAckFrequency(body, &f); {
	case errors.Is(err, wire.ErrValue):
		s.fail(fmt.Errorf("%w: %w with a sequence number above 2^62−1 or a max ACK delay of 2^14 ms or more (draft-ietf-quic-ack-frequency §4)", ErrProtocol, errAckFrequency), closeProtocol)
		return
	case err != nil:
		s.st.Malformed++
		return
	}
	ours, ok := s.minAckDelay()
	delay := time.Duration(f.MaxAckDelayMicros) * time.Microsecond
	switch {
	case !ok:
		s.fail(fmt.Errorf("%w: %w from a peer we never sent min_ack_delay (MinAckDelay is negative): draft-ietf-quic-ack-frequency §3 makes it a protocol violation", ErrProtocol, errAckFrequency), closeProtocol)
		return
	case delay < ours:
		s.fail(fmt.Errorf("%w: %w asks for a max ACK delay of %v, below the min_ack_delay of %v we advertised (draft-ietf-quic-ack-frequency §4)", ErrProtocol, errAckFrequency, delay, ours), closeProtocol)
		return
	}
	s.onAckEliciting(now, wallUS, h, wire.Echo{}, false)
	if s.afr == nil {
		s.afr = new(ackFreqReceiver)
	} else if f.Seq <= s.afr.seq {
		return // reordered or repeated: a newer request is in force
	}
	r := s.afr
	r.seq = f.Seq
	r.threshold = int(min(f.Threshold, maxAckRatio-1))
	r.maxDelay = delay
	r.reorder = int(min(f.ReorderThreshold, 1<<20))
	r.gapAt = cc.InvalidPacketNumber
}

// ackAtOnce reports whether the packet pn just received (not a duplicate)
// must be acknowledged at once; elicited counts the ack-eliciting packets
// not yet acknowledged, this one included, and largest is the largest
// number received before it. Without an applied AckFrequency it is RFC
// 9000 §13.2.1–2's rule as ever: out of order, or Config.AckEvery packets.
func (s *Session) ackAtOnce(pn, largest cc.PacketNumber, outOfOrder bool) bool {
	r := s.afr
	if r == nil {
		return outOfOrder || s.elicited >= s.cfg.AckEvery
	}
	if s.elicited > r.threshold {
		return true
	}
	if r.reorder == 0 || largest == cc.InvalidPacketNumber {
		return false
	}
	if pn < largest {
		return true // fills a gap: the sender may have declared it lost (draft §6.2)
	}
	if pn > largest+1 && r.gapAt == cc.InvalidPacketNumber {
		r.gapAt = largest + 1
	}
	return r.gapAt != cc.InvalidPacketNumber && pn-r.gapAt >= cc.PacketNumber(r.reorder)
}

// thinSamples is the most one-way delay samples an ACK carries once the
// peer asked for fewer ACKs than every second packet. A sample is 12 bytes
// per packet, the one cost of an ACK that thinning does not divide: at 32
// packets per ACK they would be 87 % of it (384 of 442 bytes), and a
// 4.7 Mbit/s download's samples alone (590 a second) would need 57 kbit/s
// of a 41 kbit/s uplink. Eight per ACK, one every (packets per ACK ÷ 8)
// packets, still give the delay filters (the owd analyzer takes the
// minimum of its latest 4) several per round trip; a missing sample is no
// evidence either way to the controllers (cc.AckSample.OWDValid).
const thinSamples = 8

// sampleDue reports whether the ack-eliciting packet being received
// should carry its one-way delay sample in the next ACK: every one by
// RFC 9000's default, every m-th once thinned so that the ACK carries at
// most thinSamples.
func (s *Session) sampleDue() bool {
	r := s.afr
	if r == nil || r.threshold+1 <= thinSamples {
		return true
	}
	m := (r.threshold + thinSamples) / thinSamples // ⌈(threshold+1) ÷ thinSamples⌉
	return (s.elicited+1)%m == 0 && s.nSamples < thinSamples
}

// ackDelayFrom is the arrival the ACK's delay field counts from. RFC 9000
// §13.2.5 counts it from the largest packet's arrival, which the sender's
// RTT sample is taken on; this end has always counted from the oldest
// packet not yet acknowledged, which at every second packet differs by one
// packet's spacing. Once thinned that difference is up to a quarter round
// trip, subtracted from every RTT sample (RFC 9002 §5.3), so a thinned
// receiver counts as the RFC does.
func (s *Session) ackDelayFrom() clock.Mono {
	if s.afr != nil && s.afr.largestAt != 0 {
		return s.afr.largestAt
	}
	return s.oldest
}

// ackDelay is the delayed-ACK timer in force.
func (s *Session) ackDelay() time.Duration {
	if s.afr != nil {
		return s.afr.maxDelay
	}
	return s.cfg.MaxAckDelay
}

// onSample takes an ACK's stamps for the policy: t3, its send time on
// the peer's wall clock, and t4, its arrival on ours (µs). The minimum of
// T4 − T3 is kept over the last one to two revMinWindow, so that clock
// skew (tens of ppm: under a millisecond per window) cannot pass for a
// queue, and a route change is learnt within 10 s.
func (a *ackFreqSender) onSample(now clock.Mono, t3, t4 int64) {
	raw := t4 - t3
	switch {
	case !a.revHave:
		a.revMin, a.revAt, a.revHave = [2]int64{raw, raw}, now, true
	case now.Sub(a.revAt) >= revMinWindow:
		a.revMin[1], a.revMin[0], a.revAt = a.revMin[0], raw, now
	}
	a.revMin[0] = min(a.revMin[0], raw)
	q := time.Duration(raw-min(a.revMin[0], a.revMin[1])) * time.Microsecond
	if !a.hasStanding || q < a.standing {
		a.standing, a.hasStanding = q, true
	}
}

// evaluate runs the policy at now (see the top of this file) with the
// path's smoothed and minimum RTT and the controller's window in packets;
// it sets pending when the packets per ACK should change.
func (a *ackFreqSender) evaluate(now clock.Mono, srtt, minRTT time.Duration, window, ackEvery int, maxDelay time.Duration) {
	if a.peerMin > maxDelay || srtt <= 0 || now.Before(a.evalAt) {
		return
	}
	a.evalAt = now.Add(max(srtt, minEvalPeriod))
	if a.ratio == 0 {
		a.ratio, a.delay = ackEvery, maxDelay
	}
	standing, learnt := a.standing, a.hasStanding
	a.hasStanding = false
	limit := min(max(window/minAcksPerRTT, ackEvery), maxAckRatio)
	want := a.ratio
	high := max(minStanding, minRTT/4)
	if !learnt || standing <= high {
		a.over = 0
	}
	switch {
	case !learnt: // no ACK this round
	case standing > high:
		a.quiet = 0
		if a.over++; a.over >= overRounds {
			want = 2 * a.ratio
		}
	case standing < high/2:
		a.quiet++
		if a.quiet >= quietRounds {
			a.quiet = 0
			want = max(a.ratio-max(a.ratio/4, 1), ackEvery)
		}
	default:
		a.quiet = 0
	}
	want = max(min(want, limit), ackEvery)
	// The delayed-ACK timer must let ratio packets arrive, or it sends
	// the ACK first and thins nothing: a quarter of the minimum RTT, so
	// that the timer alone still gives 4 ACKs per round trip, never
	// below our default (what the retransmission timer assumed so far).
	delay := maxDelay
	if want > ackEvery {
		delay = min(max(maxDelay, minRTT/minAcksPerRTT), wire.MaxAckDelayLimit*time.Microsecond-time.Millisecond)
	}
	if want != a.ratio {
		a.ratio, a.delay, a.pending = want, delay, true
	}
}

// pollAckFrequency builds the pending AckFrequency frame in buf.
func (s *Session) pollAckFrequency(now clock.Mono, wallUS int64, buf []byte) ([]byte, bool) {
	a := s.afs
	if a == nil || !a.pending || s.state != stateOpen {
		return nil, false
	}
	a.pending = false
	a.seq++
	f := wire.AckFrequency{Seq: a.seq, Threshold: uint32(a.ratio - 1), MaxAckDelayMicros: uint32(a.delay.Microseconds()), ReorderThreshold: 1}
	if a.ratio > s.cfg.AckEvery {
		f.ReorderThreshold = thinReorder
	}
	// Until the peer acknowledges it, its ACKs may come under the old
	// delay or the new: the retransmission timer allows for the larger
	// (draft §7), then for the new one (ackFreqAcked).
	a.sentDelay = a.delay
	s.tr.SetMaxAckDelay(max(s.tr.MaxAckDelay(), a.delay))
	s.lastSent = now
	// In flight as its size, as a Commit is, so that the retransmission
	// timer stays armed until it is acknowledged.
	pn := s.tr.OnSent(now, cc.ByteCount(wire.HeaderLen+wire.AckFrequencyLen), kindAckFreq, a.seq, 0)
	return wire.AppendAckFrequency(s.header(buf, wallUS, wire.TypeAckFrequency, 0, pn), &f), true
}

// ackFreqAcked notes the acknowledgement of the frame with sequence seq.
func (s *Session) ackFreqAcked(seq int64) {
	if s.afs != nil {
		if seq == s.afs.seq {
			s.tr.SetMaxAckDelay(s.afs.sentDelay)
		}
		s.afs.acked = max(s.afs.acked, seq)
	}
}

// ackFreqLost sends the request again if the lost frame was the latest
// and unacknowledged (with a new sequence number); an older one is
// superseded.
func (s *Session) ackFreqLost(seq int64) {
	if s.afs != nil && seq == s.afs.seq && seq > s.afs.acked {
		s.afs.pending = true
	}
}
