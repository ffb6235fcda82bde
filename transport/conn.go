package transport

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/clock/ntpclock"
	"github.com/fresh-udp/fresh/internal/session"
)

// Conn is one fresh connection. It carries a reliable ordered byte stream
// in each direction (Read, Write, CloseWrite) and status updates in each
// direction (SendUpdate, ReadUpdate). It is safe for concurrent use, with
// one reader and one writer of the stream at a time, as io.Reader and
// io.Writer usually are.
//
// A Conn has no goroutine of its own: its Transport reads for all the
// connections on the socket and one driver goroutine sends and keeps the
// timers of all of them, so an idle connection costs memory, not a
// goroutine.
//
// Conn is a net.Conn: SetDeadline, SetReadDeadline and SetWriteDeadline
// bound Read and Write with the net package's semantics (a passed deadline
// fails them with an error wrapping os.ErrDeadlineExceeded, a net.Error
// whose Timeout is true), so it plugs into code written for a net.Conn.
// The deadlines do not apply to SendUpdate, which never blocks, nor to
// ReadUpdate, which takes a context.
type Conn struct {
	cfg  *Config
	tr   *Transport
	ln   *Listener                   // the Listener that accepted it; nil for a Dial'ed one
	peer atomic.Pointer[net.UDPAddr] // the current address (paths.cur), for RemoteAddr
	clk  clock.Clock

	mu    sync.Mutex
	s     *session.Session
	paths paths // the peer's addresses (migration)
	// srvID mirrors s.ServerConnID for the reader, which must not take
	// mu while it holds the Transport's table (clientOf).
	srvID atomic.Uint64

	readReady  chan struct{} // stream data, EOF or close: a reader may proceed
	writeReady chan struct{} // send buffer space freed
	updReady   chan struct{} // a fresher update arrived
	pathCh     chan struct{} // PathChanged: Stats().PathDead flipped
	pathDead   bool          // the PathDead notifyLocked last saw; under mu
	commitCh   chan struct{} // closed and dropped when the peer's commit grows; made by a waiter (commit.go)
	commitSeen int64         // the peer's commit when commitCh was last closed
	opened     chan struct{} // closed when the handshake completes
	readDL     deadline      // SetReadDeadline
	writeDL    deadline      // SetWriteDeadline
	done       chan struct{} // closed when the driver has let it go
	openOnce   sync.Once
	// handshakeDone: the handshake completed (set once opened is
	// closed, false if the connection ended before it could); under mu.
	handshakeDone bool
	hsTimer       *time.Timer // DialEarly's HandshakeTimeout, once it has returned
	closeOnce     sync.Once
	closeErr      error
	// unreachable counts ICMP port unreachables after the handshake
	// (Stats.PortUnreachable).
	unreachable atomic.Int64
	// unreachableHeard is unreachable when the peer was last heard
	// (Stats.PortUnreachableSinceHeard).
	unreachableHeard atomic.Int64

	ownsTransport bool // package Dial's: Close closes the Transport and socket
	stopNTP       context.CancelFunc
	onDone        func() // the Transport's cleanup

	// The driver's bookkeeping: queued (guarded by drv.mu) says the Conn
	// is in the driver's run queue, finished (written under drv.mu by the
	// driver goroutine) that it has closed and left the driver; due and
	// timerIdx (the driver goroutine's alone) place it in the timer heap.
	drv      *driver
	queued   bool
	finished bool
	due      clock.Mono
	timerIdx int
}

var _ net.Conn = (*Conn)(nil)

// Update is one status update as the monitor receives it.
type Update struct {
	Payload []byte
	// Generated is when the source produced it, on the source's clock
	// corrected into this host's (in-band estimate; exact with
	// TrustPeerClock on synchronised hosts).
	Generated time.Time
	// Age is how old it was on arrival: now − Generated.
	Age time.Duration
	// Early says it came in 0-RTT, with the source's first flight
	// (Config.Allow0RTT). It is delivered only once the handshake has
	// completed, like every update.
	Early bool
}

func newConn(cfg *Config, tr *Transport, peer *net.UDPAddr, s *session.Session) *Conn {
	c := &Conn{
		cfg: cfg, tr: tr, clk: cfg.Clock, s: s,
		readReady:  make(chan struct{}, 1),
		writeReady: make(chan struct{}, 1),
		updReady:   make(chan struct{}, 1),
		pathCh:     make(chan struct{}, 1),
		opened:     make(chan struct{}),
		done:       make(chan struct{}),
		timerIdx:   -1,
	}
	c.paths.cur = peerAddr{netip.AddrPortFrom(peer.AddrPort().Addr().Unmap(), peer.AddrPort().Port()), peer}
	c.peer.Store(peer)
	return c
}

// now reads the connection's clock: monotonic time and wall µs.
func (c *Conn) now() (clock.Mono, int64) { return c.clk.Now(), c.clk.Wall().UnixMicro() }

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// notifyLocked wakes waiters after the session changed; c.mu is held.
func (c *Conn) notifyLocked() {
	if c.s.Opened() {
		c.openOnce.Do(func() {
			if c.hsTimer != nil {
				c.hsTimer.Stop()
			}
			// The session left the handshake state by completing it or
			// by closing: with no error it completed (one datagram
			// cannot do both).
			c.handshakeDone = c.s.Err() == nil
			if c.handshakeDone && c.ln != nil {
				c.tr.st.hsCompleted.Add(1)
			}
			close(c.opened)
		})
	}
	if c.s.ReadReady() {
		signal(c.readReady)
	}
	if c.s.WriteReady() {
		signal(c.writeReady)
	}
	if c.s.UpdateReady() {
		signal(c.updReady)
	}
	if d := c.s.PathDead(); d != c.pathDead {
		c.pathDead = d
		signal(c.pathCh)
	}
	c.notifyCommitLocked()
}

// handleDatagram feeds a datagram received from from to the session. It
// reports whether the session took it, and whether it came from another
// address than the connection's current one.
func (c *Conn) handleDatagram(b []byte, from netip.AddrPort) (ok, elsewhere bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now, wall := c.now()
	path := c.paths.path(from)
	v := c.s.HandleFrom(now, wall, b, path, from)
	if c.paths.apply(v, path, from) {
		c.peer.Store(c.paths.cur.udp)
	}
	if c.ln == nil {
		c.srvID.Store(c.s.ServerConnID())
	}
	if u := c.unreachable.Load(); v != session.Dropped && u != c.unreachableHeard.Load() {
		c.unreachableHeard.Store(u) // stored only when an ICMP error came in between
	}
	c.notifyLocked()
	return v != session.Dropped, path != session.PathCurrent
}

// ConnectionIDs returns the connection's two IDs (wire version 2): the
// client's, which every packet to the client carries, and the server's,
// which the client's packets carry once the handshake is done (0 on a
// client before that). A load balancer routes by the server's, and
// ServerIDOf reads the server ID a Transport.ServerID put in it.
func (c *Conn) ConnectionIDs() (client, server uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.s.ConnID(), c.s.ServerConnID()
}

// serverConnID is the ID this client's server chose (0: none given yet).
func (c *Conn) serverConnID() uint64 { return c.srvID.Load() }

// poll runs the session once: it fires a timeout that is due and polls
// what is sendable into tx, for the peer. It returns the next deadline (0:
// none), whether tx filled up (more may be sendable at once; tx then
// carries the datagram that did not fit into its next round) and whether
// the session has closed. The caller sends tx.
func (c *Conn) poll(tx *txBatch) (next clock.Mono, full, closed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now, wall := c.now()
	if t := c.s.NextTimeout(now); t != 0 && !now.Before(t) {
		c.s.Timeout(now)
		if c.s.PathReverted() {
			c.paths.revert()
			c.peer.Store(c.paths.cur.udp)
		}
	}
	for !tx.full() {
		d, mark, ok := c.s.Poll(now, wall, tx.scratch)
		if !ok {
			break
		}
		to := c.paths.dest(c.s.SendPath())
		if len(d) > c.s.DatagramSize() {
			// A path MTU probe: on its own, never a segment of a GSO
			// run, whose segment size must fit the route's MTU (the
			// kernel refuses the run with EINVAL otherwise).
			tx.addAlone(d, mark.Code(), to)
			continue
		}
		tx.add(d, mark.Code(), to)
	}
	c.notifyLocked()
	return c.s.NextTimeout(now), tx.full(), c.s.Closed()
}

// finish runs once the session has closed and nothing more will be sent:
// it wakes every waiter and tells the owner.
func (c *Conn) finish() {
	c.mu.Lock()
	c.notifyLocked()
	c.mu.Unlock()
	c.stopTrace()
	// Forgotten before done is closed: a Close waiting on done that then
	// closes its own Transport must not find itself still listed there.
	if c.onDone != nil {
		c.onDone()
	}
	close(c.done)
}

// kick tells the Transport's driver to run the connection.
func (c *Conn) kick() { c.drv.schedule(c) }

// abort ends the connection at once with err, without a linger.
func (c *Conn) abort(err error) {
	c.mu.Lock()
	c.s.Abort(err)
	c.notifyLocked()
	c.mu.Unlock()
	c.kick() // the driver sees the session closed and lets it go
}

// Write writes p to the stream, blocking while the send buffer is full.
// Once the write deadline has passed it returns how much it took with an
// error wrapping os.ErrDeadlineExceeded.
func (c *Conn) Write(p []byte) (int, error) {
	written := 0
	for {
		expired := c.writeDL.wait()
		if isClosed(expired) {
			return written, c.timeoutError("write")
		}
		c.mu.Lock()
		n, err := c.s.Write(p[written:])
		written += n
		c.mu.Unlock()
		if err != nil {
			return written, err
		}
		c.kick()
		if written == len(p) {
			return written, nil
		}
		select {
		case <-c.writeReady:
		case <-expired:
		}
	}
}

// CloseWrite ends the stream in this direction (the peer reads io.EOF once
// it has everything); updates and reading go on.
func (c *Conn) CloseWrite() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.s.CloseWrite(); err != nil {
		return err
	}
	c.kick()
	return nil
}

// Read reads the stream, blocking until data, EOF or close. Once the read
// deadline has passed it returns an error wrapping os.ErrDeadlineExceeded,
// even if data is waiting (as a net.Conn does).
func (c *Conn) Read(p []byte) (int, error) {
	for {
		expired := c.readDL.wait()
		if isClosed(expired) {
			return 0, c.timeoutError("read")
		}
		c.mu.Lock()
		n, err := c.s.Read(p)
		ack := c.s.AckNow()
		c.mu.Unlock()
		if ack {
			c.kick() // the read opened the window: tell the peer
		}
		if n > 0 || err != nil {
			return n, err
		}
		select {
		case <-c.readReady:
		case <-expired:
		}
	}
}

// SendUpdate hands the newest sample to the update regulator. Only the
// freshest update not yet sent is ever transmitted: a newer SendUpdate
// replaces an older one still waiting for its turn, and updates are never
// retransmitted. It never blocks, and the write deadline does not apply.
func (c *Conn) SendUpdate(payload []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	now, wall := c.now()
	if err := c.s.SendUpdate(now, wall, payload); err != nil {
		return err
	}
	c.kick()
	return nil
}

// ReadUpdate returns the freshest update received since the last call,
// blocking until one arrives, ctx ends or the connection closes. Updates
// that arrive older than one already delivered are dropped, so successive
// calls return strictly increasing generation times.
//
// When the peer has closed normally (Close, whether or not it wrote to the
// stream), ReadUpdate returns io.EOF once the updates that arrived are
// taken, as Read does at the stream's end; Err then says ErrPeerClosed.
// Any other end is an error: ErrClosed after our own Close, ErrIdleTimeout,
// or one wrapping ErrPeerClosed when the peer aborted (closed with stream
// bytes unacknowledged) or found a protocol violation. The read deadline
// does not apply; ctx bounds the wait.
func (c *Conn) ReadUpdate(ctx context.Context) (Update, error) {
	for {
		c.mu.Lock()
		if u, ok := c.s.TakeUpdate(); ok {
			out := Update{
				Payload:   append([]byte(nil), u.Payload...),
				Generated: time.UnixMicro(u.GeneratedMicros),
				Age:       u.Age,
				Early:     u.Early,
			}
			c.mu.Unlock()
			return out, nil
		}
		err := c.s.UpdateErr()
		c.mu.Unlock()
		if err != nil {
			return Update{}, err
		}
		select {
		case <-c.updReady:
		case <-ctx.Done():
			return Update{}, ctx.Err()
		}
	}
}

// HandshakeComplete is closed once the handshake has completed, or the
// connection ended before it could (Err then says why). A Conn from Dial
// or Accept has completed it already; one from DialEarly may not have.
func (c *Conn) HandshakeComplete() <-chan struct{} { return c.opened }

// Stats returns a snapshot of the connection's counters and state.
func (c *Conn) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	now, _ := c.now()
	st := statsFrom(c.s.Stats(now))
	st.PortUnreachable = c.unreachable.Load()
	st.PortUnreachableSinceHeard = st.PortUnreachable - c.unreachableHeard.Load()
	if nc, ok := c.clk.(*ntpclock.Clock); ok {
		n := nc.Status()
		st.NTP = NTPStats{Enabled: true, Synced: n.Synchronized, Offset: n.Offset, Stratum: n.Stratum, Server: n.Server, Err: n.Err}
	}
	return st
}

// ConnectionState is the TLS state of the connection once its handshake
// has completed: the peer's certificates (a device's identity, with mutual
// TLS), the negotiated protocol and cipher suite, whether the session was
// resumed. ok is false before the handshake completes and with Insecure.
func (c *Conn) ConnectionState() (state tls.ConnectionState, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.s.TLSState()
}

// LocalAddr is the local UDP address.
func (c *Conn) LocalAddr() net.Addr { return c.tr.cur.Load().pc.LocalAddr() }

// RemoteAddr is the peer's UDP address: for a server, the address the
// connection sends to now, which moves when the client's NAT rebinds (see
// the package doc's "Connection migration").
func (c *Conn) RemoteAddr() net.Addr { return c.peer.Load() }

// SetDeadline sets the read and write deadlines, as SetReadDeadline and
// SetWriteDeadline do.
func (c *Conn) SetDeadline(t time.Time) error {
	c.readDL.set(t)
	c.writeDL.set(t)
	return nil
}

// SetReadDeadline sets when blocked and future Read calls give up with an
// error wrapping os.ErrDeadlineExceeded (a net.Error whose Timeout is
// true). A deadline in the past fails them at once, one set or extended
// while a Read is blocked takes effect at once, and the zero time clears
// it. A timed-out Read loses nothing: the stream is intact and a Read after
// the deadline was moved carries on. ReadUpdate is not affected: its ctx
// bounds it.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.readDL.set(t)
	return nil
}

// SetWriteDeadline sets when blocked and future Write calls give up with an
// error wrapping os.ErrDeadlineExceeded, as SetReadDeadline does for Read.
// A Write that times out has buffered the count it returns, and the
// connection goes on sending it. SendUpdate never blocks and ignores it.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	c.writeDL.set(t)
	return nil
}

// timeoutError is the error of a Read or Write whose deadline passed: a
// *net.OpError around os.ErrDeadlineExceeded, as the net package's own
// connections return.
func (c *Conn) timeoutError(op string) error {
	return &net.OpError{Op: op, Net: "fresh", Source: c.LocalAddr(), Addr: c.peer.Load(), Err: os.ErrDeadlineExceeded}
}

// Done is closed when the connection has ended (Close, peer close, idle
// timeout or error); Err then says why.
func (c *Conn) Done() <-chan struct{} { return c.done }

// PathChanged returns a channel that receives when Stats().PathDead
// changes, the path going dead or coming back; read Stats for the new
// state. Signals coalesce (the channel holds one), so a flip and its
// flip back may arrive as one signal with Stats showing the latest. An
// application that watches the path with this instead of polling Stats
// does not wake up while nothing changes, which on a battery-powered
// device is the budget.
func (c *Conn) PathChanged() <-chan struct{} { return c.pathCh }

// Err is why the connection ended (nil while it is open).
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.s.Err()
}

// Close ends the connection. It first ends the stream (CloseWrite) and
// waits up to Config.Linger for the peer to acknowledge every byte written,
// so no data is lost to an early Close, then tells the peer and stops every
// goroutine the Conn started. The peer's Read then ends with io.EOF after
// the last byte, even if the FIN itself is still in flight (a normal CLOSE
// says every byte was acknowledged), and its ReadUpdate with io.EOF after
// the last update.
//
// Close also waits, within the same linger, for the peer to acknowledge
// our latest Commit (commit.go).
//
// If the linger expires first, the peer's Read and ReadUpdate end with an
// error wrapping ErrPeerClosed, and Close returns an error wrapping
// ErrClosed that says how many bytes were not acknowledged. Close is
// idempotent; later calls return the first result.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		_ = c.s.CloseWrite() // an error means it is closed already
		c.mu.Unlock()
		c.kick()
		if c.cfg.Linger > 0 {
			deadline := time.NewTimer(c.cfg.Linger)
		wait:
			for {
				c.mu.Lock()
				// Wait for data, not for the FIN's own ACK: a peer that
				// has every byte loses nothing if our CLOSE overtakes it.
				// And for our latest Commit's ACK: the CLOSE must not
				// leave the peer without it.
				unacked := c.s.Unacked()
				finished := (unacked == 0 && !c.s.CommitUnacked()) || c.s.Closed()
				c.mu.Unlock()
				if finished {
					break
				}
				select {
				case <-c.writeReady:
				case <-deadline.C:
					c.closeErr = fmt.Errorf("%w: linger expired with %d bytes unacknowledged", ErrClosed, unacked)
					if unacked == 0 {
						c.closeErr = fmt.Errorf("%w: linger expired with our Commit unacknowledged", ErrClosed)
					}
					break wait
				}
			}
			deadline.Stop()
		}
		c.mu.Lock()
		c.s.Close()
		c.mu.Unlock()
		c.kick()
		c.closed()
	})
	return c.closeErr
}

// Abort ends the connection at once and tells the peer the stream is not
// whole: its Read ends with an error wrapping ErrStreamAborted after the
// bytes it has, never io.EOF, even when every byte written so far was
// acknowledged. Use it when what was written is not all that was meant (an
// upload cut short by a deadline or a Ctrl-C), so the receiver cannot take
// a prefix for the whole; Close is for a stream that is complete. Abort
// does not linger, drops what was not yet sent, and returns once the
// CLOSE has left. Close or Abort after it does nothing.
func (c *Conn) Abort() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.s.CloseAbort()
		c.mu.Unlock()
		c.kick()
		c.closed()
	})
	return c.closeErr
}

// closed waits for the session's end and stops what the Conn started.
func (c *Conn) closed() {
	<-c.done
	if c.ownsTransport {
		_ = c.tr.Close()
	}
	if c.stopNTP != nil {
		c.stopNTP()
	}
}

// dialError is an error of Dial: "transport: dial addr: " and the cause,
// without the cause's own "transport: " prefix (ErrHandshake's and the
// others').
type dialError struct {
	addr string
	err  error
}

func (e *dialError) Error() string {
	return "transport: dial " + e.addr + ": " + strings.TrimPrefix(e.err.Error(), "transport: ")
}

func (e *dialError) Unwrap() error { return e.err }

// deadline is one of a Conn's deadlines: a channel closed when it passes,
// which blocked calls select on (the pattern of net.Pipe). The channel is
// made by the first call that needs it, so that a connection whose stream
// is never read or written (a monitor's, which takes updates) holds none.
type deadline struct {
	mu      sync.Mutex
	timer   *time.Timer
	expired chan struct{} // closed when the deadline has passed; nil: none yet, not passed
}

// set moves the deadline to t; the zero time clears it.
func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil && !d.timer.Stop() {
		<-d.expired // the timer fired: wait until its func closed the channel
	}
	d.timer = nil
	passed := d.expired != nil && isClosed(d.expired)
	if t.IsZero() {
		if passed {
			d.expired = make(chan struct{})
		}
		return
	}
	if passed || d.expired == nil {
		d.expired = make(chan struct{})
	}
	if dur := time.Until(t); dur > 0 {
		ch := d.expired
		d.timer = time.AfterFunc(dur, func() { close(ch) })
		return
	}
	close(d.expired)
}

// wait returns the channel closed when the current deadline passes. A
// caller that blocked on it re-reads it after waking: set may replace it.
func (d *deadline) wait() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.expired == nil {
		// Made here rather than left nil: a deadline set while the
		// caller blocks must close what it selects on.
		d.expired = make(chan struct{})
	}
	return d.expired
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// randomID returns a random connection ID.
func randomID() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	return binary.BigEndian.Uint64(b[:])
}

// startNTP wraps cfg.Clock in an NTP-corrected clock when NTPServer is set
// and keeps it synchronised until the returned stop is called.
func startNTP(cfg *Config) (stop context.CancelFunc, err error) {
	if cfg.NTPServer == "" {
		return func() {}, nil
	}
	host, port := cfg.NTPServer, 0
	if h, p, err := net.SplitHostPort(cfg.NTPServer); err == nil {
		host = h
		if _, err := fmt.Sscanf(p, "%d", &port); err != nil {
			return nil, fmt.Errorf("%w: NTPServer port %q", ErrInvalidConfig, p)
		}
	}
	nc, err := ntpclock.New(cfg.Clock, ntpclock.Config{Server: host, Port: port, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	// Synchronise once before any packet is stamped: the first sync steps
	// the clock (by seconds, on a device that booted without RTC), and a
	// step in the middle of a connection would scramble the in-band
	// estimator's history for up to a minute. Later syncs slew. A server
	// that does not answer in time is not fatal: Run keeps trying.
	first, cancelFirst := context.WithTimeout(context.Background(), ntpFirstSyncTimeout)
	if err := nc.Sync(first); err != nil {
		cfg.Logger.Warn("fresh: first NTP sync failed; continuing unsynchronised", "server", cfg.NTPServer, "err", err)
	}
	cancelFirst()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = nc.Run(ctx) // re-syncs every interval; errors are in Status
	}()
	cfg.Clock = nc
	return func() { cancel(); <-done }, nil
}

// ntpFirstSyncTimeout bounds the synchronous first NTP query of Dial/Listen.
const ntpFirstSyncTimeout = 2 * time.Second
