package session

// recvStream is the receiving half of the reliable byte stream: a ring of
// window bytes holding everything from the next byte the application reads
// (readOff) up to readOff+window, which is exactly what flow control lets
// the peer send (MaxData, RFC 9000 §4.1). Memory is fixed at window bytes
// whatever the peer does, and a slow reader simply closes the window.
type recvStream struct {
	ring    []byte
	readOff int64
	have    ranges // received bytes at or above readOff
	finOff  int64  // -1 until FIN arrives
	// advertised is the MaxData last sent to the peer.
	advertised int64
}

func newRecvStream(window int) recvStream {
	return recvStream{ring: make([]byte, window), finOff: -1, advertised: int64(window)}
}

// maxData is the flow-control limit the receiver can grant now.
func (r *recvStream) maxData() int64 { return r.readOff + int64(len(r.ring)) }

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
