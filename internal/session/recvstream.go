package session

import (
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// recvStream is the receiving half of the reliable byte stream: a ring
// holding everything from the next byte the application reads (readOff) up
// to readOff+len(ring), which is exactly what flow control lets the peer
// send (MaxData, RFC 9000 §4.1). A slow reader simply closes the window.
//
// The ring starts small (initialRecvWindow) and doubles, up to maxRing
// (Config.ReceiveWindow), when the reader consumes windows quickly compared
// with the RTT: the auto-tuning of quic-go's flow controller. A connection
// that carries little stream data never holds more than the initial ring;
// one that needs a large window to fill its path gets it within a few RTTs.
// The limit advertised (readOff + len(ring)) never shrinks: readOff only
// grows and the ring only grows.
type recvStream struct {
	ring    []byte
	maxRing int // the ring never grows beyond (Config.ReceiveWindow)
	readOff int64
	have    ranges // received bytes at or above readOff
	maxGaps int    // the most holes have may hold (0: unbounded)
	finOff  int64  // -1 until FIN arrives
	// advertised is the MaxData last sent to the peer.
	advertised int64

	// Auto-tuning epoch: when it started and readOff then.
	epochAt  clock.Mono
	epochOff int64
}

// initialRecvWindow is the receive ring's first size and, as the sender's
// assumption before the peer's first ACK, its initial MaxData (both ends
// cap it at their ReceiveWindow). Every receiver accepts this much at
// first, so it must not change without a new wire version.
const initialRecvWindow = 64 << 10

// newRecvStream returns a stream whose ring starts at min(initial,
// maxWindow) bytes and may grow to maxWindow, created at now. It holds any
// number of separate received ranges until limitGaps bounds them.
//
// The ring is not allocated until stream data arrives: until then it is a
// window onto unallocatedRing, so its length still is the window the
// receiver grants. A connection that only carries updates (a monitor's
// sources) then never holds a ring, and a peer cannot make the receiver
// allocate one without sending data on a connection it opened.
func newRecvStream(initial, maxWindow int, now clock.Mono) recvStream {
	n := min(initial, maxWindow, len(unallocatedRing))
	return recvStream{ring: unallocatedRing[:n:n], maxRing: maxWindow, finOff: -1, advertised: int64(n), epochAt: now}
}

// unallocatedRing stands in for every receive ring no byte was written to
// yet. It is never written (onData allocates first) and reads of it never
// happen (read returns only bytes onData stored), so one zeroed array,
// shared by every session, serves; being zero, its pages cost nothing
// until touched.
var unallocatedRing [initialRecvWindow]byte

// allocated reports whether the ring has its own memory.
func (r *recvStream) allocated() bool {
	return len(r.ring) == 0 || &r.ring[0] != &unallocatedRing[0]
}

// limitGaps bounds the holes held to n (see room). The set itself may
// hold one range more: the one at the next byte to read, above no hole.
func (r *recvStream) limitGaps(n int) { r.maxGaps, r.have.maxRanges = n, n+1 }

// maxData is the flow-control limit the receiver can grant now.
func (r *recvStream) maxData() int64 { return r.readOff + int64(len(r.ring)) }

// room reports whether [off, off+n) can be stored without holding more
// than maxGaps holes: received ranges with missing bytes below them. A
// frame that would open one more hole is dropped unacknowledged by the
// caller: the sender declares it lost and sends it again, lowest offsets
// first, so into a hole's edge, which is always taken (it opens no new
// hole), as is a frame at the next byte to read (nothing is missing below
// it). Frames the window or FIN forbid are left to onData to reject.
func (r *recvStream) room(off int64, n int) bool {
	end := off + int64(n)
	if end <= r.readOff || end > r.maxData() || r.maxGaps == 0 {
		return true
	}
	lo := max(off, r.readOff)
	return lo == r.readOff || r.holes() < r.maxGaps || r.have.touches(lo, end)
}

// holes is how many received ranges have missing bytes below them.
func (r *recvStream) holes() int {
	n := len(r.have.r)
	if n > 0 && r.have.r[0].lo <= r.readOff {
		n--
	}
	return n
}

// onData stores [off, off+len(p)). It reports false for data beyond the
// window or a FIN that contradicts an earlier one (a protocol violation,
// counted and dropped by the caller).
func (r *recvStream) onData(off int64, p []byte, fin bool) bool {
	end := off + int64(len(p))
	if end > r.maxData() {
		return false
	}
	if fin {
		if r.finOff >= 0 && r.finOff != end {
			return false
		}
		r.finOff = end
	}
	if r.finOff >= 0 && end > r.finOff {
		return false
	}
	if end <= r.readOff {
		return true // duplicate of what was already read
	}
	if off < r.readOff {
		p = p[r.readOff-off:]
		off = r.readOff
	}
	if !r.room(off, int(end-off)) {
		return true // no room: dropped, not a violation (the caller checks first)
	}
	if !r.allocated() {
		r.ring = make([]byte, len(r.ring))
	}
	start := off
	n := int64(len(r.ring))
	for len(p) > 0 {
		i := off % n
		c := copy(r.ring[i:], p)
		p = p[c:]
		off += int64(c)
	}
	r.have.add(start, end)
	return true
}

// readable is how many bytes are ready in order.
func (r *recvStream) readable() int { return int(r.have.prefix(r.readOff) - r.readOff) }

// read copies ready bytes into p.
func (r *recvStream) read(p []byte) int {
	avail := r.readable()
	n := min(len(p), avail)
	ring := int64(len(r.ring))
	done := 0
	for done < n {
		i := (r.readOff + int64(done)) % ring
		c := copy(p[done:n], r.ring[i:])
		done += c
	}
	r.readOff += int64(n)
	r.have.trimBelow(r.readOff)
	return n
}

// eof reports whether the application has read up to the FIN.
func (r *recvStream) eof() bool { return r.finOff >= 0 && r.readOff >= r.finOff }

// windowUpdateDue reports whether the reader freed enough that the peer
// should hear of the new limit: a quarter of the window, so a sender
// blocked on flow control is not starved (RFC 9000 §4.2 leaves the
// threshold to the implementation).
func (r *recvStream) windowUpdateDue() bool {
	return r.maxData()-r.advertised >= int64(len(r.ring))/4
}

// autoTune runs when the receiver is about to advertise its limit (an ACK
// goes out) at now, with rtt the receiver's estimate of the round trip (0:
// none yet). Once the reader consumed more than half the window since the
// epoch began, it closes the epoch, and doubles the ring (up to maxRing)
// if that took less than four RTTs per window: the window, not the path,
// then limits the sender, which can only send a window per RTT. (A window
// the reader took longer to empty is either enough or waiting for the
// reader; growing it would only hold more memory.)
func (r *recvStream) autoTune(now clock.Mono, rtt time.Duration) {
	if len(r.ring) >= r.maxRing {
		return
	}
	read := r.readOff - r.epochOff
	if read <= int64(len(r.ring))/2 {
		return
	}
	if rtt > 0 {
		frac := float64(read) / float64(len(r.ring))
		if now.Sub(r.epochAt) < time.Duration(4*frac*float64(rtt)) {
			r.grow(min(2*len(r.ring), r.maxRing))
		}
	}
	r.epochAt, r.epochOff = now, r.readOff
}

// grow replaces the ring by one of size bytes (≥ the current size), moving
// every byte the window may hold, [readOff, readOff+len(ring)), from its
// place modulo the old size to its place modulo the new one. Holes move
// with it; they are not in have, so never read.
func (r *recvStream) grow(size int) {
	old, on := r.ring, int64(len(r.ring))
	if int64(size) <= on {
		return
	}
	ring, nn := make([]byte, size), int64(size)
	for off, end := r.readOff, r.readOff+on; off < end; {
		i, j := off%on, off%nn
		c := min(on-i, nn-j, end-off)
		copy(ring[j:j+c], old[i:i+c])
		off += c
	}
	r.ring = ring
}

// closeAt ends the stream at the last byte received, when the peer closed
// normally (closeNormal: it saw every byte acknowledged) before its FIN
// arrived. With a hole below that byte the peer broke that promise, and
// the stream is left without a FIN, so Read reports the close, not EOF.
func (r *recvStream) closeAt() {
	if r.finOff >= 0 {
		return
	}
	end := r.have.end(r.readOff)
	if r.have.prefix(r.readOff) == end {
		r.finOff = end
	}
}
