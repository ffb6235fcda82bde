package session

import (
	"crypto/tls"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/dscp"
	"github.com/fresh-udp/fresh/internal/seal"
	"github.com/fresh-udp/fresh/internal/wire"
)

// 0-RTT: a client that resumes a TLS session whose ticket allows early
// data can protect packets before the handshake is done, under the keys
// of the early traffic secret (RFC 8446 §2.3, RFC 9001 §4.6), and send
// them with its ClientHello. fresh puts status updates there, and only
// them, so that a device waking from sleep and reconnecting has its first
// update on the way with its first flight instead of two round trips
// later.
//
// Early data has no protection against replay (RFC 8446 §8, RFC 9001
// §9.2): anyone who captured the first flight can send it again, and
// Go's TLS server keeps no record of the tickets or ClientHellos it has
// seen. That is why only updates may go there:
//
//   - an update is freshest-only: a receiver keeps only an update newer,
//     by packet number, than the one it holds (deliverUpdate), so a
//     replay into the same connection is dropped (the replay window, then
//     the packet number) and can never take the place of a newer update;
//   - early updates are delivered only once the handshake has completed:
//     the transport hands a server's connection to Accept only then, and a
//     replayed first flight can never complete it (the client's Finished
//     needs the (EC)DHE and resumption secrets, which the replayer does
//     not hold), so its updates reach no application;
//   - stream bytes are never sent early: the stream is reliable and
//     ordered, and a replayed Data frame would be bytes the application
//     reads as if sent twice (a command run twice). A server drops any
//     frame but an Update under the early keys (Stats.EarlyDropped).
//
// Both ends opt in (Config.Allow0RTT): a server issues tickets that allow
// early data and accepts it only with it, a client sends early data only
// with it. A client whose early data the server refuses (QUICRejectedEarlyData:
// another configuration, a ticket it cannot decrypt) sends the update again
// after the handshake, under the application keys.

// earlyState is a session's 0-RTT side.
type earlyState struct {
	// keys protect the 0-RTT packets: a client's to seal its own, a
	// server's to open the client's (each end only ever holds its side's);
	// nil when there is no early data or once it is over.
	keys   *seal.Keys
	sent   bool // client: an update went out under keys
	resend bool // client: send the held update again at once (a Retry, a rejection)
}

// onEarlySecret takes TLS's early traffic keys: the client's to send
// with, the server's to read with (given only when it accepted the
// client's early data).
func (s *Session) onEarlySecret(read bool, k *seal.Keys) {
	e := &s.sec.early
	switch {
	case !s.cfg.Allow0RTT:
		// Declined in onResumeSession already; never use them regardless.
	case read != s.client:
		e.keys = k // the server's to read with, the client's to send with
	}
}

// onResumeSession is TLS's QUICResumeSession: the client picked a ticket,
// or the server took the client's. Without Allow0RTT early data is
// declined here, whatever the ticket allows: a client then offers none and
// a server accepts none (a ticket issued while it allowed 0-RTT, say).
func (s *Session) onResumeSession(st *tls.SessionState) {
	if st != nil && !s.cfg.Allow0RTT {
		st.EarlyData = false
	}
}

// onStoreSession is TLS's QUICStoreSession (a client's new ticket): it
// goes into the ClientSessionCache, as crypto/tls stores tickets when it
// is not asked to report them.
func (s *Session) onStoreSession(st *tls.SessionState) {
	if s.client && st != nil && s.cfg.TLS.ClientSessionCache != nil {
		_ = s.sec.conn.StoreSession(st)
	}
}

// onEarlyRejected is TLS's QUICRejectedEarlyData: the server did not take
// our early data, so the update sent under it never arrived. It goes
// again after the handshake, unless a newer one is waiting anyway.
func (s *Session) onEarlyRejected() {
	e := &s.sec.early
	e.keys = nil
	s.st.EarlyRejected = true
	s.resendEarly()
}

// onRetryEarly: a Retry says the server kept no state for our first
// flight, so the early update in it was dropped unread. It goes again
// after the Initial that carries the token.
func (s *Session) onRetryEarly() {
	if s.sec != nil {
		s.resendEarly()
	}
}

// resendEarly marks the held update for sending again at once if an early
// packet carried it and no newer one replaced it. Only where the update
// is known not to have been delivered (a Retry, a rejection): a resend on
// a mere timeout could deliver the same update twice.
func (s *Session) resendEarly() {
	e := &s.sec.early
	if e.sent && !s.updFresh && s.updBuf != nil {
		s.updFresh, e.resend = true, true
	}
	e.sent = false
}

// dropEarly discards the 0-RTT keys at confirmation (RFC 9001 §4.9.3):
// the client's are of no use once it has application keys, and a
// server's would only open late or replayed early packets.
func (s *Session) dropEarly() {
	s.sec.early.keys = nil
}

// EarlyReady reports whether a client can send updates under 0-RTT keys
// now: it resumed a session whose ticket allows early data, with
// Allow0RTT, and the handshake has not yet given it application keys.
func (s *Session) EarlyReady() bool {
	return s.client && s.sec != nil && s.sec.early.keys != nil && s.sec.appWrite == nil && s.state == stateHandshake
}

// pollEarly builds a client's 0-RTT update while the handshake runs, if
// one is held and the update policy allows it.
func (s *Session) pollEarly(now clock.Mono, wallUS int64, buf []byte) ([]byte, dscp.Codepoint, bool) {
	if !s.EarlyReady() || !s.updFresh || now.Before(s.nextUpdateAt()) {
		return nil, 0, false
	}
	s.sec.early.sent = true
	s.st.EarlyUpdatesSent++
	return s.sent(s.appendUpdate(now, wallUS, buf)), s.cfg.UpdateDSCP, true
}

// earlyUpdateAt is when pollEarly has an update to send (0: none), for
// NextTimeout.
func (s *Session) earlyUpdateAt(now clock.Mono) clock.Mono {
	if !s.EarlyReady() || !s.updFresh {
		return 0
	}
	return max(s.nextUpdateAt(), now)
}

// earlyAcceptable screens a packet under the 0-RTT epoch before it is
// opened: only a server that accepted early data takes one, and only an
// Update; everything else (Data, whose replay would duplicate stream
// bytes; control frames, which a client never sends early) is dropped and
// counted.
func (s *Session) earlyAcceptable(h *wire.Header) bool {
	if s.client || s.sec.early.keys == nil || h.Type != wire.TypeUpdate {
		s.st.EarlyDropped++
		return false
	}
	return true
}
