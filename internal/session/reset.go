package session

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"hash"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/wire"
)

// Stateless reset (RFC 9000 §10.3). A server that lost a connection's
// state (it restarted) cannot close the connection with an authenticated
// Close: the keys went with the state. Without a reset the client sends
// into the void until its idle timeout. Instead the server gives every
// client, inside the TLS handshake, a token only it can compute again
// without state: a keyed hash of the connection ID under a key the server
// keeps (RFC 9000 §10.3.2). A datagram for a connection it does not hold
// is answered with a StatelessReset carrying that token, and a client that
// reads its own connection's token knows the server really lost it and
// ends the connection at once (ErrStatelessReset).
//
// Why it is safe:
//
//   - Off the path no one can forge one: the token is an HMAC under the
//     server's key, and travels only in the server's encrypted
//     EncryptedExtensions; a client compares it in constant time.
//   - It amplifies nothing: a reset (StatelessResetLen bytes) answers
//     only a longer datagram (wire.MinResetTrigger), never an Initial,
//     a Retry, a Close or another reset, so two endpoints that both lost
//     state cannot ping-pong (RFC 9000 §10.3.3), and a Resetter sends at
//     most its rate (a token bucket).
//   - On the path an attacker who sees the token (it cannot: it is
//     encrypted) or who just drops the datagrams can end the connection
//     anyway; RFC 9000 §21.11 says as much of QUIC.
//   - No one can make an endpoint draw the token of a connection another
//     endpoint holds (the stateless reset oracle of RFC 9000 §21.11).
//     Endpoints that share a key (several processes behind one port, a
//     server's lives) answer only for the connection IDs each issues
//     (IssuedIDs: its server ID in the ID's first bytes), so an ID is
//     answered only by the one endpoint that may hold it, which does not
//     answer while it does: a datagram for a live connection's ID that
//     lands on another endpoint sharing the key (the attacker picks the
//     source port, and so where a hash sends it) draws nothing there.

// ResetKeyLen is the length of a stateless reset key.
const ResetKeyLen = 32

// ResetToken is connection connID's stateless reset token under key: the
// first 16 bytes of HMAC-SHA256(key, connID as 8 bytes big-endian).
func ResetToken(key *[ResetKeyLen]byte, connID uint64) [wire.StatelessResetTokenLen]byte {
	var id [8]byte
	binary.BigEndian.PutUint64(id[:], connID)
	m := hmac.New(sha256.New, key[:])
	m.Write(id[:])
	return [wire.StatelessResetTokenLen]byte(m.Sum(nil))
}

// Default rate of a Resetter: 100 resets a second, bursts of 10. A
// restarted server resets each client on its first datagram after the
// restart; a client whose datagram found the bucket empty is reset on a
// later one (it keeps sending: retransmissions, updates, PINGs).
const (
	DefaultResetRate  = 100
	DefaultResetBurst = 10
)

// ResetVerdict is what a Resetter did with a datagram.
type ResetVerdict uint8

const (
	// ResetSent: the answer is a StatelessReset.
	ResetSent ResetVerdict = iota
	// ResetNotEligible: no reset answers this datagram: an Initial
	// (the Listener's), a Retry, a Close, a StatelessReset, or one too
	// short to be answered with something smaller.
	ResetNotEligible
	// ResetRateLimited: one would be due, but the rate is used up.
	ResetRateLimited
	// ResetNotIssued: the datagram's connection ID is not one this
	// endpoint issues (IssuedIDs) but another server's: answering would
	// give away the token of a connection that server may hold.
	ResetNotIssued
)

// IssuedIDs is the set of connection IDs an endpoint issues, as a
// Resetter needs it: the IDs whose first Len bytes (big-endian, as on the
// wire) are Prefix's. A server whose IDs begin with its server ID (the
// QUIC-LB layout's first octet and server ID) answers for those alone:
// RFC 9000 §21.11 has servers that share a static key "MUST NOT generate
// a stateless reset if a connection with the corresponding connection ID
// could be active on any endpoint using the same static key", and only
// the endpoint that issued an ID can hold its connection. The zero value
// (Len 0) is every ID: only for a key no other endpoint reached by the
// same datagrams holds.
type IssuedIDs struct {
	Prefix uint64 // the prefix, in the high-order Len bytes
	Len    int    // the prefix's length in bytes, 0 to 8
}

// Has reports whether id is one of the set.
func (s IssuedIDs) Has(id uint64) bool {
	if s.Len <= 0 {
		return true
	}
	shift := 64 - 8*min(s.Len, 8)
	return id>>shift == s.Prefix>>shift
}

// Resetter answers datagrams for connections an endpoint does not hold
// with StatelessResets, within a rate, for the connection IDs it issues
// only. It keeps no state per datagram or per connection; a driver calls
// it from one goroutine.
type Resetter struct {
	mac    hash.Hash
	issued IssuedIDs
	rate   float64 // resets per second; 0: none ever
	burst  float64
	tokens float64
	last   clock.Mono
	buf    []byte
	id     [8]byte // a field: a local would escape through the hash interface
}

// NewResetter makes a Resetter with key for the connection IDs of
// issued, allowing burst resets at once and rate a second after that,
// starting at now. rate ≤ 0 never resets.
func NewResetter(key *[ResetKeyLen]byte, issued IssuedIDs, rate float64, burst int, now clock.Mono) *Resetter {
	r := &Resetter{mac: hmac.New(sha256.New, key[:]), issued: issued, rate: max(rate, 0), burst: float64(max(burst, 1)), last: now}
	if r.rate > 0 {
		r.tokens = r.burst
	}
	r.buf = make([]byte, 0, sha256.Size)
	return r
}

// Token is connection connID's token under the Resetter's key (the
// ResetToken a server gives the client in its transport parameters).
func (r *Resetter) Token(connID uint64) [wire.StatelessResetTokenLen]byte {
	binary.BigEndian.PutUint64(r.id[:], connID)
	r.mac.Reset()
	r.mac.Write(r.id[:])
	r.buf = r.mac.Sum(r.buf[:0])
	return [wire.StatelessResetTokenLen]byte(r.buf)
}

// Answer returns the StatelessReset answering datagram b, whose header is
// h, received at now for a connection the endpoint does not hold,
// appended to out; or the verdict that none goes. The reset is
// StatelessResetLen bytes, always fewer than b's. An ID the endpoint does
// not issue draws none (ResetNotIssued), and takes nothing of the rate.
func (r *Resetter) Answer(out []byte, h wire.Header, b []byte, now clock.Mono) ([]byte, ResetVerdict) {
	switch h.Type {
	case wire.TypeInitial, wire.TypeRetry, wire.TypeClose, wire.TypeStatelessReset:
		return out, ResetNotEligible
	}
	if len(b) < wire.MinResetTrigger {
		return out, ResetNotEligible
	}
	if !r.issued.Has(h.ConnID) {
		return out, ResetNotIssued
	}
	if !r.take(now) {
		return out, ResetRateLimited
	}
	out = wire.AppendHeader(out, wire.Header{Type: wire.TypeStatelessReset, ConnID: h.ConnID})
	return wire.AppendStatelessReset(out, &wire.StatelessReset{Token: r.Token(h.ConnID)}), ResetSent
}

// take takes one reset from the token bucket, refilled up to now.
func (r *Resetter) take(now clock.Mono) bool {
	if el := now.Sub(r.last); el > 0 {
		r.tokens = min(r.burst, r.tokens+el.Seconds()*r.rate)
		r.last = now
	}
	if r.tokens < 1 {
		return false
	}
	r.tokens--
	return true
}

// resetState is a session's part in stateless reset.
type resetState struct {
	// client: the token the server gave for this connection.
	hasToken bool
	token    [wire.StatelessResetTokenLen]byte
}

// onPeerParams takes the peer's transport parameters from the handshake.
func (s *Session) onPeerParams(b []byte) error {
	p, err := parseParams(b, !s.client)
	if err == nil {
		err = s.checkPeerVersions(&p) // version.go
	}
	if err != nil {
		return err
	}
	if s.client {
		s.rst.hasToken, s.rst.token = p.hasToken, p.resetToken
	}
	s.takeMinAckDelay(&p)
	return nil
}

// localParams is the transport parameters this end sends.
func (s *Session) localParams() []byte {
	d, ok := s.minAckDelay()
	if s.client {
		return clientParams(d, ok)
	}
	return serverParams(s.cfg.StatelessResetToken, d, ok)
}

// onStatelessReset takes a StatelessReset for this connection. Only a
// client that holds the server's token for it, and only one that carries
// that token, ends the connection: it is closed at once, nothing more is
// sent (RFC 9000 §10.3.1: the peer has no state to read it with), and
// every call returns ErrStatelessReset. Any other is counted and ignored:
// a server's clients get no token from it, and a plaintext session none
// at all. It reports whether the session closed.
func (s *Session) onStatelessReset(body []byte) bool {
	var r wire.StatelessReset
	if err := wire.ParseStatelessReset(body, &r); err != nil {
		s.st.Malformed++
		return false
	}
	if s.state == stateClosed || !s.client || !s.rst.hasToken ||
		subtle.ConstantTimeCompare(r.Token[:], s.rst.token[:]) != 1 {
		s.st.StatelessResetsIgnored++
		return false
	}
	s.closePending = false
	s.Abort(ErrStatelessReset)
	return true
}
