package session

import (
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// sendStream is the sending half of the reliable byte stream: the bytes the
// application wrote and the peer has not yet acknowledged, what was sent,
// what was lost. Retransmissions resend the same bytes under new packet
// numbers. Memory is bounded by limit: Write takes at most limit − buffered.
//
// limit starts small (initialSendBuffer) and doubles, up to maxLimit
// (Config.SendBuffer), while the buffer is what holds the sender back: see
// autoTune. A sender that the path, the peer or the application limits
// keeps a small buffer.
type sendStream struct {
	buf      []byte // bytes [base, base+len(buf)), a window into arr
	arr      []byte // backing array, reused: no allocation in steady state
	base     int64  // everything below is acknowledged and freed
	next     int64  // next byte never sent
	acked    ranges // acknowledged bytes at or above base
	retx     []span // lost ranges to send again, oldest first
	limit    int    // the bound on buffered bytes now
	maxLimit int    // limit never grows beyond (0: limit, fixed)

	// Auto-tuning epoch: when it started and base then.
	epochAt   clock.Mono
	epochBase int64

	finSet   bool // CloseWrite was called: the stream ends at end()
	finSent  bool // a packet carried FIN (and is not known lost)
	finAcked bool
}

// end is the offset after the last byte written.
func (s *sendStream) end() int64 { return s.base + int64(len(s.buf)) }

// space is how many more bytes Write may take now.
func (s *sendStream) space() int { return max(s.limit-len(s.buf), 0) }

// write appends as much of p as fits and returns the count.
func (s *sendStream) write(p []byte) int {
	if s.finSet {
		return 0
	}
	n := min(len(p), s.space())
	if len(s.buf)+n > cap(s.buf) {
		s.compact(len(s.buf) + n)
	}
	s.buf = append(s.buf, p[:n]...)
	return n
}

// pending reports whether there is anything to (re)send.
func (s *sendStream) pending() bool {
	return len(s.retx) > 0 || s.next < s.end() || (s.finSet && !s.finSent)
}

// chunk picks the next bytes to send: lost bytes first, then new ones, at
// most maxLen and never beyond the peer's flow-control limit peerMax. It
// returns the offset, the bytes (aliasing the buffer) and whether FIN goes
// with them; ok is false when nothing may be sent.
func (s *sendStream) chunk(maxLen int, peerMax int64) (off int64, data []byte, fin, retx, ok bool) {
	for len(s.retx) > 0 {
		r := s.retx[0]
		lo, hi, gap := s.acked.firstGap(max(r.lo, s.base), r.hi)
		if !gap {
			s.retx = s.retx[1:] // acknowledged after all
			continue
		}
		hi = min(hi, lo+int64(maxLen))
		if hi < r.hi {
			s.retx[0].lo = hi
		} else {
			s.retx = s.retx[1:]
		}
		data = s.buf[lo-s.base : hi-s.base]
		fin = s.finSet && hi == s.end() && !s.finSent
		if fin {
			s.finSent = true
		}
		return lo, data, fin, true, true
	}
	n := min(int64(maxLen), s.end()-s.next, peerMax-s.next)
	if n < 0 {
		n = 0
	}
	fin = s.finSet && !s.finSent && s.next+n == s.end()
	if n == 0 && !fin {
		return 0, nil, false, false, false
	}
	off = s.next
	data = s.buf[off-s.base : off-s.base+n]
	s.next += n
	if fin {
		s.finSent = true
	}
	return off, data, fin, false, true
}

// blocked reports whether new data waits only for the peer's flow-control
// limit (so the sender should probe for a window update).
func (s *sendStream) blocked(peerMax int64) bool {
	return len(s.retx) == 0 && s.next < s.end() && s.next >= peerMax
}

// onAcked records that [off, off+n) (and FIN, if fin) arrived, and frees the
// contiguous acknowledged prefix.
func (s *sendStream) onAcked(off int64, n int, fin bool) {
	if fin {
		s.finAcked = true
	}
	s.acked.add(off, off+int64(n))
	newBase := s.acked.prefix(s.base)
	if newBase > s.base {
		k := int(newBase - s.base)
		s.buf = s.buf[k:]
		s.base = newBase
		s.acked.trimBelow(newBase)
	}
}

// onLost queues [off, off+n) for retransmission.
func (s *sendStream) onLost(off int64, n int, fin bool) {
	if fin && !s.finAcked {
		s.finSent = false
	}
	if n > 0 && off+int64(n) > s.base {
		s.retx = append(s.retx, span{max(off, s.base), off + int64(n)})
	}
}

// done reports whether every byte and the FIN were acknowledged.
func (s *sendStream) done() bool { return s.finSet && s.finAcked && len(s.buf) == 0 }

// unacked is how many written bytes the peer has not acknowledged.
func (s *sendStream) unacked() int { return len(s.buf) }

// initialSendBuffer is the send buffer's first limit.
const initialSendBuffer = 64 << 10

// limitedByBuffer reports whether the buffer is what stops the sender: the
// writer is (nearly) out of space, every buffered byte has been sent, and
// neither the peer's limit peerMax nor the congestion window (canSend)
// would stop another packet.
func (s *sendStream) limitedByBuffer(canSend bool, peerMax int64) bool {
	return canSend && s.limit < s.maxLimit && !s.finSet && !s.pending() &&
		s.space() < s.limit/8 && s.next < peerMax
}

// autoTune runs at now when the buffer limits the sender, minRTT and srtt
// being the path's smallest and smoothed round trips and cwnd the
// congestion window. Two rules grow the limit (up to maxLimit); either is
// enough.
//
// The window rule: on a path whose smoothed RTT is at least
// windowRuleRTT, a buffer that stops the sender while the congestion
// window would let more through, and holds less than that window,
// doubles. The controller owns the question of what the path takes; the
// buffer must not answer it instead (Linux's send buffer follows the
// congestion window likewise: tcp_sndbuf_expand keeps it at twice the
// window). The rate rule below cannot see two common paths: one whose
// round trip another flow's standing queue stretched past bufferRTTs
// minimum RTTs (a latecomer beside a buffer filler, a flow that turned
// competitive, any flow behind a bloated cellular buffer), where no
// buffer's worth can be acknowledged that fast; and a lossy one, where
// every hole holds the acknowledged base still for a round trip. Without
// this rule such a flow stays at the window its first buffers allow,
// whatever its controller says.
//
// The rate rule: once a buffer's worth was acknowledged since the epoch
// began, and at least one smoothed RTT passed (a shorter epoch measures
// the burstiness of ACKs, not the path), it closes the epoch, and doubles
// limit if that took less than bufferRTTs minimum RTTs per buffer: the
// buffer then holds less than bufferRTTs bandwidth-delay products,
// measured against the path's propagation delay rather than the smoothed
// RTT, which grows with whatever the sender queues (on a loopback or
// CPU-bound path every byte in flight is queued somewhere, so a
// smoothed-RTT criterion would grow the buffer to its maximum without
// sending any faster).
func (s *sendStream) autoTune(now clock.Mono, minRTT, srtt time.Duration, cwnd int64) {
	if cwnd > 0 && int64(s.limit) < cwnd && srtt >= windowRuleRTT {
		s.limit = min(2*s.limit, s.maxLimit)
		s.epochAt, s.epochBase = now, s.base
		return
	}
	acked := s.base - s.epochBase
	if minRTT <= 0 || acked < int64(s.limit) || now.Sub(s.epochAt) < srtt {
		return
	}
	frac := float64(acked) / float64(s.limit)
	if now.Sub(s.epochAt) < time.Duration(bufferRTTs*frac*float64(minRTT)) {
		s.limit = min(2*s.limit, s.maxLimit)
	}
	s.epochAt, s.epochBase = now, s.base
}

// windowRuleRTT is the smoothed RTT below which the window rule does not
// apply. Under it the round trip is mostly the host's own queueing (on
// loopback, or a LAN, a sender's bytes wait in socket buffers and for the
// scheduler, and a delay-based window that accepts a few milliseconds of
// queue asks for megabytes there, which buy a loopback upload nothing),
// and the rate rule's minimum RTT measures the path well enough. Above
// it, a stretched or lossy round trip is the network's, and the window
// rule is needed.
const windowRuleRTT = 10 * time.Millisecond

// bufferRTTs is how many minimum-RTT bandwidth-delay products the send
// buffer grows to hold: one is in flight; the rest covers ACK delay and a
// sender that is not scheduled the moment an ACK frees room.
const bufferRTTs = 4

// compact makes room for need bytes. The backing array grows (doubling)
// up to twice the buffer limit, so that after it has grown every compaction
// frees at least as much room as it copies: moving the live bytes (at most
// limit) to the front happens at most once per limit bytes written, an
// amortised copy of at most one byte per byte sent. (With an array of
// exactly limit bytes, a writer that keeps the buffer full would move the
// whole buffer on every ACK, a large part of the CPU in the loopback
// profile: bench/results/transport.md, "How fresh got there".)
func (s *sendStream) compact(need int) {
	if 2*need > cap(s.arr) && cap(s.arr) < 2*max(s.limit, need) {
		size := max(2*cap(s.arr), 2*need, 64<<10)
		s.arr = make([]byte, 0, min(size, 2*max(s.limit, need)))
	}
	n := copy(s.arr[:len(s.buf)], s.buf)
	s.buf = s.arr[:n]
}
