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
// Endpoints from before the parameter list compare the extension with the
// six bytes exactly and fail the handshake on anything longer. So a server
// sends parameters only to a client that announced it parses them
// (paramResetCapable), and a client that sent the six bytes alone gets the
// six bytes alone: it keeps working, without a stateless reset. A client
// does send the announcement, and so does not complete a handshake with a
// server from before the list: upgrade servers first.
const (
	// paramResetCapable (client → server, empty): this client parses the
	// parameter list and honours a stateless reset.
	paramResetCapable uint16 = 0x0001
	// paramResetToken (server → client, 16 bytes): the connection's
	// stateless reset token (RFC 9000 §18.2 stateless_reset_token).
	paramResetToken uint16 = 0x0002
)

// peerParams is what the peer's transport parameters said.
type peerParams struct {
	resetCapable bool                              // a client's announcement
	hasToken     bool                              // a server sent …
	resetToken   [wire.StatelessResetTokenLen]byte // … its token
}

// errParams wraps every malformed parameter list.
var errParams = errors.New("malformed transport parameters")

// appendParam appends one parameter.
func appendParam(b []byte, id uint16, value []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, id)
	b = binary.BigEndian.AppendUint16(b, uint16(len(value)))
	return append(b, value...)
}

// clientParams is what a client sends: the version and its announcement.
// A variable so that a test can play a client from before the list.
var clientParams = func() []byte {
	return appendParam(append([]byte(nil), transportParams...), paramResetCapable, nil)
}

// serverParams is what a server sends to a client whose parameters were
// peer: the version alone to a client that did not announce the list,
// and the reset token, if the server has one, to one that did.
func serverParams(peer peerParams, token *[wire.StatelessResetTokenLen]byte) []byte {
	b := append([]byte(nil), transportParams...)
	if peer.resetCapable && token != nil {
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
		case paramResetCapable:
			if !fromClient || n != 0 {
				return p, fmt.Errorf("%w: reset announcement (%#x) from a server or with a value", errParams, id)
			}
			p.resetCapable = true
		case paramResetToken:
			if fromClient || n != wire.StatelessResetTokenLen {
				return p, fmt.Errorf("%w: stateless reset token (%#x) from a client or of %d bytes", errParams, id, n)
			}
			p.resetToken, p.hasToken = [wire.StatelessResetTokenLen]byte(value), true
		}
	}
	return p, nil
}
