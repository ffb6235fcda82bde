package session

import (
	"bytes"
	"fmt"

	"github.com/fresh-udp/fresh/internal/wire"
)

// Address-validation tokens for the next connection (RFC 9000 §8.1.3):
// once its handshake completes, a server gives its client a token in a
// NewToken frame (Config.NewToken, minted by the listener); the client
// keeps it (Config.OnNewToken) and puts it in the first Initial of its
// next connection to that server (Config.Token). A listener that can
// still open it takes the client's address as validated and skips the
// Retry: the round trip and the second copy of the Initial (with 0-RTT,
// of the early update too) that every connection of a device that wakes,
// connects, reports and sleeps would otherwise pay. One that cannot (it
// restarted, the token expired, the client's address changed) answers
// with a Retry, as it would without a token.

// newTokenState is a server's NewToken: due once the handshake
// completes, sent once.
//
// The frame goes once, as a control packet (like an ACK: its own packet
// number space, not acknowledged, not in flight), not as an ack-eliciting
// packet resent until acknowledged. Tracked, it would be the only thing a
// receiving server has in flight: in a fade its retransmission timer
// backs off over it and calls the path dead (PathDead) while the
// client's data and the server's ACKs still cross. A lost token costs the
// client's next connection the Retry it would have paid without one.
type newTokenState struct {
	pending bool
}

// queueNewToken marks the server's token due, at the end of its
// handshake.
func (s *Session) queueNewToken() {
	if !s.client && s.sec != nil && len(s.cfg.NewToken) > 0 {
		s.nt.pending = true
	}
}

// pollNewToken builds the pending NewToken frame in buf, once.
func (s *Session) pollNewToken(wallUS int64, buf []byte) ([]byte, bool) {
	if !s.nt.pending || s.state != stateOpen {
		return nil, false
	}
	s.nt.pending = false
	f := wire.NewToken{Token: s.cfg.NewToken}
	s.cfg.NewToken = nil // given: a monitor holds many idle connections
	return wire.AppendNewToken(s.header(buf, wallUS, wire.TypeNewToken, 0, 0), &f), true
}

// onNewToken takes a NewToken frame (not acknowledged: a control packet):
// a client with TLS hands the token to Config.OnNewToken. A server never
// receives one (RFC 9000 §19.7: a PROTOCOL_VIOLATION); one that is not
// under the application keys is dropped, as it could only be forged.
func (s *Session) onNewToken(h wire.Header, body []byte) {
	if !s.client {
		s.fail(fmt.Errorf("%w: a NewToken frame from the client (RFC 9000 §19.7)", ErrProtocol), closeProtocol)
		return
	}
	if s.sec == nil || (h.Epoch != wire.EpochApp0 && h.Epoch != wire.EpochApp1) {
		s.st.Malformed++
		return
	}
	var f wire.NewToken
	if err := wire.ParseNewToken(body, &f); err != nil {
		s.st.Malformed++
		return
	}
	if s.cfg.OnNewToken != nil {
		s.cfg.OnNewToken(bytes.Clone(f.Token)) // f aliases the datagram
	}
}
