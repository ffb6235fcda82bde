package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/session"
	"github.com/fresh-udp/fresh/internal/wire"
)

// maxPendingAccept bounds the connections whose handshake completed and
// that wait for Accept. Handshaking connections do not count: a flood of
// handshakes that never complete cannot fill it.
const maxPendingAccept = 64

// Listener accepts fresh connections on one UDP socket. Connections are
// demultiplexed by connection ID, and a connection takes datagrams only
// from the address it was opened from (RFC 9000 §9: no migration in this
// version, so a client whose NAT rebinds its address loses the
// connection at IdleTimeout).
//
// Before it keeps any state for a new connection, a Listener validates
// the client's address by a stateless Retry (Config.DisableRetry) and
// applies its limits (Config.MaxConnections, MaxConnectionsPerSource,
// HandshakeRate); Stats counts what it dropped and why.
type Listener struct {
	cfg  Config
	sock *socket

	// Read loop only.
	tokens   *retryTokens // nil with DisableRetry
	tokenBuf []byte
	retryBuf []byte

	mu      sync.Mutex
	conns   map[uint64]*entry
	sources *sourceTable
	ready   []*Conn // handshake complete, waiting for Accept
	closed  bool

	readySig  chan struct{} // ready may be non-empty
	drv       *driver       // sends and keeps timers for every Conn
	done      chan struct{} // closed by Close
	readDone  chan struct{}
	closeOnce sync.Once
	stopNTP   context.CancelFunc

	st listenerCounters
}

// entry is a connection the Listener holds.
type entry struct {
	c         *Conn
	id        uint64
	addr      netip.AddrPort // the only address it takes datagrams from
	src       netip.Addr     // the source it counts against; invalid if exempt
	delivered atomic.Bool    // handed to Accept's queue
	timer     *time.Timer    // handshake timeout
}

// Listen opens a listener on addr ("host:port"; port 0 picks one). A
// wildcard host (":port", "0.0.0.0:port", "[::]:port") serves IPv4 and IPv6
// clients on one dual-stack socket, as net.ListenUDP("udp", …) does; a
// specific address serves its own family only.
func Listen(addr string, cfg Config) (*Listener, error) {
	conf, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	laddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("transport: listen %s: %w", addr, err)
	}
	// A wildcard address (":port", "0.0.0.0:port", "[::]:port") serves
	// IPv4 and IPv6 clients on one dual-stack socket, as net.ListenUDP
	// with "udp" does; a specific address serves its own family.
	network := "udp4"
	switch {
	case laddr.IP == nil || laddr.IP.IsUnspecified():
		network = "udp"
	case laddr.IP.To4() == nil:
		network = "udp6"
	}
	sock, stopNTP, err := openSocket(&conf, network, laddr, nil)
	if err != nil {
		return nil, fmt.Errorf("transport: listen %s: %w", addr, err)
	}
	now := conf.Clock.Now()
	l := &Listener{
		cfg: conf, sock: sock,
		conns:    map[uint64]*entry{},
		sources:  newSourceTable(conf.MaxConnectionsPerSource, conf.HandshakeRate, conf.HandshakeBurst, now),
		readySig: make(chan struct{}, 1),
		done:     make(chan struct{}),
		readDone: make(chan struct{}),
		stopNTP:  stopNTP,
		drv:      newDriver(&conf, sock),
	}
	if !conf.DisableRetry {
		l.tokens = newRetryTokens(now)
		l.tokenBuf = make([]byte, 0, retryTokenLen)
		l.retryBuf = make([]byte, 0, wire.HeaderLen+2+retryTokenLen)
	}
	go l.drv.run()
	go l.readLoop()
	return l, nil
}

// Addr is the listener's UDP address.
func (l *Listener) Addr() net.Addr { return l.sock.conn.LocalAddr() }

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

// readLoop demultiplexes datagrams to connections and opens new ones on
// Initial.
func (l *Listener) readLoop() {
	defer close(l.readDone)
	rx, err := newRxBatch(l.sock, maxAccepted(l.cfg.MaxDatagram), false)
	if err != nil {
		l.cfg.Logger.Error("fresh: cannot read socket", "err", err)
		return
	}
	touched := make([]*Conn, 0, batchSize)
	for {
		dgs, err := rx.read()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		for _, d := range dgs {
			e := l.route(d.b, d.addr)
			if e == nil || !e.c.handleDatagram(d.b) {
				continue
			}
			if !e.delivered.Load() {
				l.deliverIfOpen(e)
			}
			if !slices.Contains(touched, e.c) {
				touched = append(touched, e.c)
			}
		}
		l.drv.scheduleAll(touched)
		clear(touched)
		touched = touched[:0]
	}
}

// route finds the connection a datagram belongs to, creating one for an
// Initial from an unknown connection ID that passes address validation
// and the limits (admit). Datagrams for nobody, and those for a
// connection from another address than its own, are dropped and counted.
func (l *Listener) route(b []byte, from netip.AddrPort) *entry {
	h, body, err := wire.ParseHeader(b)
	if err != nil {
		l.st.malformed.Add(1)
		return nil
	}
	l.mu.Lock()
	e, ok := l.conns[h.ConnID]
	l.mu.Unlock()
	if ok {
		if e.addr != from {
			// Path binding: someone else sending with a live connection's
			// ID (a blind ACK or PING from a forged or stale address) must
			// not draw the connection's traffic anywhere.
			l.st.wrongAddress.Add(1)
			return nil
		}
		return e
	}
	if h.Type != wire.TypeInitial {
		l.st.noConnection.Add(1)
		return nil
	}
	var in wire.Initial
	if wire.ParseInitial(body, len(b), &in) != nil || !from.IsValid() {
		l.st.malformed.Add(1)
		return nil
	}
	now := l.cfg.Clock.Now()
	validated := false
	if l.tokens != nil {
		if len(in.Token) == 0 {
			l.sendRetry(h.ConnID, from, now)
			return nil
		}
		if !l.tokens.valid(in.Token, from, h.ConnID, now) {
			l.st.badToken.Add(1)
			return nil
		}
		validated = true
	}
	return l.open(h.ConnID, from, validated, now)
}

// sendRetry answers an Initial without a token with a Retry: one datagram
// smaller than the Initial, and no state kept.
func (l *Listener) sendRetry(connID uint64, to netip.AddrPort, now clock.Mono) {
	l.tokenBuf = l.tokens.mint(l.tokenBuf[:0], to, connID, now)
	b := wire.AppendHeader(l.retryBuf[:0], wire.Header{Type: wire.TypeRetry, ConnID: connID, Timestamp: l.cfg.Clock.Wall().UnixMicro()})
	b = wire.AppendRetry(b, &wire.Retry{Token: l.tokenBuf})
	if _, err := l.sock.conn.WriteToUDPAddrPort(b, to); err != nil {
		l.cfg.Logger.Debug("fresh: Retry not sent", "to", to, "err", err)
		return
	}
	l.st.retries.Add(1)
}

// open creates the connection of an admitted Initial: session, map entry,
// its place in the driver, and the handshake timer that drops it if its handshake does
// not complete in HandshakeTimeout. validated says the Initial carried a
// valid token, which lifts the session's anti-amplification limit.
func (l *Listener) open(id uint64, from netip.AddrPort, validated bool, now clock.Mono) *entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	if err := l.admit(from.Addr(), now); err != nil {
		return nil
	}
	src := netip.Addr{}
	if l.cfg.LimitLoopback || !from.Addr().IsLoopback() {
		src = sourceOf(from.Addr())
		if err := l.sources.admit(src, now); err != nil {
			if err == errSourceLimit {
				l.st.sourceLimit.Add(1)
			} else {
				l.st.rateLimited.Add(1)
			}
			return nil
		}
	}
	cfg := l.cfg.sessionConfig()
	cfg.AddressValidated = validated
	s, err := session.New(cfg, id, false, now)
	if err != nil {
		if src.IsValid() {
			l.sources.release(src)
		}
		return nil
	}
	return l.track(id, from, src, s)
}

// track makes a connection of session s, held until it ends, and starts
// it; l.mu is held.
func (l *Listener) track(id uint64, from netip.AddrPort, src netip.Addr, s *session.Session) *entry {
	c := newConn(&l.cfg, l.sock, net.UDPAddrFromAddrPort(from), s)
	e := &entry{c: c, id: id, addr: from, src: src}
	c.onDone = func() { l.remove(e) }
	e.timer = time.AfterFunc(l.cfg.HandshakeTimeout, func() { l.handshakeExpired(e) })
	l.conns[id] = e
	l.drv.start(c)
	return e
}

// admit applies the limits that do not depend on the source; l.mu is held.
func (l *Listener) admit(from netip.Addr, now clock.Mono) error {
	if len(l.conns) >= l.cfg.MaxConnections {
		l.st.totalLimit.Add(1)
		return errTotalLimit
	}
	if len(l.ready) >= maxPendingAccept {
		// The application is not keeping up: the client retries its
		// Initial, as a TCP client does a SYN a full accept queue dropped.
		l.st.backlogFull.Add(1)
		return errBacklogFull
	}
	return nil
}

// deliverIfOpen queues e for Accept once its handshake has completed.
func (l *Listener) deliverIfOpen(e *entry) {
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
	l.ready = append(l.ready, e.c)
	signal(l.readySig)
}

// handshakeExpired ends a connection whose handshake did not complete in
// HandshakeTimeout; it never reaches Accept.
func (l *Listener) handshakeExpired(e *entry) {
	l.mu.Lock()
	expired := !e.delivered.Load() && l.conns[e.id] == e
	if expired {
		e.delivered.Store(true) // never to be queued now
	}
	l.mu.Unlock()
	if !expired {
		return
	}
	l.st.handshakeTimeouts.Add(1)
	c := e.c
	c.mu.Lock()
	c.s.Abort(fmt.Errorf("%w: %w", ErrHandshake, context.DeadlineExceeded))
	c.notifyLocked()
	c.mu.Unlock()
	c.kick() // the driver sees the session closed and lets it go
}

// remove forgets a connection that ended.
func (l *Listener) remove(e *entry) {
	e.timer.Stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conns[e.id] == e {
		delete(l.conns, e.id)
	}
	if e.src.IsValid() {
		l.sources.release(e.src)
	}
	if i := slices.Index(l.ready, e.c); i >= 0 {
		l.ready = slices.Delete(l.ready, i, i+1) // ended before Accept took it
	}
}

// Close stops accepting, closes every connection (each lingers as Conn.Close
// says) and the socket, and stops every goroutine. It is idempotent.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		conns := make([]*Conn, 0, len(l.conns))
		for _, e := range l.conns {
			conns = append(conns, e.c)
		}
		l.ready = nil
		l.mu.Unlock()
		close(l.done)
		var wg sync.WaitGroup
		for _, c := range conns {
			wg.Add(1)
			go func() { defer wg.Done(); c.Close() }()
		}
		wg.Wait()
		l.drv.close()
		_ = l.sock.conn.Close()
		<-l.readDone
		l.stopNTP()
	})
	return nil
}
