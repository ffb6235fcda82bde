package session

import (
	"bytes"
	"fmt"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
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

// kindNewToken is the recovery tracker's kind of a NewToken packet:
// resent while unacknowledged.
const kindNewToken uint8 = 6

// newTokenState is a server's NewToken to send: pending until it goes,
// again when it is lost, done once acknowledged.
type newTokenState struct {
	pending bool
	acked   bool
}

// queueNewToken marks the server's token due, at the end of its
// handshake.
func (s *Session) queueNewToken() {
	if !s.client && s.sec != nil && len(s.cfg.NewToken) > 0 {
		s.nt.pending = true
	}
}

// pollNewToken builds the pending NewToken frame in buf.
func (s *Session) pollNewToken(now clock.Mono, wallUS int64, buf []byte) ([]byte, bool) {
	if !s.nt.pending || s.nt.acked || s.state != stateOpen {
		return nil, false
	}
	s.nt.pending = false
	s.lastSent = now
	f := wire.NewToken{Token: s.cfg.NewToken}
	pn := s.tr.OnSent(now, cc.ByteCount(wire.HeaderLen+2+len(f.Token)), kindNewToken, 0, 0)
	return wire.AppendNewToken(s.header(buf, wallUS, wire.TypeNewToken, 0, pn), &f), true
}

// newTokenLost sends the token again unless it was acknowledged since.
func (s *Session) newTokenLost() {
	if !s.nt.acked && s.state == stateOpen && len(s.cfg.NewToken) > 0 {
		s.nt.pending = true
	}
}

// onNewToken takes a NewToken frame: a client with TLS hands the token
// to Config.OnNewToken. A server never receives one (RFC 9000 §19.7: a
// PROTOCOL_VIOLATION); one that is not under the application keys is
// dropped, as it could only be forged.
func (s *Session) onNewToken(now clock.Mono, wallUS int64, h wire.Header, body []byte) {
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
	s.onAckEliciting(now, wallUS, h, wire.Echo{}, false)
	if s.cfg.OnNewToken != nil {
		s.cfg.OnNewToken(bytes.Clone(f.Token)) // f aliases the datagram
	}
}
