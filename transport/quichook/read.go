package quichook

import (
	"errors"
	"net"
	"net/netip"

	"golang.org/x/net/ipv4"

	"github.com/fresh-udp/fresh/clock"
)

// The read path: datagrams from the socket, shim ones handled and taken
// off, QUIC ones (shim header removed) handed to quic-go.

// readBufLen is the reader's buffer: any UDP payload.
const readBufLen = 1 << 16

// readBatch is how many datagrams one recvmmsg reads.
const readBatch = 16

// ReadMsgUDP is ReadFrom for quic-go's OOBCapablePacketConn (no control
// messages are passed on).
func (c *PacketConn) ReadMsgUDP(b, _ []byte) (n, oobn, flags int, addr *net.UDPAddr, err error) {
	n, a, err := c.ReadFrom(b)
	addr, _ = a.(*net.UDPAddr)
	return n, 0, 0, addr, err
}

// ReadBatch is quic-go's batched read: it fills ms with the QUIC
// datagrams of one recvmmsg (shim headers taken off, shim datagrams
// handled on the way), blocking only while it has none.
func (c *PacketConn) ReadBatch(ms []ipv4.Message, _ int) (int, error) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	k := 0
	for k < len(ms) {
		if c.rnext == c.rn {
			if k > 0 {
				return k, nil
			}
			n, err := c.batch.ReadBatch(c.rms, 0)
			if err != nil {
				return 0, err
			}
			c.rnext, c.rn = 0, n
		}
		m := &c.rms[c.rnext]
		c.rnext++
		from, ok := addrPort(m.Addr)
		if !ok || len(ms[k].Buffers) == 0 {
			continue
		}
		if n, ua, ok := c.handle(m.Buffers[0][:m.N], from, ms[k].Buffers[0]); ok {
			ms[k].N, ms[k].NN, ms[k].Flags, ms[k].Addr = n, 0, 0, ua
			k++
		}
	}
	return k, nil
}

// ReadFrom is quic-go's read: it returns the next QUIC datagram, with the
// shim header taken off, and handles shim datagrams (feedback, hellos) on
// the way. A malformed shim datagram is dropped and counted, never handed
// to quic-go.
func (c *PacketConn) ReadFrom(b []byte) (int, net.Addr, error) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	for {
		if c.rnext == c.rn {
			n, err := c.batch.ReadBatch(c.rms, 0)
			if err != nil {
				return 0, nil, err
			}
			c.rnext, c.rn = 0, n
		}
		m := &c.rms[c.rnext]
		c.rnext++
		from, ok := addrPort(m.Addr)
		if !ok {
			continue
		}
		if k, ua, ok := c.handle(m.Buffers[0][:m.N], from, b); ok {
			return k, ua, nil
		}
	}
}

// handle processes one received datagram d from addr. For a QUIC datagram
// (plain, or shimmed with the header taken off) it copies it into b and
// returns its length, the peer's address and true. The datagram is stamped
// now, as quic-go takes it, not once per batch read: the feedback's timing
// (and its ACK delay) runs on these stamps, and one stamp per batch, tried,
// cost the hook a fifth of its goodput through the emulated bottleneck in
// the first seconds while the race detector slowed quic-go's reads.
func (c *PacketConn) handle(d []byte, from netip.AddrPort, b []byte) (int, net.Addr, bool) {
	now, wallUS := c.now()
	c.mu.Lock()
	if len(d) == 0 || !isShim(d[0]) {
		c.st.plainReceived++
		var ua net.Addr
		if p := c.peers[from]; p != nil {
			ua = p.udp
			if !p.validated {
				p.rxBytes += int64(len(d)) // the anti-amplification budget counts every byte
			}
		}
		c.mu.Unlock()
		if ua == nil {
			ua = net.UDPAddrFromAddrPort(from)
		}
		if len(d) > len(b) {
			c.count(func(s *counters) { s.oversize++ })
			return 0, nil, false
		}
		return copy(b, d), ua, true
	}
	k, ua, ok := c.handleShim(d, from, b, now, wallUS)
	c.mu.Unlock()
	if c.replyTo != nil {
		// Feedback and hello answers go from the reading goroutine, outside
		// the lock so that the sender goroutine and quic-go's writes do
		// not wait for the syscall.
		c.writeOne(c.fbuf, c.replyOOB, c.replyTo)
		c.replyTo = nil
	}
	return k, ua, ok
}

// handleShim is handle's part for shim datagrams, under c.mu. A datagram
// to send back is left in c.fbuf, c.replyOOB, c.replyTo.
//
// What an off-path attacker, who can send with any source address but
// sees nothing sent to it, gets from each kind: data and feedback without
// the receiver's cookie for their source change nothing (a data
// datagram's QUIC payload still goes to quic-go, as it would without the
// hook); a hello creates an unvalidated entry and is answered with at
// most three times its bytes, and it never makes this end shim to the
// address (that takes the cookie back).
func (c *PacketConn) handleShim(d []byte, from netip.AddrPort, b []byte, now clock.Mono, wallUS int64) (int, net.Addr, bool) {
	switch d[0] {
	case typeData, typeDataEcho:
		h, payload, err := parseData(d)
		if err != nil {
			c.st.malformed++
			return 0, nil, false
		}
		if len(payload) > len(b) {
			c.st.oversize++
			return 0, nil, false
		}
		p := c.peers[from]
		if h.cookie != c.cookieOf(p, from) {
			c.st.unauthenticated++
			return copy(b, payload), c.udpOf(p, from), true
		}
		if p = c.validate(from); p == nil {
			return copy(b, payload), net.UDPAddrFromAddrPort(from), true
		}
		if !p.rx.inWindow(h.seq) {
			c.st.outOfWindow++
			return copy(b, payload), p.udp, true
		}
		c.st.shimReceived++
		if p.rx.onData(now, wallUS, &h, &c.cfg) {
			c.st.duplicates++
		}
		switch {
		case !p.haveCookie:
			// Validated, but its cookie was forgotten (it was evicted, or
			// its hello lost): feedback waits until a hello's answer
			// brings the cookie.
			c.askCookie(p, now)
		case p.rx.feedbackDue(now, &c.cfg):
			c.sendFeedback(p, now, wallUS)
		case p.rx.pending == 1 || p.rx.pending == c.cfg.AckEvery:
			c.wakeBy(p.rx.nextDue(&c.cfg)) // a new feedback deadline for the sender goroutine's timer
		}
		return copy(b, payload), p.udp, true
	case typeFeedback:
		var f feedback
		if err := parseFeedback(d, &f); err != nil {
			c.st.malformed++
			return 0, nil, false
		}
		p := c.peers[from]
		if p == nil || !p.hooked() {
			c.st.malformed++ // feedback for datagrams never sent
			return 0, nil, false
		}
		if f.cookie != p.myCookie {
			// Spoofed, or the peer took a spoofed hello's cookie for this
			// end's: a hello that echoes its cookie sets it right.
			c.st.unauthenticated++
			c.askCookie(p, now)
			return 0, nil, false
		}
		p.lastActive = now
		discarded := p.tx.owdDiscarded
		if p.tx.onFeedback(now, wallUS, &f) > 0 {
			c.st.malformed++ // ranges acknowledging what was never sent
		}
		c.st.owdDiscarded += p.tx.owdDiscarded - discarded
		c.st.feedbackReceived++
		if p.queue.n > 0 {
			c.wakeBy(now) // the window may have opened for what waits
		}
		c.wakeBy(p.tx.deadline()) // a time-threshold loss may be due sooner
	case typeHello, typeHelloAck:
		c.handleHello(d, from, now)
	default:
		c.st.malformed++
	}
	return 0, nil, false
}

// handleHello processes a hello or its answer, under c.mu. One that echoes
// this end's cookie for the address validates it and sets the peer's
// cookie for good; a hello without that only creates or refreshes an
// unvalidated entry and replaces a cookie not yet confirmed. A hello is
// answered, within the anti-amplification limit; an answer is not.
func (c *PacketConn) handleHello(d []byte, from netip.AddrPort, now clock.Mono) {
	h, err := parseHello(d)
	switch {
	case errors.Is(err, errOldVersion):
		// Left unanswered: neither end shims, the connection runs as
		// plain QUIC. Debug, not higher: anyone can send one.
		c.st.versionMismatch++
		c.cfg.Logger.Debug("quichook: hello of another shim version; the peer stays plain QUIC", "peer", from, "version", d[1], "ours", version)
		return
	case err != nil:
		c.st.malformed++
		return
	}
	p := c.peers[from]
	mine := c.cookieOf(p, from)
	echoed := h.hasEcho && h.echo == mine
	if h.typ == typeHelloAck && !echoed {
		c.st.unauthenticated++ // answers a hello this end never sent to that address
		return
	}
	if echoed {
		if p = c.validate(from); p == nil {
			return
		}
		p.peerCookie, p.haveCookie, p.confirmed = h.cookie, true, true
	} else {
		if p = c.peerFor(from); p == nil {
			return
		}
		if !p.validated {
			p.rxBytes += int64(len(d))
		}
		if !p.confirmed {
			p.peerCookie, p.haveCookie = h.cookie, true
		}
	}
	c.st.hellosReceived++
	if h.typ == typeHello {
		c.replyHello(p, hello{typ: typeHelloAck, cookie: p.myCookie, hasEcho: true, echo: h.cookie})
	}
}

// askCookie sends p a hello that echoes its cookie, if it has one, and
// asks for an answer (which carries the cookie again): at most one per
// helloInterval. Under c.mu.
func (c *PacketConn) askCookie(p *peer, now clock.Mono) {
	if p.lastHello != 0 && now.Sub(p.lastHello) < helloInterval {
		return
	}
	p.lastHello = now
	if c.replyHello(p, p.hello()) {
		c.st.hellosSent++
	}
}

// hello is the hello this end sends p: its cookie, and the echo of p's if
// it has one.
func (p *peer) hello() hello {
	return hello{typ: typeHello, cookie: p.myCookie, hasEcho: p.haveCookie, echo: p.peerCookie}
}

// replyHello leaves h for the reader to send to p, if the
// anti-amplification limit allows it. Under c.mu.
func (c *PacketConn) replyHello(p *peer, h hello) bool {
	n := helloLen
	if h.hasEcho {
		n = helloEchoLen
	}
	if !c.replyAllowed(p, n) {
		return false
	}
	c.fbuf = appendHello(c.fbuf[:0], h)
	c.replyOOB, c.replyTo = c.oobFor(1, p), p.udp
	return true
}

// udpOf is the address quic-go is told a datagram from came from.
func (c *PacketConn) udpOf(p *peer, from netip.AddrPort) *net.UDPAddr {
	if p != nil {
		return p.udp
	}
	return net.UDPAddrFromAddrPort(from)
}

// sendFeedback builds p's feedback for the reader to send. Under c.mu.
func (c *PacketConn) sendFeedback(p *peer, now clock.Mono, wallUS int64) {
	c.fbuf = p.rx.build(now, wallUS, p.peerCookie, c.fbuf[:0])
	c.replyOOB, c.replyTo = c.oobFor(1, p), p.udp
	c.st.feedbackSent++
}
