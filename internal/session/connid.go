package session

import "errors"

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
