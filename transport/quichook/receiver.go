package quichook

import (
	"math"
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// receiver is one peer's receiving half: it stamps each shimmed datagram's
// arrival, turns the stamps into a one-way delay with the clock-offset
// estimate, and keeps what the next feedback datagram reports. Not safe for
// concurrent use (the PacketConn's mutex guards it).
type receiver struct {
	inband *clock.Inband
	ranges []seqRange // received sequence numbers, descending, at most maxRanges
	fb     feedback   // samples accumulate here; ranges are copied in at build time
	// pending counts data datagrams since the last feedback; due is when
	// the next feedback must go at the latest (0: none pending).
	pending   int
	due       clock.Mono
	last      clock.Mono // when the last feedback went
	largest   uint64
	largestAt clock.Mono
	has       bool
	synced    bool
}

func newReceiver() (*receiver, error) {
	// The same estimator settings as fresh's own sessions: quarter-second
	// windows over a minute, synced after two seconds of samples.
	ib, err := clock.NewInband(clock.InbandConfig{Window: 250 * time.Millisecond, Windows: 240, MinWindows: 8})
	if err != nil {
		return nil, err
	}
	return &receiver{inband: ib, ranges: make([]seqRange, 0, maxRanges)}, nil
}

// seqWindow is how far above the largest sequence number received so far
// a datagram's may be, in datagrams. The sender has at most its window in
// flight and numbers every datagram once, so an honest number is at most a
// window above the largest that arrived; 2^16 datagrams (95 MB at the
// default MaxDatagram) is more than any window the controllers open. A
// number beyond it would become the largest, and every later feedback
// would acknowledge it; the datagram is taken as not the shim's (its
// payload still goes to quic-go, which authenticates its own packets).
const seqWindow = 1 << 16

// inWindow reports whether seq may be recorded: the first datagram from a
// peer sets where the numbers are (a peer forgotten and back resumes its
// own numbering), every later one must be within seqWindow above the
// largest.
func (r *receiver) inWindow(seq uint64) bool {
	return !r.has || seq <= r.largest || seq-r.largest <= seqWindow
}

// onData records one data datagram that arrived at now (wall clock wallUS)
// and reports whether it is a duplicate. trust says both clocks are
// synchronised already (no in-band offset); noInband disables the
// estimator (samples then go out marked unsynchronised).
func (r *receiver) onData(now clock.Mono, wallUS int64, h *dataHeader, cfg *Config) (dup bool) {
	if !cfg.NoInband && !cfg.TrustPeerClock {
		r.inband.AddForward(clock.Stamp(h.sent), clock.Stamp(wallUS))
		if h.echo {
			r.inband.AddReverse(clock.Stamp(h.t3), clock.Stamp(h.t4))
		}
	}
	if r.insert(h.seq) {
		return true
	}
	if !r.has || h.seq > r.largest {
		r.largest, r.largestAt, r.has = h.seq, now, true
	}
	var theta time.Duration
	switch {
	case cfg.TrustPeerClock:
		r.synced = true
	case cfg.NoInband:
		r.synced = false
	default:
		r.synced = r.inband.Synced()
		if r.synced {
			theta = r.inband.Offset(clock.Stamp(h.sent))
		}
	}
	if r.fb.nSamples < maxSamples {
		// Saturating: the send stamp is the peer's and may be anything.
		us := subSat(subSat(wallUS, h.sent), theta.Microseconds())
		r.fb.samples[r.fb.nSamples] = owdSample{seq: h.seq, owd: int32(max(min(us, math.MaxInt32), math.MinInt32))}
		r.fb.nSamples++
	}
	if r.pending == 0 {
		r.due = now.Add(cfg.MaxAckDelay)
	}
	r.pending++
	return false
}

// feedbackDue reports whether feedback should go now: AckEvery
// datagrams are waiting and MinAckInterval has passed since the last one, or
// the samples fill a feedback datagram, or the first has waited
// MaxAckDelay.
func (r *receiver) feedbackDue(now clock.Mono, cfg *Config) bool {
	return r.pending > 0 && (r.fb.nSamples == maxSamples || !now.Before(r.nextDue(cfg)))
}

// nextDue is when feedback is due if nothing else arrives (0: none pending).
func (r *receiver) nextDue(cfg *Config) clock.Mono {
	if r.pending == 0 {
		return 0
	}
	t := r.due
	if g := r.last.Add(cfg.MinAckInterval); r.pending >= cfg.AckEvery && g.Before(t) {
		t = g
	}
	return t
}

// build fills the next feedback datagram into b and resets what it reported.
// cookie is the data sender's cookie for this end.
func (r *receiver) build(now clock.Mono, wallUS int64, cookie uint64, b []byte) []byte {
	f := &r.fb
	f.cookie, f.t3, f.synced = cookie, wallUS, r.synced
	f.ackDelay = uint32(min(max(now.Sub(r.largestAt).Microseconds(), 0), math.MaxUint32))
	f.nRanges = copy(f.ranges[:], r.ranges)
	b = f.append(b)
	f.nSamples, r.pending, r.due, r.last = 0, 0, 0, now
	return b
}

// insert adds seq to the received ranges and reports whether it was there
// already. The set keeps the newest maxRanges ranges: older holes are for
// the sender's loss detection long settled.
func (r *receiver) insert(seq uint64) (dup bool) {
	for i, g := range r.ranges {
		switch {
		case seq > g.hi:
			if seq == g.hi+1 {
				r.ranges[i].hi = seq
				if i > 0 && r.ranges[i-1].lo == seq+1 { // closes the gap above
					r.ranges[i-1].lo = g.lo
					r.ranges = append(r.ranges[:i], r.ranges[i+1:]...)
				}
				return false
			}
			if i > 0 && r.ranges[i-1].lo == seq+1 {
				r.ranges[i-1].lo = seq
				return false
			}
			if len(r.ranges) == maxRanges {
				r.ranges = r.ranges[:maxRanges-1]
			}
			r.ranges = append(r.ranges, seqRange{})
			copy(r.ranges[i+1:], r.ranges[i:])
			r.ranges[i] = seqRange{seq, seq}
			return false
		case seq >= g.lo:
			return true
		}
	}
	n := len(r.ranges)
	switch {
	case n > 0 && r.ranges[n-1].lo == seq+1:
		r.ranges[n-1].lo = seq
	case n < maxRanges:
		r.ranges = append(r.ranges, seqRange{seq, seq})
	}
	return false
}

// subSat is a − b saturated at the int64 limits.
func subSat(a, b int64) int64 {
	d := a - b
	if (a >= 0) != (b >= 0) && (d >= 0) != (a >= 0) {
		if a >= 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return d
}
