package emudriver

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fresh-udp/fresh/bench/emu"
	"github.com/fresh-udp/fresh/bench/netem"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/dscp"
	"github.com/fresh-udp/fresh/internal/wire"
	"github.com/fresh-udp/fresh/transport"
	"github.com/fresh-udp/fresh/transport/devcert"
)

// Ports of the flows that are not fresh (fresh flows use the Listener's
// port and an ephemeral client port): flow i's iperf3 server listens on
// iperf3Port+i and binds its data stream's client port to
// fixedClientPort+i (--cport); a telemetry flow's client socket binds
// fixedClientPort+i too. Each namespace is the run's own, so nothing else
// holds them.
const (
	iperf3Port      = 5201
	fixedClientPort = 42000
	iperf3Binary    = "iperf3"
	listenWait      = 5 * time.Second // for an iperf3 server to listen
)

// tunNet runs the flows between two network namespaces joined by the TUN
// router (emu.TUN): every server side in the server namespace, every
// client side in the client namespace, kernel TCP and UDP between them.
// The router's Observe callback measures every flow's data packets.
type tunNet struct {
	d   *driver
	tun *emu.TUN

	mu     sync.Mutex // guards byKey, procs, closed, ca, cert
	byKey  map[flowKey]*flowRun
	procs  []*exec.Cmd
	closed bool // close has killed procs: later ones are killed at once
	// ca and cert are the run's TLS credentials for secure telemetry,
	// made on first use (peers.go, credentials).
	ca   *devcert.CA
	cert *tls.Certificate
}

// flowKey identifies a flow's packets in both directions: protocol,
// client-side port, server-side port.
type flowKey struct {
	proto        uint8
	cport, sport uint16
}

const (
	protoTCP = 6
	protoUDP = 17
)

// tunFlow is the TUN-only state of a flow.
type tunFlow struct {
	key flowKey

	// iperf3: the client's command and its JSON report.
	cmd    *exec.Cmd
	stdout bytes.Buffer
	iperf  *iperf3Report
	ierr   error
	done   chan struct{} // closed when the client has exited and its report is read

	// telemetry: the two ends (sender, receiver); the TCP listener; over
	// fresh, the two Conns and their Listener instead.
	send, recv   net.Conn
	fsend, frecv *transport.Conn
	udpPeer      *net.UDPAddr // reverse UDP: where the server side sends
	// publish sends one message of an mqtt, coap or quic flow (peers.go).
	publish func([]byte) error
	// sleep is a sleeping telemetry flow's state (sleep.go), nil if the
	// flow streams.
	sleep *sleeper
	// stops end the monitor side of a flow (a broker's subscriber, a CoAP
	// server), after the device side's onStop, in reverse order.
	stops []func()
	ln    net.Listener
	// The sender's ISN (TCP), seen in its SYN at the router, and the next
	// message whose write time is still to be read there.
	isn     uint32
	haveISN bool
	nextMsg int64
}

func (n *tunNet) driverName() string { return "emu-tun" }

func (n *tunNet) open(lcfg transport.Config) error {
	d := n.d
	n.byKey = map[flowKey]*flowRun{}
	t, err := emu.NewTUN(emu.TUNConfig{
		Forward: d.s.Forward, Reverse: d.s.Reverse, Seed: d.s.Seed,
		Observe: n.observe,
	})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNoTUN, err)
	}
	n.tun = t
	for _, f := range d.flows {
		if f.spec.Kind == scenario.KindBulk || f.spec.IsUpdates() {
			return n.tun.InServer(func() error {
				var err error
				d.listener, err = transport.Listen(netip.AddrPortFrom(n.tun.ServerAddr(), 0).String(), lcfg)
				return err
			})
		}
	}
	return nil
}

func (n *tunNet) register(f *flowRun, k flowKey) {
	f.tunf.key = k
	n.mu.Lock()
	n.byKey[k] = f
	n.mu.Unlock()
}

func (n *tunNet) setupFlow(f *flowRun) error {
	f.tunf = &tunFlow{}
	err := n.setupFlowKind(f)
	if stops := f.tunf.stops; len(stops) > 0 {
		all := func() {
			for i := len(stops) - 1; i >= 0; i-- {
				stops[i]()
			}
		}
		if err != nil {
			all()
			return err
		}
		device := f.onStop
		f.onStop = func() {
			if device != nil {
				device()
			}
			all()
		}
	}
	return err
}

// setupFlowKind sets up the flow by its kind and protocol.
func (n *tunNet) setupFlowKind(f *flowRun) error {
	switch {
	case f.spec.Kind == scenario.KindBulk || f.spec.IsUpdates():
		server := netip.AddrPortFrom(n.tun.ServerAddr(), port(n.d.listener.Addr()))
		err := n.d.connectFresh(f, func(ctx context.Context, cfg transport.Config) (c *transport.Conn, err error) {
			err = n.tun.InClient(func() error {
				c, err = transport.Dial(ctx, server.String(), cfg)
				return err
			})
			return c, err
		})
		if err != nil {
			return err
		}
		n.register(f, flowKey{protoUDP, port(f.client.LocalAddr()), server.Port()})
		return nil
	case f.spec.Kind == scenario.KindCBR:
		return n.setupCBR(f)
	case f.spec.Kind == scenario.KindIperf3:
		return n.setupIperf3(f)
	case f.spec.Kind == scenario.KindTelemetry:
		return n.setupTelemetry(f)
	}
	return fmt.Errorf("kind %q", f.spec.Kind)
}

// port is a UDP or TCP address's port.
func port(a net.Addr) uint16 {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return 0
	}
	return ap.Port()
}

// setupCBR opens a cbr flow's sink in the receiving namespace and its
// source, connected to it, in the sending one.
func (n *tunNet) setupCBR(f *flowRun) error {
	inSink, inSource := n.tun.InServer, n.tun.InClient
	sinkAddr, sourceAddr := n.tun.ServerAddr(), n.tun.ClientAddr()
	if f.spec.Reverse {
		inSink, inSource = n.tun.InClient, n.tun.InServer
		sinkAddr, sourceAddr = sourceAddr, sinkAddr
	}
	if err := inSink(func() (err error) {
		f.cbrIn, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(sinkAddr, 0)))
		return err
	}); err != nil {
		return err
	}
	setBuffers(f.cbrIn)
	if err := inSource(func() (err error) {
		f.cbr, err = net.DialUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(sourceAddr, 0)), f.cbrIn.LocalAddr().(*net.UDPAddr))
		return err
	}); err != nil {
		return err
	}
	setBuffers(f.cbr)
	c := f.cbr
	f.cbrSend = func(b []byte) error { _, err := c.Write(b); return err }
	k := flowKey{protoUDP, port(f.cbr.LocalAddr()), port(f.cbrIn.LocalAddr())}
	if f.spec.Reverse {
		k.cport, k.sport = k.sport, k.cport
	}
	n.register(f, k)
	return setTOS(f.cbr, f.dscp)
}

func (n *tunNet) startFlow(f *flowRun) {
	switch f.spec.Kind {
	case scenario.KindIperf3:
		f.tunf.done = make(chan struct{})
		n.d.goFunc(func() {
			defer close(f.tunf.done)
			n.runIperf3(f)
		})
	case scenario.KindTelemetry:
		if f.tunf.recv != nil || f.tunf.frecv != nil { // mqtt, coap, quic and sleeping fresh deliver in their own handlers
			n.d.goFunc(func() { n.telemetryReader(f) })
		}
		n.d.goFunc(func() { n.telemetryWriter(f) })
		if f.spec.Respond {
			n.d.goFunc(func() { n.responseReader(f) })
		}
	}
}

// iperf3Grace is how long the run waits past its end for the iperf3
// clients to finish: each sends for its -t from when its control
// connection is set up, a few RTTs after the flow's start, then exchanges
// results.
const iperf3Grace = 5 * time.Second

// finish waits (up to iperf3Grace) for the iperf3 clients' reports.
func (n *tunNet) finish() {
	deadline := time.NewTimer(iperf3Grace)
	defer deadline.Stop()
	for _, f := range n.d.flows {
		if f.tunf == nil || f.tunf.done == nil {
			continue
		}
		select {
		case <-f.tunf.done:
		case <-deadline.C:
			return
		case <-n.d.ctx.Done():
			return
		}
	}
}

func (n *tunNet) setPath(forward, reverse *scenario.PathChange) error {
	return n.tun.SetPath(forward, reverse)
}

func (n *tunNet) busy() [2]netem.LinkStats {
	st := n.tun.Stats()
	return [2]netem.LinkStats{st.Forward.Link, st.Reverse.Link}
}

func (n *tunNet) close() {
	n.mu.Lock()
	procs := n.procs
	n.closed = true
	n.mu.Unlock()
	for _, c := range procs {
		if c.Process != nil {
			_ = c.Process.Kill()
		}
	}
	for _, f := range n.d.flows {
		if tf := f.tunf; tf != nil {
			for _, c := range []io.Closer{tf.send, tf.recv, tf.ln} {
				if c != nil && !isNilCloser(c) {
					_ = c.Close()
				}
			}
		}
	}
	if n.tun != nil {
		_ = n.tun.Close()
	}
}

func isNilCloser(c io.Closer) bool {
	switch v := c.(type) {
	case net.Conn:
		return v == nil
	case net.Listener:
		return v == nil
	}
	return false
}

// start runs cmd inside a namespace (inNS: InClient or InServer), killed
// with the run (and by the kernel if this process dies first).
func (n *tunNet) start(inNS func(func() error) error, cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := inNS(cmd.Start); err != nil {
		return err
	}
	n.mu.Lock()
	n.procs = append(n.procs, cmd)
	closed := n.closed
	n.mu.Unlock()
	if closed { // started as the run was torn down
		_ = cmd.Process.Kill()
	}
	return nil
}

// setupIperf3 starts the flow's iperf3 server (one test, JSON) in the
// server namespace and waits until it listens.
func (n *tunNet) setupIperf3(f *flowRun) error {
	sport, cport := uint16(iperf3Port+f.idx), uint16(fixedClientPort+f.idx)
	n.register(f, flowKey{protoTCP, cport, sport})
	cmd := exec.Command(iperf3Binary, "-s", "-1", "-J", "-B", n.tun.ServerAddr().String(), "-p", strconv.Itoa(int(sport)))
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := n.start(n.tun.InServer, cmd); err != nil {
		return fmt.Errorf("iperf3 server: %w", err)
	}
	n.d.goFunc(func() { _ = cmd.Wait() })
	return n.waitListening(cmd, sport, "iperf3 server")
}

// iperf3Seconds is the -t of an iperf3 flow: its active time in whole
// seconds (iperf3 reads an integer), at least 1.
func iperf3Seconds(f *flowRun) int { return max(int((f.end - f.start).Seconds()), 1) }

// runIperf3 runs the flow's iperf3 client in the client namespace from
// the flow's start and reads its JSON report.
func (n *tunNet) runIperf3(f *flowRun) {
	d := n.d
	if !d.sleepUntil(f.start) {
		return
	}
	tf := f.tunf
	args := []string{"-c", n.tun.ServerAddr().String(), "-p", strconv.Itoa(int(tf.key.sport)),
		"--cport", strconv.Itoa(int(tf.key.cport)), "-J", "-t", strconv.Itoa(iperf3Seconds(f)), "-C", f.spec.CC}
	if f.spec.Reverse {
		args = append(args, "-R")
	}
	if f.dscp != 0 {
		args = append(args, "--dscp", strconv.Itoa(int(f.dscp)))
	}
	cmd := exec.Command(iperf3Binary, args...)
	cmd.Stdout = &tf.stdout
	cmd.Stderr = &tf.stdout
	if err := n.start(n.tun.InClient, cmd); err != nil {
		f.mu.Lock()
		tf.ierr = err
		f.mu.Unlock()
		return
	}
	err := cmd.Wait()
	rep, perr := parseIperf3(tf.stdout.Bytes())
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case perr != nil:
		tf.ierr = fmt.Errorf("iperf3 %s: %v (%v)", strings.Join(args, " "), perr, err)
	case rep.Error != "":
		tf.ierr = fmt.Errorf("iperf3 %s: %s", strings.Join(args, " "), rep.Error)
	default:
		tf.iperf = rep
	}
}

// iperf3Report is the part of iperf3 -J's report the driver reads.
type iperf3Report struct {
	Error string `json:"error"`
	End   struct {
		SumSent struct {
			Bytes         int64   `json:"bytes"`
			BitsPerSecond float64 `json:"bits_per_second"`
			Retransmits   int64   `json:"retransmits"`
			Seconds       float64 `json:"seconds"`
		} `json:"sum_sent"`
		SumReceived struct {
			Bytes         int64   `json:"bytes"`
			BitsPerSecond float64 `json:"bits_per_second"`
			Seconds       float64 `json:"seconds"`
		} `json:"sum_received"`
	} `json:"end"`
}

func parseIperf3(b []byte) (*iperf3Report, error) {
	// iperf3 may print a line before its JSON on errors; start at the
	// first brace.
	if i := bytes.IndexByte(b, '{'); i > 0 {
		b = b[i:]
	}
	var r iperf3Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("reading its JSON: %w", err)
	}
	return &r, nil
}

// setupTelemetry connects a telemetry flow: over TCP a listener in the
// server namespace accepts the client's connection (bound to a fixed port
// so the router knows the flow from its SYN on); over UDP two sockets.
func (n *tunNet) setupTelemetry(f *flowRun) error {
	tf := f.tunf
	caddr := netip.AddrPortFrom(n.tun.ClientAddr(), uint16(fixedClientPort+f.idx))
	if f.spec.Sleep {
		return n.setupSleeping(f)
	}
	switch f.spec.Protocol {
	case "fresh":
		return n.setupFreshTelemetry(f, caddr)
	case "mqtt":
		return n.setupMQTT(f, caddr)
	case "coap":
		return n.setupCoAP(f, caddr)
	case "quic":
		return n.setupQUIC(f, caddr)
	}
	if f.spec.Protocol == "udp" {
		var srv, cli *net.UDPConn
		if err := n.tun.InServer(func() (err error) {
			srv, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(n.tun.ServerAddr(), 0)))
			return err
		}); err != nil {
			return err
		}
		n.register(f, flowKey{protoUDP, caddr.Port(), port(srv.LocalAddr())})
		if err := n.tun.InClient(func() (err error) {
			cli, err = net.DialUDP("udp4", net.UDPAddrFromAddrPort(caddr), srv.LocalAddr().(*net.UDPAddr))
			return err
		}); err != nil {
			srv.Close()
			return err
		}
		tf.send, tf.recv = cli, srv
		if f.spec.Reverse {
			tf.send, tf.recv = srv, cli
			tf.udpPeer = cli.LocalAddr().(*net.UDPAddr)
		}
		for _, c := range []*net.UDPConn{srv, cli} {
			setBuffers(c)
		}
		f.onStop = func() {
			_ = cli.Close()
			_ = srv.Close()
		}
		return setTOS(tf.send.(*net.UDPConn), f.dscp)
	}
	if err := n.tun.InServer(func() (err error) {
		tf.ln, err = net.Listen("tcp4", netip.AddrPortFrom(n.tun.ServerAddr(), 0).String())
		return err
	}); err != nil {
		return err
	}
	n.register(f, flowKey{protoTCP, caddr.Port(), port(tf.ln.Addr())})
	ctx, cancel := context.WithTimeout(n.d.ctx, setupTimeout)
	defer cancel()
	var cli net.Conn
	if err := n.tun.InClient(func() (err error) {
		dl := net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(caddr)}
		cli, err = dl.DialContext(ctx, "tcp4", tf.ln.Addr().String())
		return err
	}); err != nil {
		return err
	}
	srv, err := tf.ln.Accept()
	if err != nil {
		cli.Close()
		return err
	}
	tf.send, tf.recv = cli, srv
	if f.spec.Reverse {
		tf.send, tf.recv = srv, cli
	}
	_ = tf.send.(*net.TCPConn).SetNoDelay(!f.spec.Nagle)
	f.onStop = func() {
		_ = cli.Close()
		_ = srv.Close()
	}
	return nil
}

// setupFreshTelemetry connects a telemetry flow whose messages are status
// updates on a fresh connection of its own (client port fixed, as for TCP,
// so the router knows the flow): each message is handed to SendUpdate,
// whose regulator decides when it leaves.
func (n *tunNet) setupFreshTelemetry(f *flowRun, caddr netip.AddrPort) error {
	tf := f.tunf
	dscp, err := dscp.FromCode(f.dscp)
	if err != nil {
		return err
	}
	// Plaintext unless the flow is secure: the router reads each update's
	// write stamp from its payload to measure write-to-router latency,
	// which encryption hides. The other differences are the handshake and
	// the 16-byte tag per packet.
	cfg := transport.Config{Insecure: true, StreamDSCP: dscp, UpdateDSCP: dscp, MaxUpdateRate: 1000}
	lcfg := cfg
	if f.spec.Secure {
		client, server, _, _, err := n.credentials()
		if err != nil {
			return err
		}
		cfg.Insecure, cfg.TLS = false, client
		lcfg.Insecure, lcfg.TLS = false, server
	}
	ln, err := n.listenFresh(lcfg)
	if err != nil {
		return err
	}
	// The client's socket is bound to the flow's fixed port first, so the
	// router counts the handshake too.
	var uc *net.UDPConn
	if err := n.tun.InClient(func() (err error) {
		uc, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(caddr))
		return err
	}); err != nil {
		ln.Close()
		return err
	}
	tr := &transport.Transport{Conn: uc}
	closeAll := func() {
		_ = tr.Close()
		_ = uc.Close()
		_ = ln.Close()
	}
	n.register(f, flowKey{protoUDP, caddr.Port(), port(ln.Addr())})
	ctx, cancel := context.WithTimeout(n.d.ctx, setupTimeout)
	defer cancel()
	cli, err := tr.Dial(ctx, ln.Addr(), cfg)
	if err != nil {
		closeAll()
		return err
	}
	srv, err := ln.Accept(ctx)
	if err != nil {
		cli.Close()
		closeAll()
		return err
	}
	tf.fsend, tf.frecv = cli, srv
	if f.spec.Reverse {
		tf.fsend, tf.frecv = srv, cli
	}
	f.onStop = func() {
		_ = cli.Close()
		closeAll()
	}
	return nil
}

// listenFresh opens a fresh Listener in the server namespace.
func (n *tunNet) listenFresh(cfg transport.Config) (ln *transport.Listener, err error) {
	err = n.tun.InServer(func() error {
		ln, err = transport.Listen(netip.AddrPortFrom(n.tun.ServerAddr(), 0).String(), cfg)
		return err
	})
	return ln, err
}

// telemetryWriter writes one message of size bytes every interval from
// the flow's start to its end, its first 8 bytes the wall-clock time of
// the write (ns since the Unix epoch: the router reads the same clock).
func (n *tunNet) telemetryWriter(f *flowRun) {
	d := n.d
	if !d.sleepUntil(f.start) {
		return
	}
	tf := f.tunf
	msg := make([]byte, f.spec.Size)
	next := f.start
	rng := rand.New(rand.NewPCG(uint64(d.s.Seed), uint64(f.idx)))
	for k := 0; next < f.end; k++ {
		if !d.sleepUntil(next) {
			return
		}
		now := time.Now()
		binary.BigEndian.PutUint64(msg, uint64(now.UnixNano()))
		var err error
		switch {
		case tf.sleep != nil:
			// A wake that fails (no answer within peerTimeout, a refused
			// handshake) loses its reading; the device sleeps on.
			_ = tf.sleep.wake(n.sleepPort(f, k), now, msg)
			if d.ctx.Err() != nil {
				return
			}
		case tf.publish != nil:
			err = tf.publish(msg)
		case tf.fsend != nil:
			err = tf.fsend.SendUpdate(msg)
		case tf.udpPeer != nil:
			_, err = tf.send.(*net.UDPConn).WriteToUDP(msg, tf.udpPeer)
		default:
			_, err = tf.send.Write(msg)
		}
		if errors.Is(err, transport.ErrClosed) || errors.Is(err, transport.ErrPeerClosed) {
			return
		}
		if err != nil && errors.Is(err, net.ErrClosed) {
			return
		}
		f.mu.Lock()
		f.m.msgSent++
		f.mu.Unlock()
		gap := f.spec.Interval.D()
		if m := f.spec.IntervalMax.D(); m > gap {
			gap += time.Duration(rng.Int64N(int64(m-gap) + 1)) // drawn from [Interval, IntervalMax]
		}
		next += gap
	}
	if f.spec.Protocol == "tcp" {
		_ = tf.send.(*net.TCPConn).CloseWrite()
	}
}

// telemetryReader reads the messages and measures each one's latency
// from its write to its read (end to end).
func (n *tunNet) telemetryReader(f *flowRun) {
	d := n.d
	tf := f.tunf
	buf := make([]byte, max(f.spec.Size, maxDatagram))
	for {
		var err error
		var got int
		var from *net.UDPAddr // udp: who sent the message
		if tf.frecv != nil {
			var u transport.Update
			if u, err = tf.frecv.ReadUpdate(d.ctx); err != nil {
				return
			}
			got = copy(buf, u.Payload)
		} else if f.spec.Protocol == "tcp" {
			got, err = io.ReadFull(tf.recv, buf[:f.spec.Size])
		} else {
			got, from, err = tf.recv.(*net.UDPConn).ReadFromUDP(buf)
		}
		if err != nil {
			if errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || f.spec.Protocol == "tcp" {
				return
			}
			continue
		}
		if got < 8 {
			continue
		}
		if f.spec.Respond {
			n.respond(f, buf[:8], from)
		}
		n.delivered(f, buf[:got])
	}
}

// delivered records a telemetry message read by the receiving
// application: its latency from its write (the first 8 bytes, the writer's
// wall clock; both ends share the machine's clock) and the age of
// information at the monitor.
func (n *tunNet) delivered(f *flowRun, msg []byte) {
	d := n.d
	if len(msg) < 8 || !d.started.Load() {
		return
	}
	now := time.Now()
	written := time.Unix(0, stampOf(msg))
	t := now.Sub(d.origin)
	f.mu.Lock()
	defer f.mu.Unlock()
	if sl := f.tunf.sleep; sl != nil {
		sl.stored(stampOf(msg), now)
	}
	f.m.msgRecv++
	f.m.e2eMs = append(f.m.e2eMs, float64(now.Sub(written))/1e6)
	if t >= f.start && t <= f.end {
		f.m.bytes += int64(len(msg))
		f.m.ivBytes += int64(len(msg))
		f.m.age.Deliver(monoOf(written.Sub(d.origin)), monoOf(t))
	}
}

// respond answers a request/response telemetry message with its first 8
// bytes (its write time), to the sender: over UDP to the address it came
// from unless the socket is connected.
func (n *tunNet) respond(f *flowRun, stamp []byte, from *net.UDPAddr) {
	tf := f.tunf
	if u, ok := tf.recv.(*net.UDPConn); ok && u.RemoteAddr() == nil && from != nil {
		_, _ = u.WriteToUDP(stamp, from)
		return
	}
	_, _ = tf.recv.Write(stamp)
}

// responseReader reads the responses of a request/response telemetry flow
// at its sender and records each message's round trip: from its write to
// the read of its response.
func (n *tunNet) responseReader(f *flowRun) {
	d := n.d
	tf := f.tunf
	buf := make([]byte, maxDatagram)
	for {
		var got int
		var err error
		if f.spec.Protocol == "tcp" {
			got, err = io.ReadFull(tf.send, buf[:8])
		} else {
			got, err = tf.send.Read(buf)
		}
		if err != nil {
			if errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || f.spec.Protocol == "tcp" {
				return
			}
			continue
		}
		if got < 8 || !d.started.Load() {
			continue
		}
		rtt := time.Since(time.Unix(0, int64(binary.BigEndian.Uint64(buf))))
		f.mu.Lock()
		f.m.rttMs = append(f.m.rttMs, float64(rtt)/1e6)
		f.mu.Unlock()
	}
}

// observe sees every packet after the bottleneck, on the router's
// goroutine. It finds the packet's flow by protocol and ports and, for
// data packets (fresh data and updates, cbr datagrams, TCP segments with
// payload, telemetry datagrams) in the flow's data direction, records
// the router's delay: Out − In, and the queueing delay, Queue.
func (n *tunNet) observe(p emu.TUNPacket) {
	d := n.d
	b := p.Data
	if len(b) < 20 || b[0]>>4 != 4 {
		return
	}
	ihl := int(b[0]&0x0f) * 4
	if tot := int(binary.BigEndian.Uint16(b[2:4])); tot >= ihl && tot < len(b) {
		b = b[:tot]
	}
	if len(b) < ihl+8 || binary.BigEndian.Uint16(b[6:8])&0x1fff != 0 { // fragments past the first carry no ports
		return
	}
	proto, l4 := b[9], b[ihl:]
	src, dst := binary.BigEndian.Uint16(l4[0:2]), binary.BigEndian.Uint16(l4[2:4])
	k := flowKey{proto: proto, cport: src, sport: dst}
	if !p.Forward {
		k.cport, k.sport = dst, src
	}
	n.mu.Lock()
	f := n.byKey[k]
	n.mu.Unlock()
	if f == nil {
		return
	}
	dir := 0
	if p.Forward == f.spec.Reverse {
		dir = 1
	}
	f.mu.Lock()
	f.m.linkPkts[dir]++
	f.m.linkBytes[dir] += int64(len(b))
	if sl := f.tunf.sleep; sl != nil {
		// The device sent a data packet when it reached the router, and
		// received a return packet when the router let it go.
		t := p.In
		if dir == 1 {
			t = p.Out
		}
		sl.sawPacket(k, t)
	}
	f.mu.Unlock()
	if dir == 1 { // the flow's ACKs
		return
	}
	var payload []byte
	var seq uint32
	switch proto {
	case protoUDP:
		payload = l4[8:]
	case protoTCP:
		if len(l4) < 20 {
			return
		}
		off := int(l4[12]>>4) * 4
		if len(l4) < off {
			return
		}
		payload, seq = l4[off:], binary.BigEndian.Uint32(l4[4:8])
		if l4[13]&0x02 != 0 { // SYN: the sender's initial sequence number
			f.mu.Lock()
			f.tunf.isn, f.tunf.haveISN = seq, true
			f.mu.Unlock()
			return
		}
	default:
		return
	}
	if len(payload) == 0 || !d.started.Load() {
		return
	}
	switch f.spec.Kind {
	case scenario.KindCBR:
		if h, ok := parseCBR(payload); !ok || h.kind != cbrData {
			return
		}
	case scenario.KindIperf3:
		f.mu.Lock()
		f.m.ivBytes += int64(len(payload))
		f.mu.Unlock()
	case scenario.KindTelemetry:
		n.telemetryStamps(f, p.In, payload, seq)
	default:
		h, _, err := wire.ParseHeader(payload)
		if err != nil || (h.Type != wire.TypeData && h.Type != wire.TypeUpdate) {
			return
		}
	}
	d.exactSample(f, p.Out.Sub(p.In), p.Queue)
}

// telemetryStamps reads the write times of the telemetry messages that
// start in a data packet which reached the router at in, and records
// each one's latency from its write to the router. Over TCP a message
// starts at stream offset k·size; a segment's offset is its sequence
// number less the ISN less 1; each message counts once (retransmissions
// and messages split before their 8th byte are skipped).
func (n *tunNet) telemetryStamps(f *flowRun, in time.Time, payload []byte, seq uint32) {
	size := int64(f.spec.Size)
	f.mu.Lock()
	defer f.mu.Unlock()
	tf := f.tunf
	stamp := func(b []byte) {
		w := time.Unix(0, int64(binary.BigEndian.Uint64(b)))
		f.m.w2rMs = append(f.m.w2rMs, float64(in.Sub(w))/1e6)
	}
	if f.spec.Secure {
		return // encrypted: end to end only
	}
	switch f.spec.Protocol {
	case "mqtt", "coap", "quic":
		return // the stamp is inside the protocol's framing: end to end only
	case "udp":
		if len(payload) >= 8 {
			stamp(payload)
		}
		return
	case "fresh": // an Update frame's payload, after the fresh header
		h, body, err := wire.ParseHeader(payload)
		var u wire.Update
		if err == nil && h.Type == wire.TypeUpdate && wire.ParseUpdate(body, &u) == nil && len(u.Payload) >= 8 {
			stamp(u.Payload)
		}
		return
	}
	if !tf.haveISN {
		return
	}
	off := int64(seq - tf.isn - 1)
	for k := max((off+size-1)/size, tf.nextMsg); k*size+8 <= off+int64(len(payload)); k++ {
		stamp(payload[k*size-off:])
		tf.nextMsg = k + 1
	}
}
