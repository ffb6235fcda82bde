package transport

import (
	"net"
	"net/netip"

	"github.com/fresh-udp/fresh/internal/session"
)

// paths is a connection's table of its peer's addresses, as the session's
// migration rules (internal/session, migrate.go) name them: the current
// address, the previous one (the last validated, to fall back to, while a
// new one is validated) and the candidate (the latest address an
// authentic datagram came from without moving the connection, which a
// PathResponse answers). Guarded by Conn.mu.
type paths struct {
	cur, prev, cand peerAddr
}

// peerAddr is one address in both forms: netip for comparing with a
// datagram's source, *net.UDPAddr for sending (one pointer per address,
// so that the send batch groups datagrams to it for GSO).
type peerAddr struct {
	ap  netip.AddrPort
	udp *net.UDPAddr
}

func newPeerAddr(ap netip.AddrPort) peerAddr { return peerAddr{ap, net.UDPAddrFromAddrPort(ap)} }

// path names a datagram's source for the session.
func (p *paths) path(from netip.AddrPort) session.Path {
	switch {
	case from == p.cur.ap:
		return session.PathCurrent
	case p.prev.udp != nil && from == p.prev.ap:
		return session.PathPrevious
	}
	return session.PathOther
}

// apply updates the table after the session's verdict v on a datagram from
// from (named path); it reports whether the current address changed.
func (p *paths) apply(v session.Verdict, path session.Path, from netip.AddrPort) bool {
	switch v {
	case session.Accepted, session.Refused:
		if path == session.PathOther && from != p.cand.ap {
			p.cand = newPeerAddr(from)
		}
	case session.Moved, session.MovedForget:
		old, to := p.cur, p.prev
		if path != session.PathPrevious {
			to = newPeerAddr(from)
		} else {
			p.prev = peerAddr{}
		}
		p.cur = to
		if v == session.Moved {
			p.prev = old
		}
		return true
	}
	return false
}

// revert goes back to the previous address after a failed validation.
func (p *paths) revert() {
	if p.prev.udp != nil {
		p.cur, p.prev = p.prev, peerAddr{}
	}
}

// dest is where a datagram for path goes.
func (p *paths) dest(path session.Path) *net.UDPAddr {
	switch {
	case path == session.PathPrevious && p.prev.udp != nil:
		return p.prev.udp
	case path == session.PathOther && p.cand.udp != nil:
		return p.cand.udp
	}
	return p.cur.udp
}
