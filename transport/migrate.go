package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"
)

// migratePeer is where Migrate's new socket sends: the peer; a test sends
// it elsewhere to see a Migrate that hears nothing back.
var migratePeer = func(peer *net.UDPAddr) *net.UDPAddr { return peer }

// Migrate moves a client's connection to a new local port, as a device
// does when it wants off a NAT binding it no longer trusts (or to test
// that the server follows): it opens a new socket connected to the
// server, sends from it at once (a PING), and waits until an authentic
// datagram comes back on it — the server moved (it validates the new
// address itself, RFC 9000 §9) and the path works both ways. Then the old
// socket is closed and LocalAddr names the new one. If nothing comes back
// before ctx ends, the connection stays on the old socket (which kept
// working meanwhile) and Migrate returns an error wrapping ctx's; if what
// comes back ends the connection (ErrStatelessReset: the new path reaches
// a server that does not hold it), Migrate returns that.
//
// Only a connection opened with package Dial can move (its Transport and
// socket are its own), and only over TLS: a server never moves an
// Insecure connection. The stream is not interrupted: what was in flight
// on the old path is acknowledged or resent on the new one.
func (c *Conn) Migrate(ctx context.Context) error {
	t := c.tr
	switch {
	case c.ln != nil || !t.single || !t.owned:
		return errors.New("transport: Migrate: only a connection opened with package Dial (on a socket of its own) can move")
	case c.cfg.Insecure:
		return errors.New("transport: Migrate: the connection is Insecure (no TLS): a server never moves it")
	}
	t.migrateMu.Lock()
	defer t.migrateMu.Unlock()
	select {
	case <-c.done:
		return c.Err()
	default:
	}
	peer := c.peer.Load()
	network := "udp4"
	if peer.IP.To4() == nil {
		network = "udp6"
	}
	udp, err := net.DialUDP(network, nil, migratePeer(peer))
	if err != nil {
		return fmt.Errorf("transport: Migrate: %w", err)
	}
	sock, err := newSocket(udp, c.cfg.StreamDSCP.Code())
	var rx reader
	if err == nil {
		rx, err = newReader(sock, t.maxRecv, true)
	}
	if err != nil {
		_ = udp.Close()
		return fmt.Errorf("transport: Migrate: %w", err)
	}
	r := &rxState{rx: rx}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		_ = udp.Close()
		return ErrTransportClosed
	}
	t.readers.Add(1)
	t.mu.Unlock()
	go t.readLoop(r)

	old, oldRx := t.cur.Load(), t.curRx
	t.drv.useSocket(sock)
	c.mu.Lock()
	c.s.Probe()
	c.mu.Unlock()
	c.kick()

	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		if r.accepted.Load() > 0 {
			// What came back may have ended the connection: a stateless
			// reset, from a server behind the new path that does not
			// hold it (a 4-tuple load balancer that hashed the new
			// address elsewhere). The session took it under c.mu before
			// the reader counted it, so Err already says so.
			if err = c.Err(); err == nil {
				break
			}
		} else {
			select {
			case <-tick.C:
				continue
			case <-ctx.Done():
				err = fmt.Errorf("transport: Migrate: no answer on the new port %v: %w", udp.LocalAddr(), ctx.Err())
			case <-c.done:
				err = c.Err()
			}
		}
		// Back to the old socket: the driver sends on it again, and the
		// new one's reader ends with its socket.
		t.drv.useSocket(old)
		r.retired.Store(true)
		_ = udp.Close()
		return err
	}
	t.cur.Store(sock)
	t.curRx = r
	oldRx.retired.Store(true)
	_ = old.pc.Close()
	return nil
}
