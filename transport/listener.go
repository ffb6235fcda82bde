package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"

	"github.com/fresh-udp/fresh/internal/session"
	"github.com/fresh-udp/fresh/internal/wire"
)

// maxPendingAccept bounds connections opened but not yet Accepted.
const maxPendingAccept = 64

// Listener accepts fresh connections on one UDP socket. Connections are
// demultiplexed by connection ID, not by address.
type Listener struct {
	cfg  Config
	sock *socket

	mu     sync.Mutex
	conns  map[uint64]*Conn
	closed bool

	accept    chan *Conn
	done      chan struct{} // closed by Close
	readDone  chan struct{}
	closeOnce sync.Once
	stopNTP   context.CancelFunc
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
	l := &Listener{
		cfg: conf, sock: sock,
		conns:    map[uint64]*Conn{},
		accept:   make(chan *Conn, maxPendingAccept),
		done:     make(chan struct{}),
		readDone: make(chan struct{}),
		stopNTP:  stopNTP,
	}
	go l.readLoop()
	return l, nil
}

// Addr is the listener's UDP address.
func (l *Listener) Addr() net.Addr { return l.sock.conn.LocalAddr() }

// Accept waits for the next connection.
func (l *Listener) Accept(ctx context.Context) (*Conn, error) {
	select {
	case c := <-l.accept:
		return c, nil
	case <-l.done:
		return nil, ErrListenerClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// readLoop demultiplexes datagrams to connections and opens new ones on
// Initial.
func (l *Listener) readLoop() {
	defer close(l.readDone)
	rx, err := newRxBatch(l.sock, maxAccepted(l.cfg.MaxDatagram))
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
			c := l.route(d.b, d.addr)
			if c != nil && c.handleDatagram(d.b) && !slices.Contains(touched, c) {
				touched = append(touched, c)
			}
		}
		for _, c := range touched {
			c.kick()
		}
		clear(touched)
		touched = touched[:0]
	}
}

// route finds the connection a datagram belongs to, creating one for a
// valid Initial from an unknown connection ID. Datagrams for nobody are
// dropped.
func (l *Listener) route(b []byte, from netip.AddrPort) *Conn {
	h, body, err := wire.ParseHeader(b)
	if err != nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if c, ok := l.conns[h.ConnID]; ok {
		return c
	}
	var in wire.Initial
	if l.closed || h.Type != wire.TypeInitial || wire.ParseInitial(body, len(b), &in) != nil {
		return nil
	}
	if !from.IsValid() {
		return nil
	}
	if len(l.accept) == cap(l.accept) {
		return nil // backlog full: the client will retry its Initial
	}
	s, err := session.New(l.cfg.sessionConfig(), h.ConnID, false, l.cfg.Clock.Now())
	if err != nil {
		return nil
	}
	c := newConn(&l.cfg, l.sock, net.UDPAddrFromAddrPort(from), s)
	id := h.ConnID
	c.onDone = func() {
		l.mu.Lock()
		delete(l.conns, id)
		l.mu.Unlock()
	}
	l.conns[id] = c
	go c.loop()
	l.accept <- c
	return c
}

// Close stops accepting, closes every connection (each lingers as Conn.Close
// says) and the socket, and stops every goroutine. It is idempotent.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		conns := make([]*Conn, 0, len(l.conns))
		for _, c := range l.conns {
			conns = append(conns, c)
		}
		l.mu.Unlock()
		close(l.done)
		var wg sync.WaitGroup
		for _, c := range conns {
			wg.Add(1)
			go func() { defer wg.Done(); c.Close() }()
		}
		wg.Wait()
		_ = l.sock.conn.Close()
		<-l.readDone
		l.stopNTP()
	})
	return nil
}
