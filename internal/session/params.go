package session

import (
	"encoding/binary"
	"errors"
	"fmt"

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
// with a version 2 one (the packet headers' versions differ).
const (
	// paramResetToken (server → client, 16 bytes): the connection's
	// stateless reset token (RFC 9000 §18.2 stateless_reset_token).
	paramResetToken uint16 = 0x0002
)

// peerParams is what the peer's transport parameters said.
type peerParams struct {
	hasToken   bool                              // a server sent …
	resetToken [wire.StatelessResetTokenLen]byte // … its token
}

// errParams wraps every malformed parameter list.
var errParams = errors.New("malformed transport parameters")

// appendParam appends one parameter.
func appendParam(b []byte, id uint16, value []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, id)
	b = binary.BigEndian.AppendUint16(b, uint16(len(value)))
	return append(b, value...)
}

// clientParams is what a client sends: the version.
func clientParams() []byte { return append([]byte(nil), transportParams...) }

// serverParams is what a server sends: the version, and the reset token
// if the server has one.
func serverParams(token *[wire.StatelessResetTokenLen]byte) []byte {
	b := append([]byte(nil), transportParams...)
	if token != nil {
		b = appendParam(b, paramResetToken, token[:])
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
	var seen [3]bool // by the ids this version knows
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
		if int(id) < len(seen) {
			if seen[id] {
				return p, fmt.Errorf("%w: parameter %#x sent twice", errParams, id)
			}
			seen[id] = true
		}
		switch id {
		case paramResetToken:
			if fromClient || n != wire.StatelessResetTokenLen {
				return p, fmt.Errorf("%w: stateless reset token (%#x) from a client or of %d bytes", errParams, id, n)
			}
			p.resetToken, p.hasToken = [wire.StatelessResetTokenLen]byte(value), true
		}
	}
	return p, nil
}
