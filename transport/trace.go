package transport

import (
	"github.com/fresh-udp/fresh/qlog"
)

// startTrace opens the connection's trace (Config.Tracer) as the driver
// takes it on, before its first packet either way: a client's Initial is
// polled by the driver, a server's first datagram is handled once the
// Listener has started it.
func (c *Conn) startTrace() {
	if c.cfg.Tracer == nil {
		return
	}
	role := qlog.Client
	if c.ln != nil {
		role = qlog.Server
	}
	c.mu.Lock()
	id := c.s.ConnID()
	c.mu.Unlock()
	now, start := c.clk.Now(), c.clk.Wall()
	t, err := c.cfg.Tracer(qlog.ConnInfo{Role: role, ConnID: id, Remote: c.peer.Load(), Start: start})
	if err != nil {
		c.cfg.Logger.Warn("fresh: connection not traced", "conn", id, "err", err)
		return
	}
	if t == nil {
		return
	}
	c.mu.Lock()
	c.s.SetTracer(now, t)
	c.mu.Unlock()
}

// stopTrace closes the trace once the connection has ended, flushing
// what it buffered.
func (c *Conn) stopTrace() {
	c.mu.Lock()
	t := c.s.Tracer()
	c.s.SetTracer(0, nil)
	id := c.s.ConnID()
	c.mu.Unlock()
	if t == nil {
		return
	}
	if err := t.Close(); err != nil {
		c.cfg.Logger.Warn("fresh: connection trace incomplete", "conn", id, "err", err)
	}
}
