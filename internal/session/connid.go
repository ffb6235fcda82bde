package session

import (
	"errors"
	"fmt"
	"slices"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/wire"
)

// Connection IDs (RFC 9000 §5.1 as the model, one ID per direction): each
// end is addressed by an ID it chose, so that whatever routes its packets
// (a Transport's table, a load balancer, an SO_REUSEPORT program) can use
// its own encoding. The client chooses its ID in the Initial and the
// server answers to it for the whole connection. The server chooses its
// own ID when it creates the connection and gives it in the Accept; the
// client sends with it from then on. Until then — the Initial, a Retry's
// second Initial, the client's handshake flight — the client's packets
// carry the client's ID, so the server also answers to that one for the
// connection's life: a late or repeated handshake packet must still find
// its connection, not open a new one.

// errNotOurs: a packet with a connection ID this session does not answer
// to (the transport routed it by mistake).
var errNotOurs = errors.New("session: not this connection's ID")

// ownID reports whether packets with connection ID id are this session's.
func (s *Session) ownID(id uint64) bool {
	return id == s.connID || (!s.client && s.srvID != 0 && id == s.srvID)
}

// peerID is the connection ID of the packets this end sends: the ID the
// peer chose to be addressed by.
func (s *Session) peerID() uint64 {
	if s.client && s.srvID != 0 {
		return s.srvID
	}
	return s.connID
}

// ServerConnID is the server's connection ID: on a server the one it
// chose (Config.ServerConnID); on a client the one the Accept gave, 0
// until then or if the server kept the client's.
func (s *Session) ServerConnID() uint64 { return s.srvID }

// handleVersionNegotiation takes a VersionNegotiation for a client in its
// handshake: the server speaks none of our versions, and the handshake
// fails at once with ErrVersion rather than at HandshakeTimeout. It
// reports whether b was one this session acted on. As RFC 9000 §6.2 asks
// of a QUIC client, it is ignored once anything else came from the server
// (so a forged one cannot end a connection that works), and if it lists
// our own version (then it is no answer to our Initial).
func (s *Session) handleVersionNegotiation(now clock.Mono, b []byte) bool {
	var v wire.VersionNegotiation
	if !s.client || s.state != stateHandshake || s.st.PacketsReceived > 0 ||
		wire.ParseVersionNegotiation(b, &v) != nil || v.ConnID != s.connID ||
		slices.Contains(v.Versions, wire.Version) {
		return false
	}
	s.Abort(fmt.Errorf("%w: %w: it speaks versions %v, this end speaks %d; upgrade the older end", ErrHandshake, ErrVersion, v.Versions, wire.Version))
	return true
}
