package emudriver

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/transport"
)

// A sleeping device (scenario Flow.Sleep): at every reading it wakes,
// connects, sends the one reading, waits for its acknowledgement where the
// protocol has one, closes and sleeps. What it costs is per wake: the time
// from waking to the reading stored at the monitor, and the time the
// radio stays on, from waking to the last packet of that wake's
// connection in either direction at the router (the device's radio may
// stay on longer, for its own idle timer; that is the network's, not the
// protocol's). Each wake connects from a client port of its own, so the
// router tells the wakes' packets apart.
const (
	sleepPortBase = 20000
	sleepPorts    = 200 // client ports per flow, used in turn
	// ackPoll is how often a fresh device checks whether its reading was
	// acknowledged (Stats.UpdatesAcked): the harness's polling, not a cost
	// of the device's, which would wait on the ACK's arrival.
	ackPoll = time.Millisecond
)

// wake is one wake-up of a sleeping device.
type wake struct {
	at     time.Time // the device woke and took its reading
	stored time.Time // the monitor read it (zero: never)
	last   time.Time // the wake's last packet at the router, either direction
}

// sleeper is a sleeping telemetry flow's state; its maps and wakes are
// under the flow's mu.
type sleeper struct {
	wakes   []wake
	byKey   map[flowKey]int // a wake's connection → the wake
	byStamp map[int64]int   // a reading's write stamp → its wake
	// wake connects from from, sends msg, waits and closes (per
	// protocol, setupSleeping).
	wake func(from netip.AddrPort, at time.Time, msg []byte) error
}

// sleepPort is the client port of flow f's k-th wake.
func (n *tunNet) sleepPort(f *flowRun, k int) netip.AddrPort {
	return netip.AddrPortFrom(n.tun.ClientAddr(), uint16(sleepPortBase+sleepPorts*f.idx+k%sleepPorts))
}

// beginWake records a wake at time at whose connection the router will
// see as key.
func (n *tunNet) beginWake(f *flowRun, key flowKey, at time.Time) {
	n.register(f, key)
	sl := f.tunf.sleep
	f.mu.Lock()
	defer f.mu.Unlock()
	sl.byKey[key] = len(sl.wakes)
	sl.byStamp[at.UnixNano()] = len(sl.wakes)
	sl.wakes = append(sl.wakes, wake{at: at})
}

// sawPacket notes a packet of the flow's connection key at the router at
// t; f.mu held.
func (sl *sleeper) sawPacket(key flowKey, t time.Time) {
	if i, ok := sl.byKey[key]; ok && t.After(sl.wakes[i].last) {
		sl.wakes[i].last = t
	}
}

// stored notes the monitor's read of the reading stamped stamp at t;
// f.mu held.
func (sl *sleeper) stored(stamp int64, t time.Time) {
	if i, ok := sl.byStamp[stamp]; ok && sl.wakes[i].stored.IsZero() {
		sl.wakes[i].stored = t
	}
}

// report summarises the wakes: wake to stored, over the readings
// delivered, and radio on, over the wakes the router saw.
func (sl *sleeper) report(fr *report.Flow) {
	var stored, on []float64
	for _, w := range sl.wakes {
		if !w.stored.IsZero() {
			stored = append(stored, float64(w.stored.Sub(w.at))/1e6)
		}
		if !w.last.IsZero() {
			on = append(on, float64(w.last.Sub(w.at))/1e6)
		}
	}
	s, o := report.Summarize(stored), report.Summarize(on)
	fr.WakeToStoredMs, fr.RadioOnMs = &s, &o
}

// setupSleeping sets up a sleeping flow: the monitor's side now, the
// device's connection at every wake.
func (n *tunNet) setupSleeping(f *flowRun) error {
	sl := &sleeper{byKey: map[flowKey]int{}, byStamp: map[int64]int{}}
	f.tunf.sleep = sl
	switch f.spec.Protocol {
	case "fresh":
		return n.sleepingFresh(f, sl)
	case "mqtt":
		b, err := n.startBroker(f)
		if err != nil {
			return err
		}
		sl.wake = func(from netip.AddrPort, at time.Time, msg []byte) error {
			n.beginWake(f, flowKey{protoTCP, from.Port(), b.port}, at)
			// The device's session persists at the broker between wakes
			// (a clean session would lose its subscriptions and queued
			// QoS 1 messages): CleanSession false, the same client ID.
			pub, err := n.mqttConnect(f.spec.Name, b, n.tun.InClient, net.TCPAddrFromAddrPort(from), false)
			if err != nil {
				return err
			}
			defer pub.Disconnect(0)
			return waitToken(pub.Publish(b.topic, b.qos, false, msg))
		}
	case "coap":
		cs, err := n.startCoAPServer(f)
		if err != nil {
			return err
		}
		sl.wake = func(from netip.AddrPort, at time.Time, msg []byte) error {
			n.beginWake(f, flowKey{protoUDP, from.Port(), uint16(cs.addr.Port)}, at)
			cc, closeClient, err := n.coapClient(cs, from)
			if err != nil {
				return err
			}
			defer closeClient()
			return n.coapSend(f, cc, msg)
		}
	case "quic":
		return n.sleepingQUIC(f, sl)
	case "udp":
		var srv *net.UDPConn
		if err := n.tun.InServer(func() (err error) {
			srv, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(n.tun.ServerAddr(), 0)))
			return err
		}); err != nil {
			return err
		}
		setBuffers(srv)
		f.tunf.recv = srv
		f.tunf.stops = append(f.tunf.stops, func() { _ = srv.Close() })
		sl.wake = func(from netip.AddrPort, at time.Time, msg []byte) error {
			n.beginWake(f, flowKey{protoUDP, from.Port(), port(srv.LocalAddr())}, at)
			var c *net.UDPConn
			if err := n.tun.InClient(func() (err error) {
				c, err = net.DialUDP("udp4", net.UDPAddrFromAddrPort(from), srv.LocalAddr().(*net.UDPAddr))
				return err
			}); err != nil {
				return err
			}
			defer c.Close()
			_, err := c.Write(msg)
			return err
		}
	default:
		return fmt.Errorf("sleep over %s: not built", f.spec.Protocol)
	}
	return nil
}

// sleepingFresh: the monitor a fresh Listener (0-RTT allowed when
// secure), the device a fresh Dial per wake from its own socket, with a
// TLS session cache and a token store kept across wakes, so that every
// wake after the first resumes without a Retry and sends its reading in
// 0-RTT. The device closes once the reading is acknowledged.
func (n *tunNet) sleepingFresh(f *flowRun, sl *sleeper) error {
	ctx := n.d.ctx
	cfg := transport.Config{Insecure: true, MaxUpdateRate: 1000}
	lcfg := cfg
	if f.spec.Secure {
		client, server, _, _, err := n.credentials()
		if err != nil {
			return err
		}
		client.ClientSessionCache = tls.NewLRUClientSessionCache(1)
		cfg.Insecure, cfg.TLS, cfg.Allow0RTT = false, client, true
		// The listener's token for the next connection, kept across
		// wakes: no Retry on a wake after the first.
		cfg.TokenStore = transport.NewTokenStore(1)
		lcfg.Insecure, lcfg.TLS, lcfg.Allow0RTT = false, server, true
	}
	ln, err := n.listenFresh(lcfg)
	if err != nil {
		return err
	}
	f.tunf.stops = append(f.tunf.stops, func() { _ = ln.Close() })
	n.d.goFunc(func() {
		for {
			sc, err := ln.Accept(ctx)
			if err != nil {
				return
			}
			n.d.goFunc(func() {
				defer sc.Close()
				for {
					u, err := sc.ReadUpdate(ctx)
					if err != nil {
						return
					}
					n.delivered(f, u.Payload)
				}
			})
		}
	})
	sl.wake = func(from netip.AddrPort, at time.Time, msg []byte) error {
		uc, err := n.wakeSocket(from)
		if err != nil {
			return err
		}
		defer uc.Close()
		tr := &transport.Transport{Conn: uc}
		defer tr.Close()
		n.beginWake(f, flowKey{protoUDP, from.Port(), port(ln.Addr())}, at)
		wctx, cancel := context.WithTimeout(ctx, peerTimeout)
		defer cancel()
		var c *transport.Conn
		if cfg.Allow0RTT {
			c, err = tr.DialEarly(wctx, ln.Addr(), cfg)
		} else {
			c, err = tr.Dial(wctx, ln.Addr(), cfg)
		}
		if err != nil {
			return err
		}
		defer c.Close()
		if err := c.SendUpdate(msg); err != nil {
			return err
		}
		t := time.NewTicker(ackPoll)
		defer t.Stop()
		for c.Stats().UpdatesAcked == 0 {
			select {
			case <-wctx.Done():
				return errors.New("reading not acknowledged")
			case <-c.Done():
				return c.Err()
			case <-t.C:
			}
		}
		return nil
	}
	return nil
}

// sleepingQUIC: the monitor a quic-go listener that takes 0-RTT
// (ListenEarly, Allow0RTT), the device a quic-go DialEarly per wake from
// its own socket, with a TLS session cache and a token store kept across
// wakes, as quic-go documents for resumption. The reading goes on a
// stream the device opens at once (in 0-RTT once it resumes) and closes;
// the monitor reads it to the FIN, stores it and answers one byte, the
// device's acknowledgement (a DATAGRAM has none); the device then closes
// the connection. quic-go hands 0-RTT stream data to the application as
// it arrives, before the handshake completes (ListenEarly's documented
// behaviour, replays the application's to handle), where fresh holds an
// early update until the handshake completes.
func (n *tunNet) sleepingQUIC(f *flowRun, sl *sleeper) error {
	ctx := n.d.ctx
	client, server, _, _, err := n.credentials()
	if err != nil {
		return err
	}
	client.NextProtos, server.NextProtos = []string{quicALPN}, []string{quicALPN}
	client.ClientSessionCache = tls.NewLRUClientSessionCache(1)
	ccfg := &quic.Config{TokenStore: quic.NewLRUTokenStore(1, 1)}
	var su *net.UDPConn
	if err := n.tun.InServer(func() (err error) {
		su, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(n.tun.ServerAddr(), 0)))
		return err
	}); err != nil {
		return err
	}
	str := &quic.Transport{Conn: su}
	ln, err := str.ListenEarly(server, &quic.Config{Allow0RTT: true})
	if err != nil {
		_ = su.Close()
		return fmt.Errorf("quic server: %w", err)
	}
	f.tunf.stops = append(f.tunf.stops, func() { _ = ln.Close(); _ = str.Close(); _ = su.Close() })
	n.d.goFunc(func() {
		for {
			sc, err := ln.Accept(ctx)
			if err != nil {
				return
			}
			n.d.goFunc(func() {
				defer sc.CloseWithError(0, "")
				s, err := sc.AcceptStream(ctx)
				if err != nil {
					return
				}
				b, err := io.ReadAll(io.LimitReader(s, 1<<16))
				if err != nil {
					return
				}
				n.delivered(f, b)
				_, _ = s.Write([]byte{1})
				_ = s.Close()
				// Until the device closes (or the idle timeout).
				<-sc.Context().Done()
			})
		}
	})
	sl.wake = func(from netip.AddrPort, at time.Time, msg []byte) error {
		uc, err := n.wakeSocket(from)
		if err != nil {
			return err
		}
		defer uc.Close()
		tr := &quic.Transport{Conn: uc}
		defer tr.Close()
		n.beginWake(f, flowKey{protoUDP, from.Port(), port(su.LocalAddr())}, at)
		wctx, cancel := context.WithTimeout(ctx, peerTimeout)
		defer cancel()
		c, err := tr.DialEarly(wctx, su.LocalAddr(), client, ccfg)
		if err != nil {
			return err
		}
		defer c.CloseWithError(0, "")
		s, err := c.OpenStream()
		if err != nil {
			return err
		}
		if _, err := s.Write(msg); err != nil {
			return err
		}
		if err := s.Close(); err != nil {
			return err
		}
		_ = s.SetReadDeadline(time.Now().Add(peerTimeout))
		var ack [1]byte
		if _, err := io.ReadFull(s, ack[:]); err != nil {
			return fmt.Errorf("reading not acknowledged: %w", err)
		}
		return nil
	}
	return nil
}

// wakeSocket is a wake's own UDP socket at from, in the client namespace.
func (n *tunNet) wakeSocket(from netip.AddrPort) (uc *net.UDPConn, err error) {
	err = n.tun.InClient(func() (err error) {
		uc, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(from))
		return err
	})
	return uc, err
}

// stampOf is a reading's write stamp (its first 8 bytes).
func stampOf(msg []byte) int64 { return int64(binary.BigEndian.Uint64(msg)) }
