// Package wire is fresh's on-the-wire format, version 3: one fixed header on
// every datagram and one frame type per datagram. Encoders append to a
// caller's buffer; decoders read into caller-owned structs, alias the input
// for payloads, never panic and never allocate, whatever the input.
//
// Header (28 bytes, big-endian, network order as RFC 791 and QUIC):
//
//		 0      1      2      3      4                             12
//		+------+------+------+------+-----------------------------+
//		| ver  | type |flags |epoch |      connection ID (64)     |
//		+------+------+------+------+-----------------------------+
//		12                            20                           28
//		+-----------------------------+-----------------------------+
//		|     packet number (64)      |  sender timestamp µs (64)   |
//		+-----------------------------+-----------------------------+
//
//	  - ver: 3 (see version.go for the history and the invariants every
//	    version keeps). A receiver drops other versions; a server answers
//	    an Initial-sized datagram of another version with a
//	    VersionNegotiation (version 0) listing the versions it speaks.
//	  - flags: bit 0 is frame-specific (FIN on Data, clock-synced on Ack);
//	    bit 7 (FlagProtected) marks a protected packet: its body is AEAD
//	    ciphertext plus a 16-byte tag, sealed with the keys of the epoch
//	    below and this 28-byte header as associated data (package
//	    internal/seal), so the header is authenticated though readable.
//	    Every bit a frame type does not define (bit 0 off Data and Ack,
//	    bits 1–6) must be 0. Retry and StatelessReset are never
//	    protected: a Retry ends with its own integrity tag instead (see
//	    Retry), a StatelessReset's token is its proof.
//	  - epoch: which keys protect the body: 0 on an unprotected packet;
//	    EpochInitial (5) for the handshake's first datagrams under the
//	    Initial keys, derived from the client's connection ID (RFC 9001
//	    §5.2): the client's Initials, the server's Crypto frames before
//	    its handshake keys (the ServerHello), and a Close sent before
//	    either has those — only these three types, and an Initial only
//	    under them (or unprotected, in the plaintext mode);
//	    EpochHandshake (1) for the TLS handshake's encrypted messages;
//	    EpochApp0 and EpochApp1 (2, 3) for everything after it, the two
//	    key phases of RFC 9001 §6's key update; EpochEarly (4) for a
//	    client's 0-RTT packets, under the keys of TLS's early traffic
//	    secret (RFC 9001 §5.1, RFC 8446 §7.1), sent with its first flight
//	    when it resumes a session. 6–255 are reserved.
//	  - connection ID: the receiver's ID for the connection, by which it
//	    demultiplexes. The client chooses one in its Initial; the server
//	    answers to it for the whole connection. The server chooses its
//	    own and gives it in the Accept; the client's packets carry it from
//	    then on (before, they carry the client's). A Retry keeps the
//	    client's, and the server binds its token to it and to the
//	    client's address.
//	  - packet number: per sender, per connection, starting at 0, never
//	    reused — a retransmission is a new packet (RFC 9000 §12.3). Numbers
//	    may skip (a later issue skips some on purpose against optimistic
//	    ACKs), so receivers must not assume contiguity.
//	  - timestamp: the sender's wall clock in µs when the packet was sent:
//	    the send stamp PStime of the one-way delay estimator on Data and Update, T3 of the in-band clock
//	    exchange on Ack.
//
// Frame types and bodies are documented on each type below.
package wire

import (
	"encoding/binary"
	"errors"
)

// Version is the protocol version this package speaks.
const Version = 3

// HeaderLen is the fixed header length in bytes.
const HeaderLen = 28

// MinInitialSize is the size an Initial datagram is padded to, as QUIC's
// 1200-byte minimum (RFC 9000 §14.1): it proves the path carries full-size
// datagrams and lets a server answer up to 3× as much before the client is
// validated (RFC 9000 §8.1 anti-amplification).
const MinInitialSize = 1200

// Type is the frame type of a datagram.
type Type uint8

const (
	TypeInitial Type = 0x01 // client → server: open a connection
	TypeAccept  Type = 0x02 // server → client: connection accepted
	TypeData    Type = 0x03 // reliable stream data
	TypeUpdate  Type = 0x04 // status update (never retransmitted)
	TypeAck     Type = 0x05 // acknowledgment with OWD samples
	TypeClose   Type = 0x06 // connection close
	TypePing    Type = 0x07 // ack-eliciting probe (RTO/PTO): padding (zero bytes) only
	TypeCrypto  Type = 0x0A // TLS handshake bytes (RFC 9000 §19.6's CRYPTO)
	TypeRetry   Type = 0x08 // server → client: stateless retry with an address-validation token
	// Path validation (RFC 9000 §8.2): a challenge to a peer address and
	// its echo. Only protected ones are taken (package internal/session).
	TypePathChallenge Type = 0x0B
	TypePathResponse  Type = 0x0C
	// StatelessReset: "I lost this connection", proved by the token the
	// server gave in the handshake (RFC 9000 §10.3); never protected.
	TypeStatelessReset Type = 0x0D
	TypeCommit         Type = 0x0E // stream receiver → sender: bytes durably stored (end-to-end commit)
	// PMTUProbe is a padding-only, ack-eliciting packet of the size a
	// sender probes the path for (RFC 8899 §4.1, DPLPMTUD's probe packet).
	TypePMTUProbe Type = 0x10
	// AckFrequency: the data sender asks the receiver to acknowledge
	// less (or more) often, the ACK_FREQUENCY frame of
	// draft-ietf-quic-ack-frequency §4 (see AckFrequency).
	TypeAckFrequency Type = 0x11
	// NewToken: the server gives the client an address-validation token
	// for its next connection, RFC 9000 §19.7's NEW_TOKEN (see NewToken).
	TypeNewToken Type = 0x12
	// Version negotiation travels with version byte 0 and has its own
	// decoder (ParseVersionNegotiation); ParseHeader returns ErrVersion
	// for it, as for every datagram not of this version.
	TypeVersionNegotiation Type = 0x09
)

func (t Type) String() string {
	switch t {
	case TypeInitial:
		return "initial"
	case TypeAccept:
		return "accept"
	case TypeData:
		return "data"
	case TypeUpdate:
		return "update"
	case TypeAck:
		return "ack"
	case TypeClose:
		return "close"
	case TypePing:
		return "ping"
	case TypeRetry:
		return "retry"
	case TypeVersionNegotiation:
		return "version-negotiation"
	case TypeCrypto:
		return "crypto"
	case TypeStatelessReset:
		return "stateless-reset"
	case TypePathChallenge:
		return "path-challenge"
	case TypePathResponse:
		return "path-response"
	case TypeCommit:
		return "commit"
	case TypePMTUProbe:
		return "pmtu-probe"
	case TypeAckFrequency:
		return "ack-frequency"
	case TypeNewToken:
		return "new-token"
	}
	return "unknown"
}

// Flags.
const (
	FlagFIN       uint8 = 1 << 0 // Data: last byte of the stream
	FlagSynced    uint8 = 1 << 0 // Ack: the receiver's clock offset is trustworthy
	FlagProtected uint8 = 1 << 7 // AEAD-protected body (see Epoch)
)

// Key epochs of a protected packet (header byte 3).
const (
	EpochNone      uint8 = 0 // unprotected
	EpochHandshake uint8 = 1 // TLS handshake traffic keys
	EpochApp0      uint8 = 2 // application keys, key phase 0
	EpochApp1      uint8 = 3 // application keys, key phase 1
	EpochEarly     uint8 = 4 // 0-RTT keys (a client's early data, RFC 9001 §4.6)
	EpochInitial   uint8 = 5 // Initial keys, from the client's connection ID (RFC 9001 §5.2)
)

// Decoding errors. Every malformed datagram maps to one of them, so an
// endpoint can count drops by cause.
var (
	ErrShort     = errors.New("wire: datagram too short")
	ErrVersion   = errors.New("wire: unsupported version")
	ErrType      = errors.New("wire: unknown frame type")
	ErrReserved  = errors.New("wire: reserved bits set")
	ErrLength    = errors.New("wire: length field disagrees with datagram")
	ErrTooMany   = errors.New("wire: too many ranges or samples")
	ErrRanges    = errors.New("wire: ACK ranges not descending and disjoint")
	ErrPacketNum = errors.New("wire: packet number out of range")
	ErrValue     = errors.New("wire: field value out of range")
)

// MaxPacketNumber bounds packet numbers (2^62 − 1, as QUIC's varint range),
// so arithmetic on them never overflows int64.
const MaxPacketNumber = 1<<62 - 1

// Header is the fixed header.
type Header struct {
	Type      Type
	Flags     uint8
	ConnID    uint64
	PN        int64
	Timestamp int64 // sender wall clock, µs since the Unix epoch
	Epoch     uint8 // key epoch; nonzero only with FlagProtected
}

// AppendHeader appends h's encoding to b.
func AppendHeader(b []byte, h Header) []byte {
	b = append(b, Version, byte(h.Type), h.Flags, h.Epoch)
	b = binary.BigEndian.AppendUint64(b, h.ConnID)
	b = binary.BigEndian.AppendUint64(b, uint64(h.PN))
	return binary.BigEndian.AppendUint64(b, uint64(h.Timestamp))
}

// allowedFlags is the set of flag bits this version defines for frame type t.
// Bit 0 means something only on Data (FIN) and Ack (Synced); every type
// but Retry and StatelessReset may be protected.
func allowedFlags(t Type) uint8 {
	switch t {
	case TypeData:
		return FlagFIN | FlagProtected
	case TypeAck:
		return FlagSynced | FlagProtected
	case TypeRetry, TypeStatelessReset:
		return 0
	}
	return FlagProtected
}

// epochAllowed reports whether a protected packet of type t may be under
// keys of epoch e: the Initial keys protect only the handshake's first
// datagrams (Initial, the ServerHello's Crypto, a Close before handshake
// keys), and an Initial is never under other keys.
func epochAllowed(t Type, e uint8) bool {
	switch {
	case e == EpochNone || e > EpochInitial:
		return false
	case e == EpochInitial:
		return t == TypeInitial || t == TypeCrypto || t == TypeClose
	}
	return t != TypeInitial
}

// ParseHeader decodes the header of datagram b and returns the body (the
// ciphertext, for a protected packet). It rejects another version with
// ErrVersion, the type VersionNegotiation with ErrType, and any flag bit
// the frame type does not define, an epoch that disagrees with
// FlagProtected, or one the frame type is never protected under, with
// ErrReserved.
func ParseHeader(b []byte) (Header, []byte, error) {
	var h Header
	if len(b) < HeaderLen {
		return h, nil, ErrShort
	}
	if b[0] != Version {
		return h, nil, ErrVersion
	}
	h.Type = Type(b[1])
	if !h.Type.valid() {
		return h, nil, ErrType
	}
	h.Flags = b[2]
	h.Epoch = b[3]
	if h.Flags&^allowedFlags(h.Type) != 0 {
		return h, nil, ErrReserved
	}
	protected := h.Flags&FlagProtected != 0
	if protected != (h.Epoch != EpochNone) || (protected && !epochAllowed(h.Type, h.Epoch)) {
		return h, nil, ErrReserved
	}
	h.ConnID = binary.BigEndian.Uint64(b[4:])
	pn := binary.BigEndian.Uint64(b[12:])
	if pn > MaxPacketNumber {
		return h, nil, ErrPacketNum
	}
	h.PN = int64(pn)
	h.Timestamp = int64(binary.BigEndian.Uint64(b[20:]))
	if protected && len(b)-HeaderLen < ProtectedOverhead {
		return h, nil, ErrShort // not even an AEAD tag
	}
	return h, b[HeaderLen:], nil
}

// ProtectedOverhead is the AEAD tag every protected body ends with (16
// bytes for each TLS 1.3 cipher suite).
const ProtectedOverhead = 16

// valid reports whether this version defines a body for t under its own
// version byte (VersionNegotiation has version 0).
func (t Type) valid() bool {
	switch t {
	case TypeCrypto, TypePathChallenge, TypePathResponse, TypeStatelessReset, TypeCommit, TypePMTUProbe, TypeAckFrequency, TypeNewToken:
		return true
	}
	return t >= TypeInitial && t <= TypeRetry
}
