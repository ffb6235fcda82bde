package session

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/recovery"
	"github.com/fresh-udp/fresh/internal/seal"
	"github.com/fresh-udp/fresh/internal/wire"
)

// The handshake is TLS 1.3 through crypto/tls's QUIC API (RFC 9001), which
// is itself sans-I/O: TLS hands us the bytes to send at each encryption
// level and the traffic secrets, and we carry the bytes in Initial and
// Crypto frames and protect packets with keys derived from the secrets
// (package internal/seal).
//
// Reliability is by flights, as DTLS 1.3 does it (RFC 9147 §5.8), rather
// than QUIC's per-level acknowledgments: a side resends its whole latest
// flight when its timer fires (the client) or when the peer resends the
// flight before (the server, on a repeated ClientHello), and the next
// flight from the peer acknowledges it implicitly. The flights:
//
//  1. client: ClientHello, in Initial datagrams (padded to 1200 bytes),
//     and, when it resumes a session with 0-RTT, its update under the
//     early keys (early.go);
//  2. server: ServerHello in Crypto frames under the Initial keys, then
//     its encrypted extensions, certificate, certificate verify and
//     Finished in Crypto frames under the handshake keys;
//  3. client: (certificate, certificate verify,) Finished under the
//     handshake keys;
//  4. server: Accept under the application keys: the handshake is
//     confirmed (RFC 9001 §4.1.2), and a session ticket follows if the
//     server issues them.
//
// The client resends flight 3 until the Accept (or any packet under the
// application keys) arrives; a server that sees flight 3 again resends the
// Accept.
//
// What goes before the handshake keys — the Initials, the ServerHello's
// Crypto, a Close of a handshake that failed before them — is sealed under
// the Initial keys (RFC 9001 §5.2, internal/seal's NewInitial), derived
// from the client's connection ID: no secret, but a corrupted or
// off-path-forged datagram fails to open and is dropped as a lost one
// would be, and the flight's retransmission repairs it. A Retry carries
// its integrity tag (RFC 9001 §5.8) instead, checked in HandleFrom. Only
// a Close that tells a plaintext peer this end runs TLS (closeNoTLS) goes
// in the clear: that peer can open nothing.

// ALPN is the application protocol fresh negotiates (RFC 7301); TLS over
// QUIC-style transports must negotiate one (RFC 9001 §8.1).
const ALPN = "fresh/1"

// transportParams is what each side's TLS quic_transport_parameters
// extension starts with: fresh's protocol version, so that a peer speaking
// another one fails the handshake rather than the stream. Parameters
// follow it (params.go).
var transportParams = []byte{'f', 'r', 'e', 's', 'h', wire.Version}

// closeNoTLS: the peer sent a plaintext handshake to an endpoint that
// requires TLS, or the other way round.
const closeNoTLS uint32 = 5

// closeTLSAlert + alert is the Close code of a handshake that failed with a
// TLS alert, as QUIC's CRYPTO_ERROR range (RFC 9001 §4.8).
const closeTLSAlert uint32 = 0x100

// TLS encryption levels as array indices (0-RTT carries no handshake
// bytes: its keys are early.go's).
const (
	levelInitial = iota
	levelHandshake
	levelApp
	numLevels
)

func levelOf(l tls.QUICEncryptionLevel) (int, bool) {
	switch l {
	case tls.QUICEncryptionLevelInitial:
		return levelInitial, true
	case tls.QUICEncryptionLevelHandshake:
		return levelHandshake, true
	case tls.QUICEncryptionLevelApplication:
		return levelApp, true
	}
	return 0, false
}

var tlsLevels = [numLevels]tls.QUICEncryptionLevel{tls.QUICEncryptionLevelInitial, tls.QUICEncryptionLevelHandshake, tls.QUICEncryptionLevelApplication}

// cryptoOut is one level's handshake bytes to send: all of them, kept for
// retransmission, and how far the current pass has sent.
type cryptoOut struct {
	data []byte
	sent int
}

func (o *cryptoOut) pending() bool { return o.sent < len(o.data) }

// cryptoIn reassembles one level's handshake bytes, which may arrive in
// several datagrams and out of order, and hands TLS the contiguous prefix.
type cryptoIn struct {
	next  int64 // bytes handed to TLS
	frags []cryptoFrag
	held  int // bytes in frags
}

type cryptoFrag struct {
	off  int64
	data []byte
}

// security is a session's TLS handshake and packet protection.
type security struct {
	conn *tls.QUICConn // nil once the handshake needs it no more
	out  [numLevels]cryptoOut
	in   [numLevels]cryptoIn

	hsRead, hsWrite *seal.Keys
	// The Initial keys (RFC 9001 §5.2): this side's to seal its Initial
	// packets (Initial, Crypto before the handshake keys, an early
	// Close), the peer's to open them. Dropped with the handshake keys.
	initWrite, initRead *seal.Keys
	// The handshake read secret and its suite: after serverDone, hsRead
	// is derived again from them only if the client repeats its Finished.
	hsSecret []byte
	// Application keys and key update (RFC 9001 §6): appRead[readPhase]
	// opens the current phase, the other slot the previous one (late
	// packets), nextRead the peer's next, derived on first need.
	appRead    [2]*seal.Keys
	nextRead   *seal.Keys
	appWrite   *seal.Keys
	writePhase uint8
	readPhase  uint8
	// Small fields side by side (the struct stays in the 896-byte size
	// class, TestSecurityFitsSizeClass): hsSecret's suite, and the
	// handshake's progress.
	hsSuite   uint16
	sendLevel uint8 // the level of the Crypto frame poll just built
	done      bool  // TLS reports the handshake complete
	confirmed bool  // the handshake keys are gone
	sealed    int64 // packets sealed with appWrite (a key update after Config.KeyUpdateInterval)

	replay [2]seal.ReplayWindow // data space, control space
	ctlPN  int64                // next control packet number (ACK, Accept, Crypto, Close)

	early earlyState // 0-RTT keys (early.go)

	state tls.ConnectionState // without the peer's certificates, which peer keeps
	peer  peerCerts
}

// PrepareTLS is c as a session uses it: TLS 1.3 only, ALPN "fresh/1" if
// it names none. It returns c itself when it already is, and a clone
// otherwise. A listener prepares its config once and gives every session
// the same one: session tickets are encrypted with keys crypto/tls makes
// per Config, so a clone per connection could never resume another's.
func PrepareTLS(c *tls.Config) *tls.Config {
	if c.MinVersion >= tls.VersionTLS13 && len(c.NextProtos) > 0 {
		return c
	}
	c = c.Clone()
	c.MinVersion = tls.VersionTLS13
	if len(c.NextProtos) == 0 {
		c.NextProtos = []string{ALPN}
	}
	return c
}

// newSecurity starts the TLS side of a session whose client chose
// connection ID connID.
func newSecurity(cfg *Config, connID uint64, client bool) (*security, error) {
	conf := PrepareTLS(cfg.TLS)
	// Session events let a session decline 0-RTT (early.go); the client
	// then stores its tickets itself.
	qc := &tls.QUICConfig{TLSConfig: conf, EnableSessionEvents: true}
	var conn *tls.QUICConn
	if client {
		if conf.ServerName == "" && !conf.InsecureSkipVerify {
			return nil, fmt.Errorf("%w: TLS config has no ServerName to verify the server's certificate against", ErrInvalidConfig)
		}
		conn = tls.QUICClient(qc)
	} else {
		if len(conf.Certificates) == 0 && conf.GetCertificate == nil && conf.GetConfigForClient == nil {
			return nil, fmt.Errorf("%w: a server's TLS config needs a certificate (Certificates or GetCertificate)", ErrInvalidConfig)
		}
		conn = tls.QUICServer(qc)
	}
	if client {
		// A server sets its own once it has read the client's
		// (QUICTransportParametersRequired): what it sends depends on them.
		conn.SetTransportParameters(clientParams(cfg.MinAckDelay, cfg.MinAckDelay >= 0))
	}
	sec := &security{conn: conn}
	var err error
	if sec.initWrite, err = seal.NewInitial(connID, client); err == nil {
		sec.initRead, err = seal.NewInitial(connID, !client)
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("%w: Initial keys: %w", ErrHandshake, err)
	}
	sec.replay[0], sec.replay[1] = seal.NewReplayWindow(), seal.NewReplayWindow()
	if err := conn.Start(context.Background()); err != nil {
		conn.Close()
		return nil, fmt.Errorf("%w: %w", ErrHandshake, err)
	}
	return sec, nil
}

// drainTLS takes every event TLS has for us.
func (s *Session) drainTLS() {
	sec := s.sec
	for sec.conn != nil {
		e := sec.conn.NextEvent()
		switch e.Kind {
		case tls.QUICNoEvent:
			if sec.done && !s.client {
				s.serverDone()
			}
			return
		case tls.QUICSetReadSecret, tls.QUICSetWriteSecret:
			k, err := seal.New(e.Suite, e.Data)
			if err != nil {
				s.failHandshake(err)
				return
			}
			read := e.Kind == tls.QUICSetReadSecret
			if e.Level == tls.QUICEncryptionLevelEarly {
				s.onEarlySecret(read, k)
				break
			}
			switch lvl, _ := levelOf(e.Level); {
			case lvl == levelHandshake && read:
				sec.hsRead = k
				sec.hsSecret, sec.hsSuite = append([]byte(nil), e.Data...), e.Suite
			case lvl == levelHandshake:
				sec.hsWrite = k
			case lvl == levelApp && read:
				sec.appRead[0] = k
			case lvl == levelApp:
				sec.appWrite = k
			}
		case tls.QUICWriteData:
			if lvl, ok := levelOf(e.Level); ok {
				sec.out[lvl].data = append(sec.out[lvl].data, e.Data...)
			}
		case tls.QUICTransportParameters:
			if err := s.onPeerParams(e.Data); err != nil {
				s.failHandshake(err)
				return
			}
		case tls.QUICTransportParametersRequired:
			sec.conn.SetTransportParameters(s.localParams())
		case tls.QUICResumeSession:
			s.onResumeSession(e.SessionState)
		case tls.QUICStoreSession:
			s.onStoreSession(e.SessionState)
		case tls.QUICRejectedEarlyData:
			s.onEarlyRejected()
		case tls.QUICHandshakeDone:
			sec.done = true
			sec.state = sec.conn.ConnectionState()
			sec.peer.keep(&sec.state)
			if !s.client {
				// Flight 4: the Accept, and a session ticket for
				// resumption if the configuration issues them, allowing
				// 0-RTT with Allow0RTT (early.go).
				s.state = stateOpen
				s.acceptPending = true
				s.validated = true
				if !s.cfg.TLS.SessionTicketsDisabled {
					_ = sec.conn.SendSessionTicket(tls.QUICSessionTicketOptions{EarlyData: s.cfg.Allow0RTT})
				}
				s.queueNewToken()
			}
		case tls.QUICErrorEvent:
			s.failHandshake(e.Err)
			return
		}
	}
}

// onCrypto takes handshake bytes received at level. It reports whether
// they were all seen before (the peer is resending its flight).
func (s *Session) onCrypto(level int, off int64, data []byte) (repeat bool) {
	sec := s.sec
	if sec.conn == nil {
		return true // after the handshake: nothing more TLS needs
	}
	in := &sec.in[level]
	end := off + int64(len(data))
	if end <= in.next {
		return true
	}
	if end > wire.MaxHandshakeBytes || in.held+len(data) > wire.MaxHandshakeBytes {
		s.failHandshake(errors.New("handshake messages too large"))
		return false
	}
	in.frags = append(in.frags, cryptoFrag{off, append([]byte(nil), data...)})
	in.held += len(data)
	for progress := true; progress; {
		progress = false
		for i := 0; i < len(in.frags); i++ {
			f := in.frags[i]
			fEnd := f.off + int64(len(f.data))
			if f.off > in.next {
				continue
			}
			in.frags = append(in.frags[:i], in.frags[i+1:]...)
			in.held -= len(f.data)
			i--
			if fEnd <= in.next {
				continue
			}
			if err := sec.conn.HandleData(tlsLevels[level], f.data[in.next-f.off:]); err != nil {
				s.failHandshake(err)
				return false
			}
			in.next = fEnd
			progress = true
		}
	}
	s.drainTLS()
	return false
}

// failHandshake ends the session with the TLS error, telling the peer the
// alert (RFC 9001 §4.8) when there is one.
func (s *Session) failHandshake(err error) {
	code := closeProtocol
	var alert tls.AlertError
	if errors.As(err, &alert) {
		code = closeTLSAlert + uint32(alert)
	}
	s.fail(fmt.Errorf("%w: %w", ErrHandshake, err), code)
}

// confirm ends the handshake on this side (RFC 9001 §4.9.2): the
// handshake keys and the bytes kept for retransmission go. The client
// keeps TLS to take the session ticket that follows the Accept.
func (s *Session) confirm() {
	sec := s.sec
	if sec.confirmed {
		return
	}
	sec.confirmed = true
	sec.hsRead, sec.hsWrite, sec.hsSecret = nil, nil, nil
	sec.initRead, sec.initWrite = nil, nil
	s.dropEarly()
	sec.in[levelInitial], sec.in[levelHandshake] = cryptoIn{}, cryptoIn{}
	sec.out[levelInitial], sec.out[levelHandshake] = cryptoOut{}, cryptoOut{}
	if !s.client && !sec.out[levelApp].pending() {
		s.releaseTLS()
	}
}

// serverDone drops what a server's handshake needed and its connection
// does not, once TLS has completed and handed over its last bytes (the
// session ticket, queued at levelApp): the TLS state machine itself
// (crypto/tls keeps its handshake buffers, transcript and record-layer
// ciphers as long as the QUICConn lives, several KiB a connection), the
// reassembly of the client's flights, our flight 2 kept for
// retransmission (the client's Finished proves it has all of it), the
// handshake write keys (the Accept and everything after go under the
// application keys) and the read keys' cipher state: only their secret
// stays until the handshake is confirmed (confirm), for a client that did
// not hear our Accept resends its Finished under them, and a repeated
// Finished is what resends the Accept (unprotect derives them again then).
// A monitor holds thousands of connections whose clients send nothing for
// a while after the handshake, which would keep all of this until their
// first 1-RTT packet.
func (s *Session) serverDone() {
	sec := s.sec
	s.releaseTLS()
	sec.hsRead, sec.hsWrite = nil, nil
	sec.initRead, sec.initWrite = nil, nil // the client's Initials are all in
	sec.in = [numLevels]cryptoIn{}
	sec.out[levelInitial], sec.out[levelHandshake] = cryptoOut{}, cryptoOut{}
}

// releaseTLS drops the TLS state machine (and stops its handshake
// goroutine if it still runs).
func (s *Session) releaseTLS() {
	if s.sec != nil && s.sec.conn != nil {
		s.sec.conn.Close()
		s.sec.conn = nil
	}
}

// handshakeBackoff is the client's handshake retransmission timer after
// tries expiries of it for the current flight: 250 ms, doubled per
// expiry up to recovery.MaxBackoffRTO (2 s), the data path's bound and for
// its reason: a flight every 2 s costs nothing, while doubling on to 8 s
// left a client through 30 % loss in bursts waiting 4 and 8 s between
// tries, past HandshakeTimeout.
func handshakeBackoff(tries int) time.Duration {
	return min((250*time.Millisecond)<<min(tries, 5), recovery.MaxBackoffRTO)
}

// pollHandshake builds the next handshake datagram, if one is due.
func (s *Session) pollHandshake(now clock.Mono, wallUS int64, buf []byte) ([]byte, bool) {
	sec := s.sec
	if s.client && s.state == stateHandshake && !now.Before(s.hsNext) {
		// Retransmission timer: resend the latest flight, with
		// exponential backoff from 250 ms.
		s.hsNext = now.Add(handshakeBackoff(s.hsTries))
		s.hsTries++
		s.hsSent = now
		if len(sec.out[levelHandshake].data) > 0 {
			sec.out[levelHandshake].sent = 0
		} else {
			sec.out[levelInitial].sent = 0
		}
	}
	// Handshake datagrams are at most 1200 bytes whatever MaxDatagram
	// says: every endpoint accepts that much (as QUIC requires of paths,
	// RFC 9000 §14), and the peer's own MaxDatagram is not known yet.
	const room = wire.MinInitialSize
	// Every one is sealed (protect), at each level: room for the tag.
	for lvl := range numLevels {
		o := &sec.out[lvl]
		if !o.pending() {
			continue
		}
		if lvl == levelApp && !sec.confirmed && s.client {
			break // post-handshake messages wait for the handshake
		}
		if s.client && lvl == levelInitial {
			n := min(len(o.data)-o.sent, room-wire.HeaderLen-12-len(s.token)-seal.Overhead)
			b := s.header(buf, wallUS, wire.TypeInitial, 0, 0)
			b = wire.AppendSealedInitial(b, wire.Initial{Token: s.token, CryptoOffset: int64(o.sent), Crypto: o.data[o.sent : o.sent+n]})
			o.sent += n
			return b, true
		}
		limit := room - wire.HeaderLen - wire.CryptoOverhead - seal.Overhead
		n := min(len(o.data)-o.sent, limit)
		sec.sendLevel = uint8(lvl)
		b := wire.AppendCrypto(s.header(buf, wallUS, wire.TypeCrypto, 0, 0), &wire.Crypto{Offset: int64(o.sent), Data: o.data[o.sent : o.sent+n]})
		o.sent += n
		if lvl == levelApp && !o.pending() && !s.client {
			// The session ticket has gone (its bytes are in b): a
			// server never resends it.
			*o = cryptoOut{}
		}
		return b, true
	}
	return nil, false
}

// handshakePending reports whether handshake bytes wait to be sent.
func (s *Session) handshakePending() bool {
	if s.sec == nil {
		return false
	}
	for lvl := range numLevels {
		if s.sec.out[lvl].pending() && (lvl != levelApp || s.sec.confirmed || !s.client) {
			return true
		}
	}
	return false
}

// TLSState is the negotiated TLS connection state (peer certificates,
// ALPN, cipher suite, resumption), once the handshake has completed.
func (s *Session) TLSState() (tls.ConnectionState, bool) {
	if s.sec == nil || !s.sec.done {
		return tls.ConnectionState{}, false
	}
	st := s.sec.state
	s.sec.peer.restore(&st)
	return st, true
}

// isControl says which packet-number space a packet type numbers in:
// control packets are never acknowledged, so they keep a sequence of their
// own beside the recovery tracker's (and a replay window of their own).
func isControl(t wire.Type) bool {
	switch t {
	case wire.TypeData, wire.TypeUpdate, wire.TypePing, wire.TypeCommit, wire.TypePMTUProbe, wire.TypeAckFrequency:
		return false
	}
	return true
}

// protect seals an outgoing datagram built by poll, or returns it as is
// when it travels unprotected (a Close telling a plaintext peer this end
// runs TLS). It reports false for a packet that may not go out without
// keys.
func (s *Session) protect(b []byte) ([]byte, bool) {
	sec := s.sec
	t := wire.Type(b[1])
	var keys *seal.Keys
	var epoch uint8
	switch {
	case t == wire.TypeInitial, t == wire.TypeCrypto && sec.sendLevel == levelInitial:
		keys, epoch = sec.initWrite, wire.EpochInitial
	case t == wire.TypeCrypto && sec.sendLevel == levelHandshake:
		keys, epoch = sec.hsWrite, wire.EpochHandshake
	case t == wire.TypeClose && s.closeCode == closeNoTLS:
		return b, true // the peer runs without TLS: it could open nothing sealed
	case t == wire.TypeClose && !s.client && !sec.done && sec.out[levelInitial].sent == 0:
		// The handshake failed while TLS took the ClientHello, after it
		// had derived keys and written our flight, none of which left
		// (the Close goes first): a resumption or a client not asked for
		// a certificate is verified there (tls.Config.VerifyConnection).
		// Without our ServerHello the client has no handshake key to
		// open a Close sealed with ours and would resend its Initial
		// until it timed out; under the Initial keys it reads the
		// alert, as QUIC's server sends its CONNECTION_CLOSE in an
		// Initial packet (RFC 9000 §10.2.3).
		keys, epoch = sec.initWrite, wire.EpochInitial
	case sec.appWrite == nil && s.client && sec.early.keys != nil && t == wire.TypeUpdate:
		keys, epoch = sec.early.keys, wire.EpochEarly
	case sec.appWrite != nil:
		// Not before the handshake is confirmed, nor before the peer
		// has followed the last update, its packets under the current
		// phase's keys showing it (RFC 9001 §6.1: no subsequent update
		// until the current phase is acknowledged): a second flip would
		// reuse the phase bit of keys the peer still holds as its
		// previous ones, and it could open nothing of ours.
		if sec.sealed >= s.cfg.KeyUpdateInterval && sec.readPhase == sec.writePhase && sec.confirmed {
			s.updateKeys()
		}
		keys, epoch = sec.appWrite, wire.EpochApp0+sec.writePhase
		sec.sealed++
	case t == wire.TypeClose && sec.hsWrite != nil:
		keys, epoch = sec.hsWrite, wire.EpochHandshake
	case t == wire.TypeClose:
		// The handshake failed before the handshake keys: the alert
		// goes under the Initial keys, as QUIC's Initial CONNECTION_CLOSE.
		keys, epoch = sec.initWrite, wire.EpochInitial
	}
	if keys == nil {
		return nil, false
	}
	control := isControl(t)
	pn := uint64(int64(b[12])<<56 | int64(b[13])<<48 | int64(b[14])<<40 | int64(b[15])<<32 | int64(b[16])<<24 | int64(b[17])<<16 | int64(b[18])<<8 | int64(b[19]))
	if control {
		pn = uint64(sec.ctlPN)
		sec.ctlPN++
		for i := range 8 {
			b[12+i] = byte(pn >> (56 - 8*i))
		}
	}
	b[2] |= wire.FlagProtected
	b[3] = epoch
	ad := wire.HeaderLen
	if t == wire.TypeInitial {
		ad += wire.InitialClearLen(s.token) // the token stays readable, authenticated (wire.Initial)
	}
	return keys.Seal(b, ad, pn, control), true
}

// updateKeys moves the send side to the next key phase (RFC 9001 §6.1).
func (s *Session) updateKeys() {
	sec := s.sec
	next, err := sec.appWrite.Next()
	if err != nil {
		return
	}
	sec.appWrite, sec.writePhase, sec.sealed = next, sec.writePhase^1, 0
	s.st.KeyUpdates++
}

// unprotectErr is unprotect for Handle.
func (s *Session) unprotectErr(h *wire.Header, b, body []byte) ([]byte, error) {
	pt, ok := s.unprotect(h, b, body)
	if !ok {
		return nil, seal.ErrAuth
	}
	return pt, nil
}

// handshakeDue reports whether pollHandshake has something to send now:
// bytes of the current flight, or the client's retransmission timer.
func (s *Session) handshakeDue(now clock.Mono) bool {
	return s.handshakePending() || (s.client && s.state == stateHandshake && !now.Before(s.hsNext))
}

// unprotect authenticates and decrypts a received packet, and drops it
// (counted) if it is forged, replayed, or unprotected where it must not
// be. It returns the plaintext body.
func (s *Session) unprotect(h *wire.Header, b, body []byte) ([]byte, bool) {
	sec := s.sec
	handshaking := s.state == stateHandshake
	if h.Flags&wire.FlagProtected == 0 {
		switch {
		case h.Type == wire.TypeRetry && s.client && handshaking:
			return body, true // its integrity tag is checked (HandleFrom)
		case h.Type == wire.TypeInitial && !s.client && handshaking && sec.in[levelInitial].next == 0 && plaintextProbe(body, len(b)):
			// A client without TLS (its Initial carries no ClientHello,
			// so it is not sealed either), before any ClientHello came:
			// handle fails the handshake saying so, rather than let it
			// time out.
			return body, true
		case h.Type == wire.TypeAccept && s.client && handshaking:
			// A plaintext server answered. Say so rather than time out
			// (a forger could as well send a plaintext Close here).
			s.fail(fmt.Errorf("%w: the server runs without TLS (Insecure); both ends must use TLS", ErrHandshake), closeNoTLS)
			return nil, false
		}
		s.st.Unauthenticated++
		return nil, false
	}
	if h.Epoch == wire.EpochEarly && !s.earlyAcceptable(h) {
		return nil, false
	}
	if h.Epoch == wire.EpochInitial && !s.initialAcceptable(h, handshaking) {
		s.st.Unauthenticated++
		return nil, false
	}
	control := isControl(h.Type)
	space := 0
	if control {
		space = 1
	}
	if !sec.replay[space].Check(h.PN) {
		s.st.Replayed++
		return nil, false
	}
	var pt []byte
	err := seal.ErrAuth
	switch p := h.Epoch - wire.EpochApp0; {
	case h.Epoch == wire.EpochInitial:
		pt, err = openInitialLevel(sec.initRead, h, b, control)
	case h.Epoch == wire.EpochHandshake:
		if sec.hsRead == nil && sec.hsSecret != nil {
			// A server that completed its handshake let the keys go
			// (serverDone): the client repeats its Finished, so our
			// Accept was lost, and this packet may be that Finished.
			sec.hsRead, _ = seal.New(sec.hsSuite, sec.hsSecret)
		}
		if sec.hsRead != nil {
			pt, err = sec.hsRead.Open(b, wire.HeaderLen, uint64(h.PN), control)
		}
	case h.Epoch == wire.EpochEarly:
		pt, err = sec.early.keys.Open(b, wire.HeaderLen, uint64(h.PN), control)
	case p == sec.readPhase:
		if k := sec.appRead[p]; k != nil {
			pt, err = k.Open(b, wire.HeaderLen, uint64(h.PN), control)
		}
	default:
		pt, err = s.openOtherPhase(h, b, control)
	}
	if err != nil {
		s.st.Unauthenticated++ // forged, corrupted, or keys we no longer (or do not yet) have
		return nil, false
	}
	sec.replay[space].Mark(h.PN)
	if (h.Epoch == wire.EpochApp0 || h.Epoch == wire.EpochApp1) && !sec.confirmed && sec.done && !s.client {
		// Application keys in use on both sides: a server's handshake is
		// confirmed by the client's first 1-RTT packet (RFC 9001
		// §4.1.2). A client's only by the Accept (Handle), not by the
		// session ticket the server sends beside it: were the Accept
		// lost, the client would drop its Finished, have nothing left
		// to resend, and the server would wait for it to resend the
		// Accept. A 0-RTT packet confirms nothing: it can be replayed.
		s.confirm()
	}
	return pt, true
}

// initialAcceptable screens a packet under the Initial keys before it is
// opened: only what is sent under them, and only while it can be needed —
// a client's Initial at a server and a server's Crypto at a client while
// they handshake, and a Close before this end has the handshake keys (the
// peer may have failed before it had them; after, it seals its Close with
// them). Anyone who saw the connection ID can seal with the Initial keys,
// so nothing else may be taken under them.
func (s *Session) initialAcceptable(h *wire.Header, handshaking bool) bool {
	switch {
	case s.sec.initRead == nil || !handshaking:
		return false
	case h.Type == wire.TypeInitial:
		return !s.client
	case h.Type == wire.TypeCrypto:
		return s.client
	}
	return h.Type == wire.TypeClose && s.sec.hsRead == nil
}

// openInitialLevel opens a packet b under the Initial keys k: in place,
// as Keys.Open does, and for an Initial with its token (in the clear) as
// associated data too. It returns the whole plaintext body, the token
// included.
func openInitialLevel(k *seal.Keys, h *wire.Header, b []byte, control bool) ([]byte, error) {
	ad := wire.HeaderLen
	if h.Type == wire.TypeInitial {
		_, clear, err := wire.ParseInitialToken(b[wire.HeaderLen:], len(b))
		if err != nil {
			return nil, seal.ErrAuth // its lengths are authenticated: a bad one is damage
		}
		ad += clear
	}
	pt, err := k.Open(b, ad, uint64(h.PN), control)
	if err != nil {
		return nil, err
	}
	return b[wire.HeaderLen : ad+len(pt)], nil
}

// plaintextProbe reports whether an unprotected Initial body (of a
// datagram of size bytes) is a plaintext client's: well formed, and with
// no ClientHello, which every TLS client's first Initial carries (sealed).
func plaintextProbe(body []byte, size int) bool {
	var in wire.Initial
	return wire.ParseInitial(body, size, &in) == nil && in.CryptoOffset == 0 && len(in.Crypto) == 0
}

// openOtherPhase opens a packet of the key phase that is not current:
// either a late packet of the previous phase, whose keys we keep until the
// next update, or the first of the peer's next phase (RFC 9001 §6.2-6.3).
// A failed Open may overwrite the body, so each try works on a copy.
func (s *Session) openOtherPhase(h *wire.Header, b []byte, control bool) ([]byte, error) {
	sec := s.sec
	cur := sec.appRead[sec.readPhase]
	if cur == nil {
		return nil, seal.ErrAuth
	}
	s.scratch = append(s.scratch[:0], b...)
	if prev := sec.appRead[sec.readPhase^1]; prev != nil {
		if pt, err := prev.Open(b, wire.HeaderLen, uint64(h.PN), control); err == nil {
			return pt, nil
		}
		copy(b, s.scratch)
	}
	if sec.nextRead == nil {
		next, err := cur.Next()
		if err != nil {
			return nil, err
		}
		sec.nextRead = next
	}
	pt, err := sec.nextRead.Open(b, wire.HeaderLen, uint64(h.PN), control)
	if err != nil {
		copy(b, s.scratch)
		return nil, err
	}
	// The peer moved on: its next phase is current, the old current
	// becomes the previous, and we update our send keys to match.
	sec.readPhase ^= 1
	sec.appRead[sec.readPhase] = sec.nextRead
	sec.nextRead = nil
	if sec.writePhase != sec.readPhase {
		s.updateKeys()
	}
	return pt, nil
}
