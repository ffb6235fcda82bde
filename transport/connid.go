package transport

import (
	"crypto/rand"
	"encoding/binary"
	"net/netip"

	"github.com/fresh-udp/fresh/internal/session"
	"github.com/fresh-udp/fresh/internal/wire"
)

// Server-chosen connection IDs in the QUIC-LB plaintext layout
// (draft-ietf-quic-load-balancers, "First CID Octet" and "Plaintext CID
// Algorithm"), in fresh's 8-byte IDs:
//
//	+--------+----------------+------------------------+
//	| CR | L | server ID (n)  | nonce (7 − n, ≥ 4)     |
//	+--------+----------------+------------------------+
//
// CR (3 bits) is the configuration rotation, 0b111 for an ID no load
// balancer can route; L (5 bits) is the ID's length less one (7), the
// draft's length self-description, so a load balancer needs no length
// configured. The nonce is random, not a counter: it must not let an
// observer link two connections of one server (the draft's privacy
// consideration).
const (
	cidLen            = 8
	maxServerIDLen    = cidLen - 1 - 4 // the draft's minimum nonce is 4 bytes
	maxConfigRotation = 6
	unroutable        = 0b111
)

// newServerID draws a connection ID for a connection the Listener
// accepts. It is never 0 (which in an Accept means "keep the client's").
func (t *Transport) newServerID() uint64 {
	var b [cidLen]byte
	for {
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
		t.idPrefix(b[:])
		if id := binary.BigEndian.Uint64(b[:]); id != 0 {
			return id
		}
	}
}

// idPrefix writes the part every ID the Transport's Listener issues
// starts with into b (the first octet, then ServerID) and returns its
// length in bytes.
func (t *Transport) idPrefix(b []byte) int {
	cr := byte(unroutable)
	if len(t.ServerID) > 0 {
		cr = t.ConfigRotation
	}
	b[0] = cr<<5 | (cidLen - 1)
	return 1 + copy(b[1:], t.ServerID)
}

// issuedIDs is the set of connection IDs the Transport's Listener issues:
// those with its ServerID (and ConfigRotation) or, without one, every
// unroutable ID. Its stateless resets answer those alone (reset.go).
func (t *Transport) issuedIDs() session.IssuedIDs {
	var b [cidLen]byte
	n := t.idPrefix(b[:])
	return session.IssuedIDs{Prefix: binary.BigEndian.Uint64(b[:]), Len: n}
}

// ServerIDOf returns the server ID of a connection ID chosen by a
// Listener whose Transport has a ServerID of n bytes, as a load balancer
// or an SO_REUSEPORT program reads it: ok is false for an ID of another
// configuration (an unroutable one, or a client's during the handshake,
// which a load balancer routes by other means, e.g. the 4-tuple).
func ServerIDOf(connID uint64, n int, configRotation uint8) (serverID []byte, ok bool) {
	var b [cidLen]byte
	binary.BigEndian.PutUint64(b[:], connID)
	if n < 1 || n > maxServerIDLen || b[0]>>5 != configRotation || b[0]&0x1f != cidLen-1 {
		return nil, false
	}
	return b[1 : 1+n], true
}

// otherVersion routes a datagram of another protocol version (whose
// connection ID e, ok looked up): a VersionNegotiation for one of our
// client connections goes to it, from its peer's address only (the
// session then decides whether it ends the handshake); an Initial-sized
// datagram for no connection gets a VersionNegotiation from a Listener,
// so that a client of another version fails at once rather than at its
// handshake timeout. The answer is smaller than the datagram it answers
// and keeps no state, as a Retry: it amplifies nothing (RFC 9000 §6.1,
// §8). Anything else is dropped and counted as malformed.
func (t *Transport) otherVersion(b []byte, from netip.AddrPort, e *entry, ok bool, ln *Listener) *entry {
	ver, id, _ := wire.PeekVersion(b)
	switch {
	case ok && e.ln == nil && e.addr == from && ver == 0:
		return e
	case !ok && ln != nil && ver != 0 && len(b) >= wire.MinInitialSize:
		vn := wire.AppendVersionNegotiation(make([]byte, 0, wire.HeaderLen+2), &wire.VersionNegotiation{
			ConnID: id, Timestamp: ln.cfg.Clock.Wall().UnixMicro(), Versions: wire.Versions(),
		})
		if err := t.sock.writeTo(vn, from); err != nil {
			t.log.Debug("fresh: VersionNegotiation not sent", "to", from, "err", err)
			return nil
		}
		t.st.versionNegotiations.Add(1)
		return nil
	}
	t.st.malformed.Add(1)
	return nil
}

// connections counts the connections in t's table (each is there under
// the client's ID and, on a Listener, under the server's too).
func (t *Transport) connections() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for id, e := range t.conns {
		if id == e.id {
			n++
		}
	}
	return n
}

// clientOf finds the Dial'ed connection to from whose server addresses it
// as srvID (its session's ServerConnID); t.mu is held. A client's table
// holds its connections under their own IDs only, which is all its peers
// send to, but a server that lost a connection knows only the server's.
func (t *Transport) clientOf(srvID uint64, from netip.AddrPort) (*entry, bool) {
	for id, e := range t.conns {
		if id == e.id && e.ln == nil && e.addr == from && e.c.serverConnID() == srvID {
			return e, true
		}
	}
	return nil, false
}
