package emudriver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/fresh-udp/fresh/bench/emu"
	"github.com/fresh-udp/fresh/bench/netem"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/internal/wire"
	"github.com/fresh-udp/fresh/transport"
)

// relayNet is the loopback topology of the package doc: a Listener on
// 127.0.0.1 behind the shim, the relay in front of it, taps in front of
// reverse flows' clients.
type relayNet struct {
	d     *driver
	shim  *shim
	relay *emu.Relay
	addr  *net.UDPAddr // the relay's front
}

func (n *relayNet) driverName() string { return "emu" }

func (n *relayNet) open(lcfg transport.Config) error {
	d := n.d
	var err error
	if d.listener, err = transport.Listen("127.0.0.1:0", lcfg); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if n.shim, err = newShim(d.listener.Addr().(*net.UDPAddr), n.onShimFresh, n.onShimCBR); err != nil {
		return fmt.Errorf("shim: %w", err)
	}
	if n.relay, err = emu.NewRelay(emu.RelayConfig{
		Target: n.shim.Addr().String(), Forward: d.s.Forward, Reverse: d.s.Reverse,
		Seed: uint64(d.s.Seed), MaxClients: len(d.flows) + 1,
	}); err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	n.addr = n.relay.Addr().(*net.UDPAddr)
	return nil
}

func (n *relayNet) setupFlow(f *flowRun) error {
	if f.spec.Kind == scenario.KindCBR {
		return n.setupCBR(f)
	}
	return n.setupFresh(f)
}

func (n *relayNet) startFlow(*flowRun) {} // check refused the other kinds

func (n *relayNet) finish() {}

func (n *relayNet) setPath(forward, reverse *scenario.PathChange) error {
	return n.relay.SetPath(forward, reverse)
}

func (n *relayNet) busy() [2]netem.LinkStats {
	st := n.relay.Stats()
	return [2]netem.LinkStats{st.Forward.Link, st.Reverse.Link}
}

func (n *relayNet) close() {
	if n.relay != nil {
		_ = n.relay.Close()
	}
	if n.shim != nil {
		n.shim.Close()
	}
}

// setupFresh dials one bulk or update flow through the relay (a reverse
// flow through a tap) and accepts its server side.
func (n *relayNet) setupFresh(f *flowRun) error {
	d := n.d
	addr := n.addr
	if f.spec.Reverse {
		t, err := newTap(n.addr, f.dscp, func(b []byte) { n.observeFresh(f, b) })
		if err != nil {
			return err
		}
		f.tap = t
		addr = t.Addr()
	}
	return d.connectFresh(f, func(ctx context.Context, cfg transport.Config) (*transport.Conn, error) {
		return transport.Dial(ctx, addr.String(), cfg)
	})
}

// setupCBR opens a cbr flow's client socket. A reverse flow's socket says
// hello through the relay until the shim has learned the back socket that
// stands for it, so the shim can send to it.
func (n *relayNet) setupCBR(f *flowRun) error {
	d := n.d
	c, err := net.DialUDP("udp4", nil, n.addr)
	if err != nil {
		return err
	}
	f.cbr = c
	setBuffers(c)
	if !f.spec.Reverse {
		f.cbrSend = func(b []byte) error { _, err := c.Write(b); return err }
		return setTOS(c, f.dscp)
	}
	f.cbrIn = c
	f.cbrSend = func(b []byte) error { return n.shim.WriteTo(b, f.revAddr) }
	hello := make([]byte, cbrHeaderLen)
	putCBR(hello, cbrHeader{kind: cbrHello, flow: f.idx})
	deadline := time.NewTimer(setupTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(helloEvery)
	defer tick.Stop()
	for {
		if _, err := c.Write(hello); err != nil {
			return err
		}
		select {
		case <-f.learned:
			return nil
		case <-tick.C:
		case <-deadline.C:
			return errors.New("reverse cbr: no hello crossed the relay")
		case <-d.ctx.Done():
			return d.ctx.Err()
		}
	}
}

// onShimFresh sees every fresh datagram that crossed the forward link.
func (n *relayNet) onShimFresh(b []byte) {
	d := n.d
	h, _, err := wire.ParseHeader(b)
	if err != nil {
		return
	}
	d.regMu.Lock()
	f := d.byConnID[h.ConnID]
	if f == nil && h.Type == wire.TypeInitial {
		if i := d.pending.Load(); i >= 0 {
			f = d.flows[i]
			d.byConnID[h.ConnID] = f
		}
	}
	d.regMu.Unlock()
	if f != nil && !f.spec.Reverse {
		n.record(f, h, time.Now())
	}
}

// observeFresh sees a reverse flow's datagrams that crossed the reverse link.
func (n *relayNet) observeFresh(f *flowRun, b []byte) {
	if h, _, err := wire.ParseHeader(b); err == nil {
		n.record(f, h, time.Now())
	}
}

// record notes the arrival at wall time at of a data or update datagram:
// its one-way delay from the sender's stamp (both ends read this host's
// clock, so it is exact to the µs of the stamp).
func (n *relayNet) record(f *flowRun, h wire.Header, at time.Time) {
	d := n.d
	if (h.Type != wire.TypeData && h.Type != wire.TypeUpdate) || !d.started.Load() {
		return
	}
	owd := time.Duration(at.UnixMicro()-h.Timestamp) * time.Microsecond
	d.delaySample(f, at.Sub(d.origin), owd)
}

// onShimCBR sees the driver's own cbr datagrams at the server side.
func (n *relayNet) onShimCBR(b []byte, from netip.AddrPort) {
	d := n.d
	h, ok := parseCBR(b)
	if !ok || h.flow >= len(d.flows) {
		return
	}
	f := d.flows[h.flow]
	if f.spec.Kind != scenario.KindCBR {
		return
	}
	switch {
	case h.kind == cbrHello && f.spec.Reverse:
		f.learnOnce.Do(func() {
			f.revAddr = from
			close(f.learned)
		})
	case h.kind == cbrData && !f.spec.Reverse && d.started.Load():
		t := d.now()
		d.cbrDelivered(f, t, t-time.Duration(h.sentNS))
	}
}
