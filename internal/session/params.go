package session

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fresh-udp/fresh/internal/wire"
)

// Transport parameters are what each side sends in TLS's
// quic_transport_parameters extension (RFC 9001 §8.2), so they travel
// inside the handshake: the server's are encrypted (EncryptedExtensions)
// and both are authenticated by the handshake transcript. They are the
// six bytes of transportParams (fresh's protocol version), then zero or
// more parameters, each
//
//	id (16) | length (16) | value
//
// A receiver ignores ids it does not know, as RFC 9000 §7.4.2 requires,
// so a later version can add parameters without breaking this one.
//
// The list came with wire version 2; version 1 sent the six bytes alone
// and compared them exactly, but a version 1 endpoint never gets this far
// with a version 2 one (the packet headers' versions differ). Every
// parameter is optional: version 2 ends built before one existed send
// the list without it and ignore it, and still work with ends that send it.
const (
	// paramResetToken (server → client, 16 bytes): the connection's
	// stateless reset token (RFC 9000 §18.2 stateless_reset_token).
	paramResetToken uint16 = 0x0002
	// paramVersionInfo (both ways): the version this end uses on the
	// connection and the versions it speaks (versionInfo), after RFC
	// 9368's version_information (§3), whose id it takes.
	paramVersionInfo uint16 = 0x0011
)

// peerParams is what the peer's transport parameters said.
type peerParams struct {
	hasToken    bool                              // a server sent …
	resetToken  [wire.StatelessResetTokenLen]byte // … its token
	hasVersions bool                              // the peer sent …
	versions    versionInfo                       // … its version_information
	// hasMinAckDelay: the peer consents to AckFrequency frames and can
	// honour ACK delays down to minAckDelay (ackfreq.go).
	hasMinAckDelay bool
	minAckDelay    time.Duration
}

// versionInfo is a version_information value (RFC 9368 §3):
//
//	chosen (8) | available (8 each, 1 to wire.MaxVersions)
//
// the version the sender uses on this connection, and every version it
// speaks, in its order of preference; chosen is one of them. Version 0 is
// the VersionNegotiation's and never a protocol version. Carried inside
// the TLS handshake, it is authenticated: a client that acted on an
// (unauthenticated) VersionNegotiation checks against it that the server
// really speaks none of the versions it preferred (version.go).
type versionInfo struct {
	chosen    uint8
	n         uint8 // versions in available
	available [wire.MaxVersions]uint8
}

// list is the versions the sender speaks.
func (v *versionInfo) list() []uint8 { return v.available[:v.n] }

// ourVersions is this end's version_information.
func ourVersions() versionInfo {
	v := versionInfo{chosen: wire.Version}
	v.n = uint8(copy(v.available[:], wire.Versions()))
	return v
}

// appendVersionInfo appends v's value to b.
func appendVersionInfo(b []byte, v *versionInfo) []byte {
	return append(append(b, v.chosen), v.list()...)
}

// parseVersionInfo decodes a version_information value. It fails on an
// empty list, more than wire.MaxVersions versions, version 0, or a chosen
// version the list does not hold.
func parseVersionInfo(b []byte) (versionInfo, error) {
	var v versionInfo
	switch {
	case len(b) < 2:
		return v, fmt.Errorf("%w: version_information of %d bytes: it names no version it speaks", errParams, len(b))
	case len(b)-1 > wire.MaxVersions:
		return v, fmt.Errorf("%w: version_information lists %d versions, at most %d", errParams, len(b)-1, wire.MaxVersions)
	}
	v.chosen, v.n = b[0], uint8(copy(v.available[:], b[1:]))
	if v.chosen == 0 || slices.Contains(v.list(), 0) {
		return v, fmt.Errorf("%w: version_information names version 0, which is no protocol version", errParams)
	}
	if !slices.Contains(v.list(), v.chosen) {
		return v, fmt.Errorf("%w: version_information chose version %d, which it does not list (%v)", errParams, v.chosen, v.list())
	}
	return v, nil
}

// errParams wraps every malformed parameter list.
var errParams = errors.New("malformed transport parameters")

// appendParam appends one parameter.
func appendParam(b []byte, id uint16, value []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, id)
	b = binary.BigEndian.AppendUint16(b, uint16(len(value)))
	return append(b, value...)
}

// clientParams is what a client sends: the version, its
// version_information, and min_ack_delay if it consents (ok).
func clientParams(minAckDelay time.Duration, ok bool) []byte {
	return peerParams{hasVersions: true, versions: ourVersions(), hasMinAckDelay: ok, minAckDelay: minAckDelay}.append()
}

// serverParams is what a server sends: the version, its
// version_information, the reset token if the server has one, and
// min_ack_delay if it consents (ok).
func serverParams(token *[wire.StatelessResetTokenLen]byte, minAckDelay time.Duration, ok bool) []byte {
	p := peerParams{hasVersions: true, versions: ourVersions(), hasMinAckDelay: ok, minAckDelay: minAckDelay}
	if token != nil {
		p.hasToken, p.resetToken = true, *token
	}
	return p.append()
}

// append encodes p: the version prefix, then each parameter p holds.
func (p peerParams) append() []byte {
	b := append([]byte(nil), transportParams...)
	if p.hasVersions {
		b = appendParam(b, paramVersionInfo, appendVersionInfo(nil, &p.versions))
	}
	if p.hasToken {
		b = appendParam(b, paramResetToken, p.resetToken[:])
	}
	if p.hasMinAckDelay {
		b = appendMinAckDelay(b, p.minAckDelay)
	}
	return b
}

// parseParams decodes the transport parameters the peer sent; fromClient
// says the peer is the client. It fails on another version, a truncated
// parameter, one sent twice (RFC 9000 §7.4), a token of the wrong length,
// or a parameter the peer's role must not send (a client's token, as RFC
// 9000 §18.2 forbids).
func parseParams(b []byte, fromClient bool) (peerParams, error) {
	var p peerParams
	if len(b) < len(transportParams) || string(b[:len(transportParams)]) != string(transportParams) {
		return p, fmt.Errorf("peer speaks another protocol version (transport parameters %q)", b)
	}
	var seen uint64 // bit id, for the ids this version knows (all below 64)
	for rest := b[len(transportParams):]; len(rest) > 0; {
		if len(rest) < 4 {
			return p, fmt.Errorf("%w: %d bytes left, too few for a parameter", errParams, len(rest))
		}
		id, n := binary.BigEndian.Uint16(rest), int(binary.BigEndian.Uint16(rest[2:]))
		if len(rest)-4 < n {
			return p, fmt.Errorf("%w: parameter %#x promises %d bytes, %d left", errParams, id, n, len(rest)-4)
		}
		value := rest[4 : 4+n]
		rest = rest[4+n:]
		if id < 64 {
			if seen&(1<<id) != 0 {
				return p, fmt.Errorf("%w: parameter %#x sent twice", errParams, id)
			}
			seen |= 1 << id
		}
		switch id {
		case paramResetToken:
			if fromClient || n != wire.StatelessResetTokenLen {
				return p, fmt.Errorf("%w: stateless reset token (%#x) from a client or of %d bytes", errParams, id, n)
			}
			p.resetToken, p.hasToken = [wire.StatelessResetTokenLen]byte(value), true
		case paramVersionInfo:
			v, err := parseVersionInfo(value)
			if err != nil {
				return p, err
			}
			p.versions, p.hasVersions = v, true
		case paramMinAckDelay:
			d, err := parseMinAckDelay(value)
			if err != nil {
				return p, err
			}
			p.minAckDelay, p.hasMinAckDelay = d, true
		}
	}
	return p, nil
}
