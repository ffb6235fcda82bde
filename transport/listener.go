package transport

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/loglimit"
	"github.com/fresh-udp/fresh/internal/session"
	"github.com/fresh-udp/fresh/internal/wire"
)

// maxInitialOpened is the size of the buffer a Listener opens sealed
// Initials into: a client pads its Initials to 1200 bytes; a longer one
// (allowed, as QUIC pads to the path MTU) is opened into a buffer of its
// own.
const maxInitialOpened = 1500

// maxPendingAccept bounds the connections whose handshake completed and
// that wait for Accept. Handshaking connections do not count: a flood of
// handshakes that never complete cannot fill it.
const maxPendingAccept = 64

// Listener accepts fresh connections on a Transport's socket.
// Connections are demultiplexed by connection ID; a connection moves to a
// client's new address (its NAT rebound) only on an authentic packet from
// there, and validates the address (RFC 9000 §9; see the package doc's
// "Connection migration").
//
// Before it keeps any state for a new connection, a Listener validates
// the client's address by a stateless Retry (Transport.DisableRetry) and
// applies its limits (Transport.MaxConnections, MaxConnectionsPerSource,
// HandshakeRate, MaxHandshakes, MaxHandshakesPerSource); Stats counts
// what it dropped and why.
type Listener struct {
	t             *Transport
	cfg           Config
	ownsTransport bool // package Listen's: Close closes the Transport
	maxConns      int
	maxHandshakes int
	// hsReserve is the last part of maxHandshakes, kept for sources with
	// no handshake under way (sources.admit's crowded).
	hsReserve    int
	loopbackFree bool // loopback sources are exempt from the per-source connection and rate limits

	// The Transport's read loop only.
	tokens *retryTokens // nil with DisableRetry
	// newTokens mints and checks the tokens given for the next connection
	// (NewToken frames, retry.go); nil with DisableRetry or without TLS.
	newTokens *retryTokens
	tokenBuf  []byte
	retryBuf  []byte // a Retry or a token refusal being built
	openBuf   []byte // a sealed Initial opened to read its token

	mu      sync.Mutex
	held    int // connections held: handshaking, waiting for Accept or accepted
	sources *sourceTable
	ready   []*Conn // handshake complete, waiting for Accept
	closed  bool

	hsLog loglimit.Limiter // rate limit of the rejected handshakes' log lines
	// handshakes counts the held connections whose handshake has not
	// ended (entry.handshaking: it completed and was delivered, expired,
	// or the connection ended); guarded by mu.
	handshakes int

	readySig  chan struct{} // ready may be non-empty
	done      chan struct{} // closed by Close
	closeOnce sync.Once
	stopNTP   context.CancelFunc
}

func newListener(t *Transport, conf Config, stopNTP context.CancelFunc) *Listener {
	now := conf.Clock.Now()
	maxConns, perSource, rate, burst := t.limits()
	l := &Listener{
		t: t, cfg: conf,
		maxConns:     maxConns,
		loopbackFree: !t.LimitLoopback,
		sources:      newSourceTable(perSource, t.maxHandshakesPerSource(), rate, burst, now),
		readySig:     make(chan struct{}, 1),
		done:         make(chan struct{}),
		stopNTP:      stopNTP,
	}
	l.maxHandshakes = t.maxHandshakes()
	l.hsReserve = l.maxHandshakes / hsReserveShare
	if !t.DisableRetry {
		l.tokens = newRetryTokens(now, conf.HandshakeTimeout)
		l.tokenBuf = make([]byte, 0, newTokenLen)
		if conf.TLS != nil {
			l.newTokens = newNewTokens(now)
		}
		l.retryBuf = make([]byte, 0, wire.HeaderLen+5+255+wire.ProtectedOverhead) // the largest: a refusal's Close
	}
	l.openBuf = make([]byte, 0, maxInitialOpened)
	return l
}

// Addr is the listener's UDP address.
func (l *Listener) Addr() net.Addr { return l.t.Conn.LocalAddr() }

// Accept waits for the next connection whose handshake has completed.
func (l *Listener) Accept(ctx context.Context) (*Conn, error) {
	for {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return nil, ErrListenerClosed
		}
		if len(l.ready) > 0 {
			c := l.ready[0]
			l.ready[0] = nil
			l.ready = l.ready[1:]
			more := len(l.ready) > 0
			l.mu.Unlock()
			if more {
				signal(l.readySig) // for another Accept waiting
			}
			return c, nil
		}
		l.mu.Unlock()
		select {
		case <-l.readySig:
		case <-l.done:
			return nil, ErrListenerClosed
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// initial handles an Initial (datagram b, header h) for an unknown
// connection ID: it opens a connection if the Initial passes address
// validation and the limits. The token is read in the clear (a sealed
// Initial keeps it readable, wire.Initial), so an Initial without one is
// answered with a Retry before any key is derived. Before it refuses a
// token or keeps state, a sealed Initial (a TLS client's) is opened under
// the Initial keys of its connection ID: one corrupted on the way, or
// forged off the path, is dropped and counted (InitialsUnauthenticated),
// and the client's retransmission repairs it; a plaintext one is parsed.
// The session opens it again for itself.
func (l *Listener) initial(h wire.Header, b []byte, from netip.AddrPort) *entry {
	st := &l.t.st
	token, _, err := wire.ParseInitialToken(b[wire.HeaderLen:], len(b))
	if err != nil {
		st.malformed.Add(1)
		return nil
	}
	sealed := h.Flags&wire.FlagProtected != 0
	if !sealed && !l.intact(&h, b) {
		return nil // a plaintext one is whole or not before anything (no key to derive)
	}
	now := l.cfg.Clock.Now()
	if l.tokens != nil && token == nil {
		l.sendRetry(h.ConnID, from, now)
		return nil
	}
	if sealed && !l.intact(&h, b) {
		return nil
	}
	validated := false
	if l.newTokens != nil && isNewToken(token) {
		// A token from an earlier connection's NewToken frame: valid, it
		// validates the address; not (expired, another address, a
		// restarted listener's), the client gets the Retry it would have
		// got without one (RFC 9000 §8.1.3), not a refusal.
		if !l.newTokens.valid(token[1:], from, 0, now) {
			l.t.st.newTokensRefused.Add(1)
			l.sendRetry(h.ConnID, from, now)
			return nil
		}
		l.t.st.newTokensAccepted.Add(1)
		return l.open(h.ConnID, from, true, now)
	}
	if l.tokens != nil {
		if err := l.tokens.check(token, from, h.ConnID, now); err != nil {
			st.badToken.Add(1)
			l.refuseToken(&h, from, err)
			return nil
		}
		validated = true
	}
	return l.open(h.ConnID, from, validated, now)
}

// intact reports whether Initial b (header h) is whole: a sealed one
// opens under its Initial keys (counted as InitialsUnauthenticated if
// not), a plaintext one parses (counted as Malformed if not). A TLS
// listener takes an unsealed one only without a ClientHello (a plaintext
// client's, which the session refuses saying why): every TLS client of
// this version seals its ClientHello, so one in the clear is forged
// (counted as InitialsUnauthenticated).
func (l *Listener) intact(h *wire.Header, b []byte) bool {
	sealed := h.Flags&wire.FlagProtected != 0
	body := b[wire.HeaderLen:]
	if sealed {
		var err error
		if body, err = session.OpenInitial(l.openBuf, h, b); err != nil {
			l.t.st.initialsUnauth.Add(1)
			return false
		}
	}
	var in wire.Initial
	if wire.ParseInitial(body, len(b), &in) != nil {
		l.t.st.malformed.Add(1)
		return false
	}
	if !sealed && l.cfg.TLS != nil && (in.CryptoOffset != 0 || in.Crypto != nil) {
		l.t.st.initialsUnauth.Add(1)
		return false
	}
	return true
}

// sendRetry answers an Initial without a token with a Retry: one datagram
// smaller than the Initial, and no state kept.
func (l *Listener) sendRetry(connID uint64, to netip.AddrPort, now clock.Mono) {
	l.tokenBuf = l.tokens.mint(l.tokenBuf[:0], to, connID, now)
	b := session.AppendRetry(l.retryBuf, connID, l.cfg.Clock.Wall().UnixMicro(), l.tokenBuf)
	if err := l.t.sock.writeTo(b, to); err != nil {
		l.cfg.Logger.Debug("fresh: Retry not sent", "to", to, "err", err)
		return
	}
	l.t.st.retries.Add(1)
}

// refuseToken answers an Initial (header h) whose token failed (why) with
// a Close saying so, RFC 9000 §8.1.3's INVALID_TOKEN: a client takes one
// Retry per connection, so a dropped Initial would leave it resending the
// token until its HandshakeTimeout, and its Dial failing with no reason.
// Like the Retry it is smaller than the Initial and keeps no state.
func (l *Listener) refuseToken(h *wire.Header, to netip.AddrPort, why error) {
	b, err := session.AppendTokenRefusal(l.retryBuf, h, l.cfg.Clock.Wall().UnixMicro(), why.Error())
	if err == nil {
		err = l.t.sock.writeTo(b, to)
	}
	if err != nil {
		l.cfg.Logger.Debug("fresh: token refusal not sent", "to", to, "err", err)
	}
}

// open creates the connection of an admitted Initial: session, the
// Transport's entry, its place in the driver, and the handshake timer
// that drops it if its handshake does not complete in HandshakeTimeout.
// validated says the Initial carried a valid token, which lifts the
// session's anti-amplification limit.
func (l *Listener) open(id uint64, from netip.AddrPort, validated bool, now clock.Mono) *entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	if err := l.admit(); err != nil {
		return nil
	}
	// Every source, loopback too, gets its part of MaxHandshakes, and
	// the last places are kept for sources with none under way; an
	// exempt loopback source is spared the connection and rate limits.
	src := sourceOf(from.Addr())
	limited := !l.loopbackFree || !from.Addr().IsLoopback()
	crowded := l.handshakes >= l.maxHandshakes-l.hsReserve
	if err := l.sources.admit(src, limited, crowded, now); err != nil {
		switch err {
		case errHandshakes:
			l.t.st.handshakeLimit.Add(1)
		case errSourceHandshakes:
			l.t.st.sourceHandshakes.Add(1)
		case errSourceLimit:
			l.t.st.sourceLimit.Add(1)
		default:
			l.t.st.rateLimited.Add(1)
		}
		return nil
	}
	release := func() {
		l.sources.handshakeEnded(src)
		if limited {
			l.sources.release(src)
		}
	}
	cfg := l.cfg.sessionConfig()
	cfg.AddressValidated = validated
	if l.newTokens != nil {
		// For the client's next connection (the read loop, newTokens'
		// only user, is where open runs).
		cfg.NewToken = l.newTokens.mintNew(nil, from, now)
	}
	for range 4 { // a taken server ID is drawn again: 2^-32 odds at a million connections
		cfg.ServerConnID = l.t.newServerID()
		// The token of the ID the client's packets carry after the
		// handshake: the one a restarted server will see.
		cfg.StatelessResetToken = l.t.resetToken(cfg.ServerConnID)
		s, err := session.New(cfg, id, false, now)
		if err != nil {
			break
		}
		e, err := l.track(id, cfg.ServerConnID, from, src, limited, s)
		if err == nil {
			return e
		}
		s.Abort(err) // never run: release its TLS state
		if err != errSrvIDTaken {
			break
		}
	}
	release()
	return nil
}

// track makes a connection of session s, held until it ends, and starts
// it; l.mu is held.
func (l *Listener) track(id, srvID uint64, from netip.AddrPort, src netip.Addr, limited bool, s *session.Session) (*entry, error) {
	c := newConn(&l.cfg, l.t, net.UDPAddrFromAddrPort(from), s)
	c.ln = l
	e := &entry{c: c, id: id, srvID: srvID, addr: from, src: src, limited: limited, ln: l}
	if err := l.t.add(e); err != nil {
		return nil, err
	}
	l.held++
	l.t.st.hsStarted.Add(1)
	l.handshakes++
	e.handshaking = true
	e.timer = time.AfterFunc(l.cfg.HandshakeTimeout, func() { l.handshakeExpired(e) })
	l.t.drv.start(c)
	return e, nil
}

// admit applies the limits that do not depend on the source; l.mu is held.
func (l *Listener) admit() error {
	if l.held >= l.maxConns {
		l.t.st.totalLimit.Add(1)
		return errTotalLimit
	}
	if l.handshakes >= l.maxHandshakes {
		// Each handshake in progress holds crypto/tls's state and
		// goroutine: those of clients that never finish are bounded
		// here. The client retries its Initial.
		l.t.st.handshakeLimit.Add(1)
		return errHandshakes
	}
	if len(l.ready) >= maxPendingAccept {
		// The application is not keeping up: the client retries its
		// Initial, as a TCP client does a SYN a full accept queue dropped.
		l.t.st.backlogFull.Add(1)
		return errBacklogFull
	}
	return nil
}

// deliverIfOpen queues e for Accept once its handshake has completed.
func (l *Listener) deliverIfOpen(e *entry) {
	if e.delivered.Load() {
		return
	}
	select {
	case <-e.c.opened:
	default:
		return
	}
	if e.c.Err() != nil {
		return // ended before it opened: nothing to accept
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || e.delivered.Load() {
		return
	}
	e.delivered.Store(true)
	e.timer.Stop()
	e.timer = nil // not kept for the connection's life
	l.handshakeEnded(e)
	l.ready = append(l.ready, e.c)
	signal(l.readySig)
}

// handshakeExpired ends a connection whose handshake did not complete in
// HandshakeTimeout; it never reaches Accept.
func (l *Listener) handshakeExpired(e *entry) {
	l.mu.Lock()
	expired := !e.delivered.Load()
	if expired {
		e.delivered.Store(true) // never to be queued now
		l.handshakeEnded(e)
	}
	l.mu.Unlock()
	if !expired {
		return
	}
	e.c.abort(fmt.Errorf("%w: %w", ErrHandshake, context.DeadlineExceeded))
}

// handshakeEnded takes e out of the handshakes in progress, once; l.mu is
// held.
func (l *Listener) handshakeEnded(e *entry) {
	if e.handshaking {
		e.handshaking = false
		l.handshakes--
		l.sources.handshakeEnded(e.src)
	}
}

// forget releases what a connection that ended held of the Listener and,
// if it ended before its handshake completed, counts and logs that. It
// runs once per connection (Conn.finish), so a failure is counted once
// whatever ended it: the handshake timer, a TLS error, the peer or Close.
func (l *Listener) forget(e *entry) {
	// The connection's lock is released before the Listener's is taken:
	// never both at once.
	e.c.mu.Lock()
	completed, err := e.c.handshakeDone, e.c.s.Err()
	e.c.mu.Unlock()
	if !completed {
		l.handshakeFailed(e.addr, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.timer != nil {
		e.timer.Stop()
	}
	l.held--
	l.handshakeEnded(e)
	if e.limited {
		l.sources.release(e.src)
	}
	if i := slices.Index(l.ready, e.c); i >= 0 {
		l.ready = slices.Delete(l.ready, i, i+1) // ended before Accept took it
	}
}

// Close stops accepting and closes every connection the Listener accepted
// (each lingers as Conn.Close says). A Listener of package Listen also
// closes its Transport and socket; one of Transport.Listen leaves the
// Transport and its Dial'ed connections running. It is idempotent.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		l.ready = nil
		l.mu.Unlock()
		close(l.done)
		var wg sync.WaitGroup
		for _, c := range l.t.snapshot() {
			if c.ln == l {
				wg.Go(func() { c.Close() })
			}
		}
		wg.Wait()
		l.t.mu.Lock()
		if l.t.ln == l {
			l.t.ln = nil
		}
		l.t.mu.Unlock()
		l.stopNTP()
		if l.ownsTransport {
			l.t.Close()
		}
	})
	return nil
}
