package quichook

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// The peer table: one entry per remote address, with its cookies, its
// controller and clock state.
//
// An entry is validated once the address has shown this end's cookie for
// it (in a data or feedback datagram, or echoed in a hello or its answer):
// it receives at that address and runs the hook. Until then it is one of
// the unvalidated entries — made by a hello, or by quic-go writing to a
// new address — which an off-path attacker can create at will by
// spoofing hellos (or QUIC Initials that quic-go answers). The two kinds
// are bounded apart, Config.MaxPeers each, so that spoofed entries only
// ever push out each other: a new unvalidated entry at the bound replaces
// the unvalidated one heard from longest ago, while a validated peer
// makes room only for another validated one, and only once it has been
// silent for peerIdle with nothing queued or in flight.

// peer is one remote address: whether it has the hook, and the sending and
// receiving halves with their controller and clock state.
type peer struct {
	addr netip.AddrPort
	udp  *net.UDPAddr
	v6   bool // reached through the IPv6 control messages
	// validated: the address showed myCookie (see above). myCookie is
	// this end's cookie for it (PacketConn.cookieFor), peerCookie its cookie for
	// this end, which every shim datagram to it carries: haveCookie once
	// a hello told it, confirmed once the hello proved it came from the
	// address (it echoed myCookie). An unconfirmed cookie may be a spoofed
	// hello's; a later hello replaces it, a confirmed one only a hello
	// that echoes myCookie.
	validated            bool
	myCookie, peerCookie uint64
	haveCookie           bool
	confirmed            bool
	// rxBytes and txBytes count, while the entry is unvalidated, the bytes
	// received from the address and the shim's own replies sent to it:
	// the replies stay within 3·rxBytes (RFC 9000 §8's anti-amplification
	// limit), so that the hook cannot be used to reflect more than that
	// towards an address someone else wrote.
	rxBytes, txBytes int64
	hellos           int        // hellos sent before quic-go's first datagrams
	lastHello        clock.Mono // last hello sent to ask for the cookie again (0: none)
	// The sending and receiving halves and the queue, from validation on
	// (rx is nil before).
	tx    sender
	rx    *receiver
	queue ring
	slots chan struct{} // one token per queued datagram: the queue bound
	// Queue occupancy over time: how long datagrams waited in the queue
	// (the hook's window or pacer binding) against how long it was empty
	// (quic-go, its own window or pacer, or the application binding).
	busy, idle    time.Duration
	lastAccounted clock.Mono
	lastActive    clock.Mono // last datagram to or from it
}

// hooked reports whether datagrams to p go with the shim: p proved it has
// the hook and receives at its address, and told this end its cookie.
func (p *peer) hooked() bool { return p.validated && p.haveCookie }

// peerIdle is how long a validated peer must have been silent, with
// nothing queued or in flight, before its state may make room for a new
// validated one.
const peerIdle = 30 * time.Second

// helloInterval spaces the hellos a peer is sent outside its first
// datagrams (to ask for its cookie again: feedback that did not carry
// this end's cookie, a retransmission timeout, a validated peer whose
// cookie was forgotten): however often the reason comes, an address gets
// at most one such hello per interval.
const helloInterval = 200 * time.Millisecond

// cookieFor is this end's cookie for addr: the first 8 bytes of
// HMAC-SHA256 (RFC 2104) under the PacketConn's secret of the address and port.
// It needs no state: a peer forgotten and back still shows the right one.
// Under c.mu (c.mac is shared).
func (c *PacketConn) cookieFor(addr netip.AddrPort) uint64 {
	var b [18]byte
	a := addr.Addr().As16()
	copy(b[:], a[:])
	binary.BigEndian.PutUint16(b[16:], addr.Port())
	c.mac.Reset()
	c.mac.Write(b[:])
	c.macSum = c.mac.Sum(c.macSum[:0])
	return binary.BigEndian.Uint64(c.macSum)
}

// cookieOf is this end's cookie for from, p its entry if it has one.
func (c *PacketConn) cookieOf(p *peer, from netip.AddrPort) uint64 {
	if p != nil {
		return p.myCookie
	}
	return c.cookieFor(from)
}

// peerFor returns addr's entry, creating an unvalidated one if there is
// none (making room, at the bound, by forgetting the unvalidated entry
// heard from longest ago). Under c.mu.
func (c *PacketConn) peerFor(addr netip.AddrPort) *peer {
	now := c.clk.Now()
	if p := c.peers[addr]; p != nil {
		p.lastActive = now
		return p
	}
	if len(c.peers)-c.nValidated >= c.cfg.MaxPeers {
		c.evictUnvalidated()
	}
	return c.newPeer(addr, now)
}

// validate returns addr's entry, validated: the address just showed this
// end's cookie. A new validated peer at the bound takes the place of one
// silent for peerIdle (evictIdle); if none is, it is refused (nil), and
// its datagrams pass as plain QUIC, counted in Stats.PeersRefused.
// Under c.mu.
func (c *PacketConn) validate(addr netip.AddrPort) *peer {
	now := c.clk.Now()
	p := c.peers[addr]
	if p != nil {
		p.lastActive = now
		if p.validated {
			return p
		}
	}
	if c.nValidated >= c.cfg.MaxPeers && !c.evictIdle(now) {
		c.st.peersRefused++
		return nil
	}
	if p == nil {
		p = c.newPeer(addr, now)
	}
	// The controller, clock state and queue come with validation: an
	// entry anyone can create by spoofing costs a map slot and its
	// cookies, no more.
	ctl, err := c.cfg.NewController(cc.ByteCount(c.cfg.MaxDatagram))
	if err == nil && ctl == nil {
		err = errors.New("NewController returned no controller")
	}
	if err != nil {
		c.cfg.Logger.Error("quichook: controller", "peer", addr, "err", err)
		c.st.peersRefused++
		return nil
	}
	rx, err := newReceiver()
	if err != nil {
		c.st.peersRefused++
		return nil
	}
	p.tx, p.rx = newSender(ctl, c.cfg.MaxAckDelay), rx
	p.slots, p.queue = make(chan struct{}, c.cfg.QueuePackets), ring{b: make([]*outBuf, c.cfg.QueuePackets)}
	p.lastAccounted = now
	p.validated = true
	p.rxBytes, p.txBytes = 0, 0
	c.nValidated++
	return p
}

// newPeer adds an unvalidated entry for addr. Under c.mu.
func (c *PacketConn) newPeer(addr netip.AddrPort, now clock.Mono) *peer {
	ua := net.UDPAddrFromAddrPort(addr)
	if c.v6 && addr.Addr().Is4() {
		// A dual-stack socket reaches IPv4 peers through mapped addresses
		// and marks them with IP_TOS.
		ua = net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.AddrFrom16(addr.Addr().As16()), addr.Port()))
	}
	p := &peer{addr: addr, lastActive: now, udp: ua, v6: addr.Addr().Is6(), myCookie: c.cookieFor(addr)}
	c.peers[addr] = p
	return p
}

// evictIdle forgets the validated peer silent for longest if it has been
// for peerIdle with nothing queued or in flight, and reports whether it
// did. A forgotten peer that comes back is validated again by the cookie
// its datagrams carry (it needs no state here), with a fresh controller.
// Under c.mu.
func (c *PacketConn) evictIdle(now clock.Mono) bool {
	var oldest *peer
	for _, p := range c.peers {
		if p.validated && p.queue.n == 0 && p.tx.inFlight() == 0 && now.Sub(p.lastActive) >= peerIdle &&
			(oldest == nil || p.lastActive.Before(oldest.lastActive)) {
			oldest = p
		}
	}
	if oldest == nil {
		return false
	}
	delete(c.peers, oldest.addr)
	c.nValidated--
	c.st.peersEvicted++
	return true
}

// evictUnvalidated forgets the unvalidated entry heard from longest ago.
// An unvalidated entry is never hooked, so it has nothing queued or in
// flight. Under c.mu.
func (c *PacketConn) evictUnvalidated() {
	var oldest *peer
	for _, p := range c.peers {
		if !p.validated && (oldest == nil || p.lastActive.Before(oldest.lastActive)) {
			oldest = p
		}
	}
	if oldest != nil {
		delete(c.peers, oldest.addr)
		c.st.unvalidatedEvicted++
	}
}

// replyAllowed reports whether a reply of n bytes (a hello, its answer,
// feedback) may go to p now, and counts it: to an unvalidated address at
// most three times what it sent (RFC 9000 §8.1). Under c.mu.
func (c *PacketConn) replyAllowed(p *peer, n int) bool {
	if p.validated {
		return true
	}
	if p.txBytes+int64(n) > 3*p.rxBytes {
		c.st.amplificationLimited++
		return false
	}
	p.txBytes += int64(n)
	return true
}

func (c *PacketConn) oobFor(class int, p *peer) []byte {
	if p.v6 {
		return c.oob[class][1]
	}
	return c.oob[class][0]
}

// account adds the time since the last call to the peer's busy or idle
// total. Under c.mu.
func (c *PacketConn) account(p *peer, now clock.Mono) {
	d := now.Sub(p.lastAccounted)
	if d <= 0 || !p.validated {
		return
	}
	if p.queue.n > 0 {
		p.busy += d
	} else if p.tx.inFlight() > 0 {
		p.idle += d
	}
	p.lastAccounted = now
}
