package wire

import "encoding/binary"

// Version invariants. Whatever later versions change, two things stay where
// version 1 put them, as QUIC's invariants do (RFC 8999 §5): byte 0 is the
// version and bytes 4–11 are the connection ID. A receiver can thus tell a
// datagram of another version from garbage and answer it, and a load
// balancer can route every version by its connection ID.
//
// Version history:
//   - 1: the first format.
//   - 2: the server chooses the connection ID it is addressed by (carried in
//     the Accept, see ParseAccept); version negotiation.
//   - 3: the handshake's first datagrams are integrity-protected, as QUIC's
//     Initial packets are (RFC 9001 §5.2, §5.8): the client's Initials, the
//     server's Crypto frames before its handshake keys (the ServerHello)
//     and a Close before either end has those are sealed under Initial
//     keys derived from the client's connection ID and a salt of this
//     version (epoch EpochInitial, internal/seal's NewInitial), and a
//     Retry ends with an integrity tag over the whole datagram. A flipped
//     bit in any of them fails the AEAD and the datagram is dropped like a
//     lost one, where in version 2 a corrupted ServerHello handed the
//     client wrong keys and the handshake hung until its timeout. The
//     plaintext mode (no TLS) stays unprotected: its Initials go unsealed
//     (only a Retry's tag is checked, in either mode), which is why the
//     simulator, whose sessions run it, refuses a corrupting path.
//     No transition: a version 3 end speaks version 3 alone. Speaking
//     version 2 beside it would keep the unprotected first flights for
//     every peer still on it and two handshake formats in every end, for
//     deployments (a monitor and its devices) that upgrade as a fleet
//     anyway. A version 2 end and a version 3 end refuse each other by
//     version negotiation within a second, both naming the two versions
//     ("upgrade the older end"): upgrade the monitor and its devices
//     together.
//     Later in version 3, without a new version byte (the format is not
//     yet 1.0 and old and new ends still understand each other where it
//     matters): the AckFrequency frame, sent only to a peer that
//     consented with the min_ack_delay transport parameter, which an
//     older end never sends, so it never gets the frame; and a plaintext
//     Accept may carry the server's transport parameters after its ID.
//     With TLS old and new ends work together; in the plaintext mode an
//     older client drops the longer Accept as malformed (it opens only
//     once the server sends it data): upgrade the plaintext ends
//     together, as the version's rule above asks anyway.

// Versions is every version this package speaks, in order of preference
// (the first is Version, the one it sends): what a VersionNegotiation and
// a version_information transport parameter list.
func Versions() []uint8 { return []uint8{Version} }

// negotiationVersion is the version byte of a VersionNegotiation datagram:
// 0 is no protocol version, so no version mistakes it for its own packet
// (QUIC's version 0 is reserved the same way, RFC 9000 §17.2.1).
const negotiationVersion = 0

// MaxVersions bounds the versions a VersionNegotiation lists.
const MaxVersions = 32

// PeekVersion returns a datagram's version byte and connection ID by the
// invariants alone, whatever its version; ok is false if b is too short to
// hold them.
func PeekVersion(b []byte) (version uint8, connID uint64, ok bool) {
	if len(b) < 12 {
		return 0, 0, false
	}
	return b[0], binary.BigEndian.Uint64(b[4:]), true
}

// VersionNegotiation answers a datagram of a version the receiver does not
// speak: header (version 0, type VersionNegotiation, flags and epoch 0, the
// offending datagram's connection ID, packet number 0, the sender's
// timestamp) | count (8) | count versions (8 each), the versions the sender
// speaks. It is unauthenticated (RFC 9000 §6 accepts the same for QUIC's):
// a client acts on it only during its handshake, before any other packet
// from the server, and only if it does not list the client's own version.
type VersionNegotiation struct {
	ConnID    uint64
	Timestamp int64
	Versions  []uint8 // aliases the datagram
}

// AppendVersionNegotiation appends a whole VersionNegotiation datagram to b.
func AppendVersionNegotiation(b []byte, v *VersionNegotiation) []byte {
	b = append(b, negotiationVersion, byte(TypeVersionNegotiation), 0, 0)
	b = binary.BigEndian.AppendUint64(b, v.ConnID)
	b = binary.BigEndian.AppendUint64(b, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(v.Timestamp))
	n := min(len(v.Versions), MaxVersions)
	b = append(b, byte(n))
	return append(b, v.Versions[:n]...)
}

// ParseVersionNegotiation decodes a whole VersionNegotiation datagram.
// Anything else is ErrVersion (another version byte), ErrType, ErrReserved,
// ErrPacketNum, ErrShort, ErrLength or ErrTooMany.
func ParseVersionNegotiation(b []byte, v *VersionNegotiation) error {
	if len(b) < HeaderLen+1 {
		return ErrShort
	}
	switch {
	case b[0] != negotiationVersion:
		return ErrVersion
	case Type(b[1]) != TypeVersionNegotiation:
		return ErrType
	case b[2] != 0 || b[3] != 0:
		return ErrReserved
	case binary.BigEndian.Uint64(b[12:]) != 0:
		return ErrPacketNum
	}
	n := int(b[HeaderLen])
	if n > MaxVersions {
		return ErrTooMany
	}
	if len(b) != HeaderLen+1+n {
		return ErrLength
	}
	v.ConnID = binary.BigEndian.Uint64(b[4:])
	v.Timestamp = int64(binary.BigEndian.Uint64(b[20:]))
	v.Versions = b[HeaderLen+1:]
	return nil
}

// Accept is the body of an Accept (version 2): the connection ID the server
// chose to be addressed by (RFC 9000 §7.2's server-chosen ID, as a QUIC
// server's Source Connection ID), then, in the plaintext mode only, the
// server's transport parameters:
//
//	server connection ID (64) | transport parameters (the rest)
//
// From the Accept on, the client puts the ID in every packet it sends;
// the server keeps answering to the client's own ID. 0 means the server
// keeps the client's ID. Params is what TLS's transport parameters
// extension carries when there is TLS (package internal/session parses
// both); without TLS nothing else would carry them. It is empty with TLS,
// and from a server that has none to give.
type Accept struct {
	ServerConnID uint64
	Params       []byte // aliases the datagram; nil if none
}

// AcceptLen is the length of an Accept body.
const AcceptLen = 8

// AppendAccept appends a's body to b.
func AppendAccept(b []byte, a *Accept) []byte {
	b = binary.BigEndian.AppendUint64(b, a.ServerConnID)
	return append(b, a.Params...)
}

// ParseAccept decodes an Accept body into a: at least AcceptLen bytes
// (ErrShort); what follows the ID is Params, read by the session.
func ParseAccept(body []byte, a *Accept) error {
	if len(body) < AcceptLen {
		return ErrShort
	}
	a.ServerConnID = binary.BigEndian.Uint64(body)
	a.Params = nilIfEmpty(body[AcceptLen:])
	return nil
}
