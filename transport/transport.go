package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fresh-udp/fresh"
	"github.com/fresh-udp/fresh/internal/session"
	"github.com/fresh-udp/fresh/internal/wire"
)

// Transport is one packet socket and everything the connections on it
// share, as quic-go's Transport is: the reader that demultiplexes
// datagrams to connections by connection ID, the driver goroutine that
// sends for all of them and keeps their timers, and the settings of a
// Listener opened on it (address validation and admission limits). One
// Transport may serve a Listener and any number of Dial'ed connections at
// once, so a device can accept and dial on one port.
//
// Listen and Dial at package level open a socket and a Transport of their
// own and close both with the Listener or Conn. Make a Transport to bring
// your own socket (one opened with ListenUDP and SO_REUSEPORT, a socket
// a NAT traversal library punched, a net.PacketConn of your own) or to
// set the listener's limits:
//
//	udp, err := transport.ListenUDP(":4433", true) // SO_REUSEPORT
//	tr := &transport.Transport{Conn: udp, MaxConnections: 10_000}
//	ln, err := tr.Listen(cfg)
//	…
//	tr.Close() // ends the Listener and every connection; udp stays open
//
// The fields must be set before the first Listen or Dial and not changed
// after. Every zero field takes the default written beside it. The
// driver keeps every connection's timers on the clock of the first
// Listen's or Dial's Config.Clock, converting each connection's deadlines
// from its own Config.Clock (every Config without one gets a
// clock.NewSystem of its own, whose readings count from its own start):
// the clocks of connections on one Transport may differ in origin, not in
// rate.
type Transport struct {
	// Conn is the socket (required). A *net.UDPConn is read and written in
	// batches (recvmmsg, sendmmsg, UDP GSO and GRO on Linux) with each
	// datagram marked with its own DSCP; any other net.PacketConn is read
	// and written one datagram per call, its datagrams unmarked, and must
	// report *net.UDPAddr addresses. The Transport does not close a Conn
	// it was given: Close stops reading it and leaves it open.
	Conn net.PacketConn

	// DisableRetry turns off a Listener's address validation by Retry.
	// By default an Initial without a token is answered with a Retry (a
	// 67-byte datagram, no state kept) and a connection is created only
	// when the client sends its Initial again with the Retry's token, which
	// proves it receives at its source address (RFC 9000 §8.1.2). That
	// costs every handshake one extra round trip, and is on by default
	// because without it a forged source address makes the Listener hold
	// a connection (its state) per forged Initial until
	// IdleTimeout, and send to the forged address: up to three times the
	// Initial's bytes (RFC 9000 §8.1's anti-amplification limit, which
	// then applies until the client answers). Disable it only where the
	// round trip matters more than those risks, for example behind a
	// filter that drops forged source addresses (BCP 38).
	DisableRetry bool
	// MaxConnections bounds the connections a Listener holds at once,
	// handshaking, waiting for Accept or accepted. An Initial beyond it is
	// dropped and its client retries. Default 100,000.
	MaxConnections int
	// MaxHandshakes bounds the handshakes a Listener runs at once:
	// connections admitted whose TLS handshake has not completed. A
	// handshake in progress costs what a connection does and more: the
	// handshake state crypto/tls keeps (tens of KB of heap with mutual
	// TLS: bench/results/security.md, "Footprint") and the goroutine its
	// QUIC API runs each handshake on (an 8 KB stack), both until the
	// client sends its Finished or HandshakeTimeout passes. An Initial
	// beyond it is dropped (ListenerStats.
	// InitialsHandshakeLimit) and its client retries, as a TCP client
	// does a SYN a full SYN queue dropped; connections that completed
	// their handshake do not count. With Retry on, only clients that
	// showed they receive at their address get this far. Each source
	// gets a part of it (MaxHandshakesPerSource), and its last tenth is
	// kept for sources with no handshake under way, so that sources that
	// start handshakes and never finish them leave others a place (an
	// Initial refused there is counted as InitialsHandshakeLimit too).
	// Default 1,000:
	// 1,000 handshakes completing in a round trip each serve thousands of
	// devices reconnecting at once, and what clients that never finish
	// hold is bounded by a thousand handshakes' state.
	MaxHandshakes int
	// MaxHandshakesPerSource bounds the handshakes one source (as
	// MaxConnectionsPerSource counts them: an IPv4 address, an IPv6 /64)
	// runs at once, so that no source takes more than its part of
	// MaxHandshakes: a client that starts handshakes and never finishes
	// them (a ClientHello, then silence, each held until
	// HandshakeTimeout) fills its own part, and the Initials of others are
	// still admitted. It applies to loopback sources too, each loopback
	// address a source of its own (LimitLoopback does not lift it), as
	// MaxHandshakes does. An Initial beyond it is dropped and counted
	// (ListenerStats.InitialsSourceHandshakeLimit); its client retries. Default
	// MaxHandshakes/10 (100 with the default MaxHandshakes), at least 1:
	// a source with that many handshakes under way starts 100 per round
	// trip, as many as HandshakeRate lets it in a second on a 1 s path,
	// while it takes nine such sources at their parts, and one more
	// source for each place of the last tenth, to fill MaxHandshakes. At most MaxHandshakes; a proxy that
	// brings many clients from one address (and needs none of this
	// fairness) sets it to MaxHandshakes.
	MaxHandshakesPerSource int
	// MaxConnectionsPerSource bounds the connections of one source: one
	// IPv4 address, or one IPv6 /64 (a subscriber's usual allocation,
	// whose addresses one host can use freely). Default 1,024.
	MaxConnectionsPerSource int
	// HandshakeRate and HandshakeBurst bound how fast one source opens
	// connections: a token bucket of HandshakeBurst handshakes refilled at
	// HandshakeRate per second. With Retry on, only an Initial with a
	// valid token counts, so forged Initials cannot use up a real
	// source's budget. Defaults 100/s and 100.
	HandshakeRate  float64
	HandshakeBurst int
	// LimitLoopback applies MaxConnectionsPerSource and the handshake rate
	// to loopback sources too. By default loopback is exempt from those
	// two: its sources are processes on this host, which can exhaust it
	// by other means anyway, and a local load generator or proxy
	// (thousands of connections from 127.0.0.1) must not be throttled as
	// one remote host would be. MaxConnections, MaxHandshakes and
	// MaxHandshakesPerSource apply to every source.
	LimitLoopback bool

	// ServerID is this server's ID in the connection IDs its Listener
	// chooses (1 to 3 bytes), in the plaintext layout of the IETF QUIC-LB
	// draft (draft-ietf-quic-load-balancers, "Plaintext CID Algorithm"):
	// a first octet of ConfigRotation (3 bits) and the ID's length less
	// one (5 bits), then ServerID, then a random nonce to 8 bytes. After
	// the handshake every packet a client sends carries that ID, so a
	// load balancer configured with the same ID length, or an
	// SO_REUSEPORT program, routes a connection to its server by the ID
	// even after the client's address changed. It also names the IDs
	// whose stateless resets the Transport answers (StatelessResetKey).
	// nil (the default): the first octet's rotation bits are 0b111, "not
	// routable" in the draft, and the rest random.
	ServerID []byte
	// ConfigRotation is the QUIC-LB configuration this server's IDs
	// belong to (0–6), so that a load balancer can move to a new server
	// ID assignment while connections of the old one live. Default 0;
	// ignored without ServerID.
	ConfigRotation uint8
	// StatelessResetKey keys the stateless reset tokens (RFC 9000 §10.3)
	// a Listener on this Transport gives its clients: a client's token is
	// the first 16 bytes of HMAC-SHA256(key, connection ID), sent to it
	// encrypted in the TLS handshake. When the Transport later gets a
	// datagram for a connection it does not hold, it answers with a
	// StatelessReset carrying that token, and the client's Conn ends at
	// once with ErrStatelessReset rather than at its IdleTimeout.
	//
	// nil draws a random key per Transport: resets then work for
	// connections this Transport lost while it runs (one it aborted, say)
	// but not across a restart, since the restarted process has another
	// key and its resets are ignored. Set the same key in every life of a
	// server so that a restarted server resets the connections of its
	// previous life, as quic-go's Transport.StatelessResetKey does;
	// derive it from a secret the server keeps anyway (its TLS private
	// key: ResetKeyFromTLS). Keep it as secret as that: whoever has it
	// can reset every client's connection. Plaintext connections
	// (Config.Insecure) get no token: nothing resets them.
	//
	// A Transport answers only the connection IDs its Listener issues
	// (those with its ServerID), so that no one can draw from it the
	// token of a connection another server holds (RFC 9000 §21.11).
	// Servers that share a key (the processes of one port with
	// SO_REUSEPORT, hosts behind one load balancer) must therefore each
	// have a ServerID of their own: with the same one, or none, a datagram
	// for one's live connection that reaches another (its sender picks
	// the source port, and so where a hash sends it) draws the token that
	// ends the connection. A server's next life keeps its ServerID and
	// ConfigRotation to reset the connections of the previous one. Listen
	// refuses a key on an SO_REUSEPORT socket without a ServerID; the
	// hosts of a load balancer it cannot see.
	StatelessResetKey *[32]byte
	// StatelessResetRate and StatelessResetBurst bound how fast the
	// Transport sends resets: a token bucket of StatelessResetBurst
	// refilled at StatelessResetRate per second. A reset is always smaller
	// than the datagram that drew it (so it amplifies nothing) and answers
	// neither an Initial, a Retry, a Close nor a reset (so two endpoints
	// cannot loop); the rate bounds what a flood of datagrams with forged
	// sources can reflect. Datagrams the bucket had no reset for are
	// counted (ListenerStats.StatelessResetsRateLimited), and their
	// clients are reset by a later datagram. Defaults 100/s and 10;
	// a negative rate sends none.
	StatelessResetRate  float64
	StatelessResetBurst int

	// Logger receives the Transport's own debug logs (socket errors,
	// datagrams dropped); nil takes the first Listen's or Dial's
	// Config.Logger.
	Logger *slog.Logger

	initOnce sync.Once
	initErr  error
	owned    bool // opened by package Listen or Dial: Close closes Conn
	single   bool // package Dial's: one client connection, pooled buffers
	sock     *socket
	drv      *driver
	log      *slog.Logger
	maxRecv  int // the largest datagram the reader accepts

	mu      sync.Mutex
	conns   map[uint64]*entry
	ln      *Listener
	closed  bool
	readers sync.WaitGroup // the reader goroutines (two while Conn.Migrate runs)

	// The socket datagrams are sent on and read from now: sock, or the one
	// a client's Conn.Migrate moved to. migrateMu serialises Migrate.
	cur       atomic.Pointer[socket]
	curRx     *rxState // under migrateMu
	migrateMu sync.Mutex

	st  listenerCounters
	rst resetState // the read loop's (reset.go)
}

// entry is a connection the Transport routes datagrams to.
type entry struct {
	c     *Conn
	id    uint64         // the client's connection ID
	srvID uint64         // the server's (a Listener's connection; 0 on a Dial'ed one)
	addr  netip.AddrPort // the address it was opened with (the server's, for a Dial'ed one)
	ln    *Listener      // the Listener that accepted it; nil for a Dial'ed one
	// The Listener's bookkeeping (guarded by ln.mu):
	src       netip.Addr  // the source it counts against (sourceOf its address)
	limited   bool        // counted against the source's connections (not exempt loopback)
	delivered atomic.Bool // handed to Accept's queue, or never to be
	timer     *time.Timer // handshake timeout

	handshaking bool // counted in the Listener's handshakes (MaxHandshakes)
}

// ErrTransportClosed is returned by Listen and Dial on a closed Transport.
var ErrTransportClosed = errors.New("transport: Transport closed")

// validate checks the Transport's own settings.
func (t *Transport) validate() error {
	switch {
	case t.Conn == nil:
		return fresh.InvalidField("transport.Transport.Conn", "nil: open a socket with ListenUDP or net.ListenUDP")
	case t.MaxConnections < 0:
		return fresh.InvalidField("transport.Transport.MaxConnections", "%d is negative (0: the default)", t.MaxConnections)
	case t.MaxHandshakes < 0:
		return fresh.InvalidField("transport.Transport.MaxHandshakes", "%d is negative (0: the default)", t.MaxHandshakes)
	case t.MaxHandshakesPerSource < 0:
		return fresh.InvalidField("transport.Transport.MaxHandshakesPerSource", "%d is negative (0: the default)", t.MaxHandshakesPerSource)
	case t.MaxHandshakesPerSource > t.maxHandshakes():
		return fresh.InvalidField("transport.Transport.MaxHandshakesPerSource", "%d is more than MaxHandshakes (%d): a source cannot run more than every place", t.MaxHandshakesPerSource, t.maxHandshakes())
	case t.MaxConnectionsPerSource < 0:
		return fresh.InvalidField("transport.Transport.MaxConnectionsPerSource", "%d is negative (0: the default)", t.MaxConnectionsPerSource)
	case t.HandshakeRate < 0:
		return fresh.InvalidField("transport.Transport.HandshakeRate", "%v is negative (0: the default)", t.HandshakeRate)
	case t.HandshakeBurst < 0:
		return fresh.InvalidField("transport.Transport.HandshakeBurst", "%d is negative (0: the default)", t.HandshakeBurst)
	case len(t.ServerID) > maxServerIDLen:
		return fresh.InvalidField("transport.Transport.ServerID", "%d bytes: at most %d fit an 8-byte connection ID with a 4-byte nonce", len(t.ServerID), maxServerIDLen)
	case t.ConfigRotation > maxConfigRotation:
		return fresh.InvalidField("transport.Transport.ConfigRotation", "%d outside 0..%d (7 marks unroutable IDs)", t.ConfigRotation, maxConfigRotation)
	case t.StatelessResetBurst < 0:
		return fresh.InvalidField("transport.Transport.StatelessResetBurst", "%d is negative (0: the default)", t.StatelessResetBurst)
	}
	return nil
}

// limits returns the listener limits with their defaults.
func (t *Transport) limits() (maxConns, perSource int, rate float64, burst int) {
	maxConns, perSource, rate, burst = t.MaxConnections, t.MaxConnectionsPerSource, t.HandshakeRate, t.HandshakeBurst
	if maxConns == 0 {
		maxConns = 100_000
	}
	if perSource == 0 {
		perSource = 1024
	}
	if rate == 0 {
		rate = 100
	}
	if burst == 0 {
		burst = 100
	}
	return
}

// maxHandshakes is MaxHandshakes with its default.
func (t *Transport) maxHandshakes() int {
	if t.MaxHandshakes == 0 {
		return 1000
	}
	return t.MaxHandshakes
}

// maxHandshakesPerSource is MaxHandshakesPerSource with its default.
func (t *Transport) maxHandshakesPerSource() int {
	if t.MaxHandshakesPerSource == 0 {
		return max(1, t.maxHandshakes()/10)
	}
	return t.MaxHandshakesPerSource
}

// start sets the Transport up on its first Listen or Dial, with that
// endpoint's resolved config: the socket's default DSCP (the stream's), the
// largest datagram the reader accepts, the logger.
func (t *Transport) start(cfg *Config) error {
	t.initOnce.Do(func() {
		if t.initErr = t.validate(); t.initErr != nil {
			return
		}
		t.log = t.Logger
		if t.log == nil {
			t.log = cfg.Logger
		}
		t.maxRecv = maxAccepted(cfg.MaxDatagram)
		t.sock, t.initErr = newSocket(t.Conn, cfg.StreamDSCP.Code())
		if t.initErr != nil {
			return
		}
		if !cfg.DisablePathMTUDiscovery {
			// Probes must not be fragmented (RFC 8899 §3); the
			// first endpoint's config decides for the shared socket.
			if t.initErr = t.sock.setDontFragment(); t.initErr != nil {
				t.initErr = fmt.Errorf("transport: set Don't Fragment for path MTU discovery (or set DisablePathMTUDiscovery): %w", t.initErr)
				return
			}
		}
		t.conns = map[uint64]*entry{}
		t.initReset(cfg.Clock)
		t.drv = newDriver(cfg.Clock, t.log, t.sock, t.maxRecv, t.sendError)
		rx, err := newReader(t.sock, t.maxRecv, t.single)
		if err != nil {
			t.initErr = err
			return
		}
		t.cur.Store(t.sock)
		t.curRx = &rxState{rx: rx}
		go t.drv.run()
		t.readers.Add(1)
		go t.readLoop(t.curRx)
	})
	if t.initErr != nil {
		return t.initErr
	}
	if m := maxAccepted(cfg.MaxDatagram); m > t.maxRecv {
		return fresh.InvalidField("transport.Config.MaxDatagram", "%d is larger than the %d bytes the Transport's first connection set its reader to", cfg.MaxDatagram, t.maxRecv)
	}
	return nil
}

// Listen starts accepting connections on the Transport with cfg (see
// Config; its TLS config needs a certificate). A Transport has at most one
// Listener.
func (t *Transport) Listen(cfg Config) (*Listener, error) {
	conf, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := t.checkResetKey(); err != nil {
		return nil, err
	}
	stopNTP, err := startNTP(&conf)
	if err != nil {
		return nil, err
	}
	if err := t.start(&conf); err != nil {
		stopNTP()
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.closed:
		stopNTP()
		return nil, ErrTransportClosed
	case t.ln != nil:
		stopNTP()
		return nil, errors.New("transport: the Transport has a Listener already")
	}
	l := newListener(t, conf, stopNTP)
	t.ln = l
	return l, nil
}

// Dial opens a connection to the fresh server at addr over the Transport
// and returns once the handshake completed, ctx ended or HandshakeTimeout
// passed (see the package-level Dial for the errors). The server's name for
// TLS verification is cfg.TLS.ServerName; it must be set unless the TLS
// config skips verification.
func (t *Transport) Dial(ctx context.Context, addr net.Addr, cfg Config) (*Conn, error) {
	return t.dialAddr(ctx, addr, cfg, false)
}

// DialEarly is Dial for a connection that may carry 0-RTT updates; see the
// package-level DialEarly.
func (t *Transport) DialEarly(ctx context.Context, addr net.Addr, cfg Config) (*Conn, error) {
	return t.dialAddr(ctx, addr, cfg, true)
}

func (t *Transport) dialAddr(ctx context.Context, addr net.Addr, cfg Config, early bool) (*Conn, error) {
	conf, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ua, ok := addr.(*net.UDPAddr)
	if !ok {
		return nil, &dialError{addr.String(), fmt.Errorf("not a UDP address (%T)", addr)}
	}
	return t.dial(ctx, ua, addr.String(), conf, early)
}

// dial is Dial with a resolved config; name is the address as the caller
// wrote it, for errors. With early it returns at once when the session can
// send 0-RTT updates, its handshake then bounded by HandshakeTimeout alone.
func (t *Transport) dial(ctx context.Context, raddr *net.UDPAddr, name string, conf Config, early bool) (*Conn, error) {
	stopNTP, err := startNTP(&conf)
	if err != nil {
		return nil, err
	}
	if err := t.start(&conf); err != nil {
		stopNTP()
		return nil, &dialError{name, err}
	}
	scfg := conf.sessionConfig()
	if st := conf.TokenStore; st != nil && conf.TLS != nil {
		// The token of the server's last connection, if one is kept, for
		// this one's first Initial; the token this one brings, for the
		// next (config.go, TokenStore).
		server := raddr.String()
		scfg.Token = st.Take(server)
		scfg.OnNewToken = func(token []byte) { st.Put(server, token) }
	}
	var c *Conn
	for c == nil {
		s, err := session.New(scfg, randomID(), true, conf.Clock.Now())
		if err != nil {
			stopNTP()
			return nil, err
		}
		c = newConn(&conf, t, raddr, s)
		e := &entry{c: c, id: s.ConnID(), addr: netip.AddrPortFrom(raddr.AddrPort().Addr().Unmap(), raddr.AddrPort().Port())}
		err = t.add(e)
		if err != nil {
			s.Abort(err) // never sent: its TLS handshake must not wait for an answer
		}
		switch {
		case errors.Is(err, errIDTaken):
			c = nil // one in 2^64 per pair of connections: draw again
		case err != nil:
			stopNTP()
			return nil, &dialError{name, err}
		}
	}
	c.stopNTP = stopNTP
	c.mu.Lock() // the reader may route a datagram to it already
	if early && c.s.EarlyReady() {
		// The session holds a ticket that allows early data: the caller
		// may send its update now, to go with the first flight.
		c.hsTimer = time.AfterFunc(conf.HandshakeTimeout, func() {
			if !isClosed(c.opened) {
				c.mu.Lock()
				now, _ := c.now()
				heard := c.s.HandshakeHeard(now)
				c.mu.Unlock()
				c.abort(fmt.Errorf("%w: %w: %s", ErrHandshake, context.DeadlineExceeded, heard))
			}
		})
		c.mu.Unlock()
		t.drv.start(c)
		return c, nil
	}
	c.mu.Unlock()
	t.drv.start(c)

	hs, cancel := context.WithTimeout(ctx, conf.HandshakeTimeout)
	defer cancel()
	select {
	case <-c.opened:
		if err := c.Err(); err != nil {
			c.Close()
			return nil, &dialError{name, err}
		}
		return c, nil
	case <-hs.Done():
		c.mu.Lock()
		c.cfg.Linger = -1
		now, _ := c.now()
		heard := c.s.HandshakeHeard(now) // the deadline alone says nothing of why
		c.mu.Unlock()
		c.Close()
		return nil, &dialError{name, fmt.Errorf("%w: %w: %s", ErrHandshake, hs.Err(), heard)}
	}
}

// errIDTaken: another connection on the Transport has the client's ID;
// errSrvIDTaken: the server ID drawn for a new one is taken (draw again).
var (
	errIDTaken    = errors.New("transport: connection ID taken")
	errSrvIDTaken = errors.New("transport: server connection ID taken")
)

// add registers e under its connection ID.
func (t *Transport) add(e *entry) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrTransportClosed
	}
	if _, taken := t.conns[e.id]; taken {
		return errIDTaken
	}
	if _, taken := t.conns[e.srvID]; e.srvID != 0 && (taken || e.srvID == e.id) {
		return errSrvIDTaken
	}
	t.conns[e.id] = e
	if e.srvID != 0 {
		t.conns[e.srvID] = e
	}
	e.c.onDone = func() { t.remove(e) }
	return nil
}

// remove forgets a connection that ended.
func (t *Transport) remove(e *entry) {
	t.mu.Lock()
	if t.conns[e.id] == e {
		delete(t.conns, e.id)
	}
	if e.srvID != 0 && t.conns[e.srvID] == e {
		delete(t.conns, e.srvID)
	}
	t.mu.Unlock()
	if e.ln != nil {
		e.ln.forget(e)
	}
}

// rxState is one reader goroutine's socket.
type rxState struct {
	rx reader
	// retired: Conn.Migrate moved off this socket (or gave up on it),
	// so its closing is no crash.
	retired atomic.Bool
	// accepted counts the datagrams read here that a connection took.
	accepted atomic.Int64
}

// readLoop demultiplexes datagrams to connections (and Initials for new
// ones to the Listener) until the socket fails or Close interrupts it.
func (t *Transport) readLoop(r *rxState) {
	defer t.readers.Done()
	touched := make([]*Conn, 0, batchSize)
	for {
		dgs, err := r.rx.read()
		if err != nil {
			if r.retired.Load() || t.readError(err) {
				return
			}
			continue
		}
		var last *entry // the batch's previous connection; not kept across reads
		for _, d := range dgs {
			e := t.route(d.b, d.addr, last)
			if e == nil {
				continue
			}
			if ok, elsewhere := e.c.handleDatagram(d.b, d.addr); !ok {
				if elsewhere {
					// Not authentic, or not one the connection may move
					// for: someone else sending with a live connection's
					// ID (a blind ACK or PING from a forged or stale
					// address) draws nothing anywhere.
					t.st.wrongAddress.Add(1)
				}
				continue
			}
			r.accepted.Add(1)
			last = e
			if e.ln != nil {
				e.ln.deliverIfOpen(e)
			}
			if !slices.Contains(touched, e.c) {
				touched = append(touched, e.c)
			}
		}
		t.drv.scheduleAll(touched)
		clear(touched)
		touched = touched[:0]
	}
}

// readError handles an error of the socket's reads and reports whether
// the reader must stop: the socket was closed, or Close interrupted it.
// The one other that matters is ECONNREFUSED on a connected socket (the
// kernel received an ICMP port unreachable for a datagram we sent, see
// refused).
func (t *Transport) readError(err error) bool {
	t.mu.Lock()
	closed := t.closed
	t.mu.Unlock()
	switch {
	case closed, errors.Is(err, net.ErrClosed):
		if !closed {
			t.crash(err)
		}
		return true
	case errors.Is(err, syscall.ECONNREFUSED):
		t.refused()
	case errors.Is(err, syscall.EBADF), errors.Is(err, syscall.ENOTSOCK):
		t.crash(err)
		return true
	}
	return false
}

// crash ends every connection at once, without a word to the peers: the
// socket is gone (closed under the Transport), so nothing can be sent.
func (t *Transport) crash(err error) {
	t.log.Debug("fresh: socket closed under the Transport", "err", err)
	for _, c := range t.snapshot() {
		c.abort(fmt.Errorf("%w: socket closed: %w", ErrClosed, err))
	}
}

// refused handles ECONNREFUSED, reported on whichever call came first, a
// read or a write, of a connected socket. During the handshake nothing
// listens at the address and Dial fails at once; afterwards it is ignored,
// as TCP treats ICMP errors on an established connection as soft (they
// are unauthenticated and may be transient), and counted
// (Stats.PortUnreachable): a peer that went away is noticed by
// IdleTimeout.
func (t *Transport) refused() {
	if !t.sock.connected {
		return
	}
	for _, c := range t.snapshot() {
		if c.ln != nil {
			continue
		}
		c.mu.Lock()
		aborting := !c.s.Opened()
		if aborting {
			c.s.Abort(fmt.Errorf("%w: %w", ErrHandshake, syscall.ECONNREFUSED))
			c.notifyLocked()
		}
		c.mu.Unlock()
		if aborting {
			c.kick() // the driver sees the session closed and lets it go
		} else {
			c.unreachable.Add(1)
			t.log.Debug("fresh: peer port unreachable (ignored on an open connection)", "peer", c.peer.Load())
		}
	}
}

// sendError handles an error of the driver's sends.
func (t *Transport) sendError(err error) {
	if errors.Is(err, syscall.ECONNREFUSED) {
		t.refused()
		return
	}
	// Errors of one datagram (an unreachable peer) are the connection's
	// to recover from, by retransmission or timeout.
	t.log.Debug("fresh: write failed", "err", err)
}

// snapshot returns the connections on the Transport now.
func (t *Transport) snapshot() []*Conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	cs := make([]*Conn, 0, len(t.conns))
	for id, e := range t.conns {
		if id == e.id { // not again under its server ID
			cs = append(cs, e.c)
		}
	}
	return cs
}

// route finds the connection a datagram belongs to, or hands an Initial
// for an unknown connection ID to the Listener. Datagrams for nobody are
// dropped and counted; with a Listener, those for nobody draw a stateless
// reset (reset.go). One for a connection from another address than its
// own goes to the connection too, which judges it (Conn.handleDatagram):
// the connection moves there only for an authentic packet (see the package
// doc's "Connection migration"). A StatelessReset for a client connection
// goes to it, whose session judges the token.
func (t *Transport) route(b []byte, from netip.AddrPort, last *entry) *entry {
	h, _, err := wire.ParseHeader(b)
	if err == nil && last != nil && (last.id == h.ConnID || last.srvID == h.ConnID) {
		// A batch of a bulk transfer is mostly one connection's: the
		// datagram before this one looked it up already.
		return last
	}
	t.mu.Lock()
	e, ok := t.conns[h.ConnID]
	ln := t.ln
	if err == nil && !ok && h.Type == wire.TypeStatelessReset {
		// A reset carries the ID of the packet that drew it, the
		// server's, which this client-side table does not hold: the
		// connections with that peer judge it by its token.
		e, ok = t.clientOf(h.ConnID, from)
	}
	if (err != nil || !ok) && t.single && from.IsValid() {
		// package Dial's connected socket hears only its peer: what it
		// cannot route is the connection's to judge and count, as a
		// client on its own socket always did.
		for _, c := range t.conns {
			if c.addr == from {
				e, ok, err = c, true, nil
			}
		}
	}
	t.mu.Unlock()
	if err == wire.ErrVersion && from.IsValid() {
		return t.otherVersion(b, from, e, ok, ln)
	}
	if err != nil || !from.IsValid() {
		t.st.malformed.Add(1)
		return nil
	}
	if ok {
		return e
	}
	if h.Type != wire.TypeInitial || ln == nil {
		t.st.noConnection.Add(1)
		if ln != nil {
			t.sendReset(h, b, from)
		}
		return nil
	}
	return ln.initial(h, b, from)
}

// Close ends the Listener and every connection on the Transport (each
// lingers as Conn.Close says), stops its goroutines and, if the Transport
// opened the socket itself (package Listen and Dial), closes it. A Conn
// given in Transport.Conn stays open. Close is idempotent.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	started := t.sock != nil
	ln := t.ln
	t.mu.Unlock()
	if ln != nil {
		ln.Close() // its connections first, while they can still send
	}
	var wg sync.WaitGroup
	for _, c := range t.snapshot() {
		wg.Go(func() { c.Close() })
	}
	wg.Wait()
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	if !started {
		if t.owned {
			return t.Conn.Close()
		}
		return nil
	}
	t.drv.close()
	// A Conn.Migrate under way ends with its connection (closed above):
	// once it has, the socket it leaves current is the one to close.
	t.migrateMu.Lock()
	defer t.migrateMu.Unlock()
	var err error
	if t.owned {
		err = t.cur.Load().pc.Close() // Conn, or the socket Conn.Migrate moved to
	} else {
		// Unblock the reader without closing the caller's socket, as
		// quic-go does; the deadline is cleared once it has returned.
		_ = t.Conn.SetReadDeadline(time.Unix(1, 0))
	}
	t.readers.Wait()
	if !t.owned {
		_ = t.Conn.SetReadDeadline(time.Time{})
	}
	return err
}

// ListenUDP opens a UDP socket for a Transport on addr ("host:port"; port 0
// picks one), as package Listen opens its own: a wildcard host (":port",
// "0.0.0.0:port", "[::]:port") serves IPv4 and IPv6 peers on one
// dual-stack socket, a specific address its own family only. reusePort
// sets SO_REUSEPORT, so that several processes (or Transports) serve one
// port, each with its own socket; every socket on the port must set it
// (and, on Linux, belong to the same user). The kernel spreads datagrams
// among the sockets by a hash of the source and destination addresses and
// ports, so a source stays with one process while its address and port
// stay the same; see the package doc's "Scale-out". Linux and the BSDs;
// elsewhere reusePort fails.
func ListenUDP(addr string, reusePort bool) (*net.UDPConn, error) {
	laddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("transport: listen %s: %w", addr, err)
	}
	network := "udp4"
	switch {
	case laddr.IP == nil || laddr.IP.IsUnspecified():
		network = "udp"
	case laddr.IP.To4() == nil:
		network = "udp6"
	}
	udp, err := listenUDP(network, laddr, reusePort)
	if err != nil {
		return nil, fmt.Errorf("transport: listen %s: %w", addr, err)
	}
	return udp, nil
}

// Listen opens a Listener on addr ("host:port"; port 0 picks one) on a
// socket and Transport of its own, with the Transport's default limits
// (Transport.Listen sets them). A wildcard host (":port", "0.0.0.0:port",
// "[::]:port") serves IPv4 and IPv6 clients on one dual-stack socket, as
// net.ListenUDP("udp", …) does; a specific address serves its own family
// only. Closing the Listener closes the socket.
func Listen(addr string, cfg Config) (*Listener, error) {
	if _, err := cfg.withDefaults(); err != nil {
		return nil, err // before a socket is opened for nothing
	}
	udp, err := ListenUDP(addr, false)
	if err != nil {
		return nil, err
	}
	t := &Transport{Conn: udp, owned: true}
	l, err := t.Listen(cfg)
	if err != nil {
		t.Close()
		return nil, err
	}
	l.ownsTransport = true
	return l, nil
}

// Dial opens a connection to a fresh server at addr ("host:port") on a
// socket and Transport of its own, and returns once the handshake
// completed, ctx ended or HandshakeTimeout passed. A handshake that fails
// returns an error wrapping ErrHandshake and the cause: ctx's error,
// context.DeadlineExceeded for HandshakeTimeout, or syscall.ECONNREFUSED
// ("connection refused") at once when the kernel reports that nothing
// listens at addr (an ICMP port unreachable). The server's certificate is
// verified against cfg.TLS.ServerName, or the host part of addr if that is
// empty, as tls.Dial does.
//
// The socket is connected to addr, so it takes datagrams from addr only
// and hears of such ICMP errors. Once the connection is open a refusal is
// ignored, as TCP treats ICMP errors on an established connection as soft
// (they are unauthenticated and may be transient): a peer that went away
// is noticed by IdleTimeout. Closing the Conn closes the socket.
func Dial(ctx context.Context, addr string, cfg Config) (*Conn, error) {
	return dialAddr(ctx, addr, cfg, false)
}

// DialEarly is Dial for a device that wants its first update in its first
// flight (0-RTT, Config.Allow0RTT). When cfg.TLS's ClientSessionCache holds
// a ticket from this server that allows early data, and cfg.Allow0RTT is
// set, it returns as soon as the first flight can go, before the
// handshake completes: an update sent at once (SendUpdate) travels with
// the ClientHello, under the early keys, and reaches the server's
// application when the handshake completes there, a round trip before an
// update sent after Dial would. Otherwise it returns as Dial does, once
// the handshake has completed.
//
// Until the handshake completes (HandshakeComplete) the Conn takes
// updates and writes; written stream bytes wait for the handshake (they
// never go in 0-RTT: a replay would repeat them). If the server refuses
// the early data the update goes again after the handshake. ctx bounds
// only the wait before DialEarly returns; the handshake after that is
// bounded by HandshakeTimeout, and a failed one ends the Conn with an
// error wrapping ErrHandshake (Err, and every call after). Close the Conn
// as any other.
func DialEarly(ctx context.Context, addr string, cfg Config) (*Conn, error) {
	return dialAddr(ctx, addr, cfg, true)
}

func dialAddr(ctx context.Context, addr string, cfg Config, early bool) (*Conn, error) {
	conf, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	raddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, &dialError{addr, err}
	}
	network := "udp4"
	if raddr.IP.To4() == nil {
		network = "udp6"
	}
	// Connected: the kernel reports ICMP errors for this peer
	// (ECONNREFUSED) on the socket, which an unconnected one does not,
	// and drops datagrams from anyone else.
	udp, err := net.DialUDP(network, nil, raddr)
	if err != nil {
		return nil, &dialError{addr, err}
	}
	if conf.TLS != nil && conf.TLS.ServerName == "" {
		// Verify the server against the name dialled, as tls.Dial does.
		conf.TLS = conf.TLS.Clone()
		conf.TLS.ServerName, _, _ = net.SplitHostPort(addr)
	}
	t := &Transport{Conn: udp, owned: true, single: true}
	c, err := t.dial(ctx, raddr, addr, conf, early)
	if err != nil {
		t.Close()
		return nil, err
	}
	c.ownsTransport = true
	return c, nil
}
