package emudriver

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"github.com/pion/dtls/v3"
	coapdtls "github.com/plgd-dev/go-coap/v3/dtls"
	"github.com/plgd-dev/go-coap/v3/message"
	"github.com/plgd-dev/go-coap/v3/message/codes"
	coapmux "github.com/plgd-dev/go-coap/v3/mux"
	coapnet "github.com/plgd-dev/go-coap/v3/net"
	"github.com/plgd-dev/go-coap/v3/options"
	"github.com/plgd-dev/go-coap/v3/udp"
	coapclient "github.com/plgd-dev/go-coap/v3/udp/client"
	"github.com/quic-go/quic-go"

	"github.com/fresh-udp/fresh/bench/emu"
	"github.com/fresh-udp/fresh/transport/devcert"
	"github.com/fresh-udp/fresh/transport/quichook"
)

// The telemetry peers a developer would pick instead of fresh, as real
// software: MQTT through a mosquitto broker, CoAP through go-coap. The
// device side (publisher, CoAP client) runs in the client namespace, the
// monitor side (broker and subscriber, CoAP server) in the server
// namespace, so only the device's traffic crosses the router, as it would
// cross the radio link.
const (
	mosquittoBinary = "mosquitto"
	mqttPort        = 1883 // flow i's broker listens on mqttPort+i
	mqttTLSPort     = 8883 // or on mqttTLSPort+i, secure
	// peerTimeout bounds a reliable message's wait for its
	// acknowledgement and a client's disconnect.
	peerTimeout = 30 * time.Second
	// coapPath is the resource the device POSTs its readings to.
	coapPath = "/r"
	// coapNoResponseAll is RFC 7967 §2's No-Response value that
	// suppresses every response class (2.xx, 4.xx and 5.xx: 2|8|16).
	coapNoResponseAll = 26
	// quicALPN is the quic peer's application protocol.
	quicALPN = "fresh-bench-readings"
	// coapTick is how often go-coap's periodic work runs (coapPeriodic).
	coapTick = 100 * time.Millisecond
	// coapPSKIdentity names the device's pre-shared key (DTLS).
	coapPSKIdentity = "fresh-device"
)

// ErrNoMosquitto says the mqtt protocol needs the broker installed.
var ErrNoMosquitto = errors.New("mqtt telemetry needs mosquitto (Debian: apt-get install mosquitto)")

// mqttBroker is a flow's broker and the monitor's subscriber beside it.
type mqttBroker struct {
	uri   string
	port  uint16
	tls   *tls.Config // the clients' (nil: plain TCP), with a session cache
	qos   byte
	topic string
}

// startBroker starts the flow's mosquitto in the server namespace and
// subscribes to the flow's topic beside it; each message the subscriber
// gets is a reading delivered. QoS 1 when the flow is reliable, else 0.
func (n *tunNet) startBroker(f *flowRun) (*mqttBroker, error) {
	if _, err := exec.LookPath(mosquittoBinary); err != nil {
		return nil, ErrNoMosquitto
	}
	b := &mqttBroker{port: uint16(mqttPort + f.idx), topic: "fresh/" + f.spec.Name}
	if f.spec.Secure {
		b.port = uint16(mqttTLSPort + f.idx)
	}
	if f.spec.Reliable {
		b.qos = 1
	}
	b.uri = "tcp://" + netip.AddrPortFrom(n.tun.ServerAddr(), b.port).String()
	dir, err := os.MkdirTemp("", "fresh-mqtt-")
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*mqttBroker, error) {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	conf := filepath.Join(dir, "mosquitto.conf")
	// set_tcp_nodelay: the broker forwards each PUBLISH at once, as a
	// broker tuned for telemetry would (the subscriber is local, so only
	// the PUBACKs to the device cross the router).
	// user root: the TUN router runs as root, and a broker that drops to
	// its own user could not read the run's certificate files (0600).
	// persistence false: sessions stay in memory for the run (a sleeping
	// device's persistent session included), none on disk.
	text := fmt.Sprintf("listener %d %s\nallow_anonymous true\npersistence false\nset_tcp_nodelay true\nuser root\nlog_dest stderr\nlog_type error\n",
		b.port, n.tun.ServerAddr())
	if f.spec.Secure {
		var certPEM, keyPEM []byte
		b.tls, _, certPEM, keyPEM, err = n.credentials()
		if err == nil {
			err = errors.Join(os.WriteFile(filepath.Join(dir, "cert.pem"), certPEM, 0o600),
				os.WriteFile(filepath.Join(dir, "key.pem"), keyPEM, 0o600))
		}
		if err != nil {
			return fail(err)
		}
		// A device that reconnects resumes its TLS session (a ticket
		// instead of the certificate exchange).
		b.tls.ClientSessionCache = tls.NewLRUClientSessionCache(1)
		text += fmt.Sprintf("certfile %s\nkeyfile %s\ntls_version tlsv1.3\n", filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
	}
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		return fail(err)
	}
	logPath := filepath.Join(dir, "mosquitto.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return fail(err)
	}
	defer logFile.Close()
	cmd := exec.Command(mosquittoBinary, "-c", conf)
	cmd.Stderr = logFile
	if err := n.start(n.tun.InServer, cmd); err != nil {
		return fail(fmt.Errorf("mosquitto: %w", err))
	}
	exited := make(chan struct{})
	n.d.goFunc(func() {
		_ = cmd.Wait()
		close(exited)
	})
	if err := n.waitListening(cmd, b.port, "mosquitto"); err != nil {
		if log, _ := os.ReadFile(logPath); len(log) > 0 {
			err = fmt.Errorf("%w; its log: %s", err, bytes.TrimSpace(log))
		}
		return nil, err
	}
	n.d.goFunc(func() {
		<-exited
		_ = os.RemoveAll(dir)
	})
	sub, err := n.mqttConnect(f.spec.Name+"-monitor", b, n.tun.InServer, nil, true)
	if err != nil {
		return nil, fmt.Errorf("mqtt subscriber: %w", err)
	}
	tok := sub.Subscribe(b.topic, b.qos, func(_ mqtt.Client, m mqtt.Message) { n.delivered(f, m.Payload()) })
	if err := waitToken(tok); err != nil {
		sub.Disconnect(0)
		return nil, fmt.Errorf("mqtt subscribe: %w", err)
	}
	f.tunf.stops = append(f.tunf.stops, func() { sub.Disconnect(100) })
	return b, nil
}

// setupMQTT starts the flow's broker and connects the device's publisher
// through the router from the fixed client port caddr: a clean session,
// paho's default 30-s keep-alive.
func (n *tunNet) setupMQTT(f *flowRun, caddr netip.AddrPort) error {
	b, err := n.startBroker(f)
	if err != nil {
		return err
	}
	n.register(f, flowKey{protoTCP, caddr.Port(), b.port})
	pub, err := n.mqttConnect(f.spec.Name, b, n.tun.InClient, net.TCPAddrFromAddrPort(caddr), true)
	if err != nil {
		return fmt.Errorf("mqtt publisher: %w", err)
	}
	f.tunf.publish = func(msg []byte) error {
		// Asynchronous, as a device's publisher is: a QoS 1 message waits
		// for its PUBACK in paho, not in the reading loop.
		tok := pub.Publish(b.topic, b.qos, false, bytes.Clone(msg))
		if b.qos == 0 {
			return nil
		}
		n.d.goFunc(func() { _ = waitToken(tok) })
		return nil
	}
	f.onStop = func() { pub.Disconnect(100) }
	return nil
}

// mqttConnect connects a paho client to broker b, its TCP connection
// opened by in (the namespace it belongs to) from laddr (nil: any), over
// TLS if the broker is secure; clean asks for a clean session (else the
// broker keeps the client's session between connections). No reconnect:
// a dropped connection ends the flow's deliveries, which the result shows
// as lost messages.
func (n *tunNet) mqttConnect(id string, b *mqttBroker, in func(func() error) error, laddr *net.TCPAddr, clean bool) (mqtt.Client, error) {
	o := mqtt.NewClientOptions().AddBroker(b.uri).SetClientID(id).
		SetCleanSession(clean).SetAutoReconnect(false).SetConnectRetry(false).
		SetConnectTimeout(setupTimeout).SetWriteTimeout(peerTimeout).
		SetCustomOpenConnectionFn(func(u *url.URL, _ mqtt.ClientOptions) (c net.Conn, err error) {
			err = in(func() error {
				dl := net.Dialer{LocalAddr: laddr, Timeout: setupTimeout}
				c, err = dl.DialContext(n.d.ctx, "tcp4", u.Host)
				return err
			})
			if err != nil || b.tls == nil {
				return c, err
			}
			// paho leaves TLS to a custom connection: the handshake here.
			tlsConn := tls.Client(c, b.tls)
			ctx, cancel := context.WithTimeout(n.d.ctx, setupTimeout)
			defer cancel()
			if err := tlsConn.HandshakeContext(ctx); err != nil {
				_ = c.Close()
				return nil, err
			}
			return tlsConn, nil
		})
	c := mqtt.NewClient(o)
	if err := waitToken(c.Connect()); err != nil {
		return nil, err
	}
	return c, nil
}

// credentials are the run's TLS credentials for the server side's
// address, made once (a throwaway CA, transport/devcert): the client's
// config (TLS 1.3, trusting only that CA), the server's, and the server's
// certificate and key in PEM, for software that reads files.
func (n *tunNet) credentials() (client, server *tls.Config, certPEM, keyPEM []byte, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cert == nil {
		ca, err := devcert.NewCA("fresh-bench")
		if err != nil {
			return nil, nil, nil, nil, err
		}
		cert, err := ca.Issue("monitor", n.tun.ServerAddr().String())
		if err != nil {
			return nil, nil, nil, nil, err
		}
		n.ca, n.cert = ca, &cert
	}
	certPEM, keyPEM, err = devcert.PEM(*n.cert)
	client = &tls.Config{RootCAs: n.ca.Pool(), ServerName: n.tun.ServerAddr().String(), MinVersion: tls.VersionTLS13}
	server = &tls.Config{Certificates: []tls.Certificate{*n.cert}, MinVersion: tls.VersionTLS13}
	return client, server, certPEM, keyPEM, err
}

// waitToken waits up to peerTimeout for a paho operation.
func waitToken(t mqtt.Token) error {
	if !t.WaitTimeout(peerTimeout) {
		return errors.New("timed out")
	}
	return t.Error()
}

// coapServer is a flow's CoAP server, in the server namespace.
type coapServer struct {
	addr *net.UDPAddr
	dtls *dtls.Config // the clients' (nil: plain UDP)
}

// startCoAPServer starts the flow's CoAP server (go-coap): POSTs to
// coapPath are readings delivered, a confirmable one answered with a
// piggybacked 2.04 Changed. Over DTLS when the flow is secure.
func (n *tunNet) startCoAPServer(f *flowRun) (*coapServer, error) {
	router := coapmux.NewRouter()
	if err := router.Handle(coapPath, coapmux.HandlerFunc(func(w coapmux.ResponseWriter, r *coapmux.Message) {
		body, err := r.ReadBody()
		if err != nil {
			return
		}
		n.delivered(f, body)
		if r.Type() == message.Confirmable {
			_ = w.SetResponse(codes.Changed, message.TextPlain, nil)
		}
	})); err != nil {
		return nil, err
	}
	listen := netip.AddrPortFrom(n.tun.ServerAddr(), 0).String()
	cs := &coapServer{}
	if f.spec.Secure {
		cfg, err := coapDTLSConfig()
		if err != nil {
			return nil, err
		}
		var l *coapnet.DTLSListener
		if err := n.tun.InServer(func() (err error) {
			l, err = coapnet.NewDTLSListener("udp4", listen, cfg)
			return err
		}); err != nil {
			return nil, fmt.Errorf("coap server: %w", err)
		}
		cs.addr, cs.dtls = l.Addr().(*net.UDPAddr), cfg
		srv := coapdtls.NewServer(options.WithMux(router), options.WithPeriodicRunner(n.coapPeriodic), options.WithErrors(ignoreError))
		n.d.goFunc(func() { _ = srv.Serve(l) })
		f.tunf.stops = append(f.tunf.stops, srv.Stop)
		return cs, nil
	}
	var l *coapnet.UDPConn
	if err := n.tun.InServer(func() (err error) {
		l, err = coapnet.NewListenUDP("udp4", listen)
		return err
	}); err != nil {
		return nil, fmt.Errorf("coap server: %w", err)
	}
	cs.addr = l.LocalAddr().(*net.UDPAddr)
	srv := udp.NewServer(options.WithMux(router), options.WithPeriodicRunner(n.coapPeriodic), options.WithErrors(ignoreError))
	n.d.goFunc(func() { _ = srv.Serve(l) })
	f.tunf.stops = append(f.tunf.stops, srv.Stop)
	return cs, nil
}

// coapClient connects a CoAP client in the client namespace from laddr
// to the server (a DTLS handshake first if it is secure); close closes
// the client and its socket.
func (n *tunNet) coapClient(cs *coapServer, laddr netip.AddrPort) (cc *coapclient.Conn, close func(), err error) {
	if cs.dtls == nil {
		var uc *net.UDPConn
		if err := n.tun.InClient(func() (err error) {
			uc, err = net.DialUDP("udp4", net.UDPAddrFromAddrPort(laddr), cs.addr)
			return err
		}); err != nil {
			return nil, nil, fmt.Errorf("coap client: %w", err)
		}
		cc = udp.Client(uc, options.WithPeriodicRunner(n.coapPeriodic), options.WithErrors(ignoreError))
		return cc, func() { _ = cc.Close(); _ = uc.Close() }, nil
	}
	var pc *net.UDPConn
	if err := n.tun.InClient(func() (err error) {
		pc, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(laddr))
		return err
	}); err != nil {
		return nil, nil, fmt.Errorf("coap client: %w", err)
	}
	dc, err := dtls.Client(pc, cs.addr, cs.dtls)
	if err == nil {
		ctx, cancel := context.WithTimeout(n.d.ctx, setupTimeout)
		err = dc.HandshakeContext(ctx)
		cancel()
	}
	if err != nil {
		_ = pc.Close()
		return nil, nil, fmt.Errorf("coap client: DTLS: %w", err)
	}
	cc = coapdtls.Client(dc, options.WithPeriodicRunner(n.coapPeriodic), options.WithErrors(ignoreError))
	return cc, func() { _ = cc.Close(); _ = dc.Close(); _ = pc.Close() }, nil
}

// coapSend sends one reading: a non-confirmable POST with No-Response, or
// a confirmable one, whose acknowledgement it waits for.
func (n *tunNet) coapSend(f *flowRun, cc *coapclient.Conn, msg []byte) error {
	ctx := n.d.ctx
	if f.spec.Reliable {
		rctx, cancel := context.WithTimeout(ctx, peerTimeout)
		defer cancel()
		resp, err := cc.Post(rctx, coapPath, message.AppOctets, bytes.NewReader(msg))
		if err == nil {
			cc.ReleaseMessage(resp)
		}
		return err
	}
	req, err := cc.NewPostRequest(ctx, coapPath, message.AppOctets, bytes.NewReader(msg),
		message.Option{ID: message.NoResponse, Value: []byte{coapNoResponseAll}})
	if err != nil {
		return err
	}
	defer cc.ReleaseMessage(req)
	req.SetType(message.NonConfirmable)
	return cc.WriteMessage(req)
}

// setupCoAP starts the flow's CoAP server and connects the device's
// client to it from the fixed client port caddr. Reliable flows POST
// confirmable requests; the others POST non-confirmable ones with
// No-Response (RFC 7967), the way a device reports readings it does not
// need acknowledged.
func (n *tunNet) setupCoAP(f *flowRun, caddr netip.AddrPort) error {
	cs, err := n.startCoAPServer(f)
	if err != nil {
		return err
	}
	n.register(f, flowKey{protoUDP, caddr.Port(), uint16(cs.addr.Port)})
	cc, closeClient, err := n.coapClient(cs, caddr)
	if err != nil {
		return err
	}
	f.tunf.publish = func(msg []byte) error {
		if !f.spec.Reliable {
			return n.coapSend(f, cc, msg)
		}
		// Each confirmable POST waits for its ACK (and retransmits) in a
		// goroutine of its own: the reading loop goes on.
		body := bytes.Clone(msg)
		n.d.goFunc(func() { _ = n.coapSend(f, cc, body) })
		return nil
	}
	f.onStop = closeClient
	return nil
}

// coapPeriodic runs go-coap's periodic work (the retransmission of
// confirmable messages among it) every coapTick until the run ends.
// go-coap's default runner ticks every 4 s, which would retransmit a lost
// confirmable reading after 4–8 s instead of RFC 7252 §4.2's ACK_TIMEOUT
// of 2–3 s, and its goroutine outlives the connection by up to 4 s.
func (n *tunNet) coapPeriodic(f func(now time.Time) bool) {
	n.d.goFunc(func() {
		t := time.NewTicker(coapTick)
		defer t.Stop()
		for f(time.Now()) {
			select {
			case <-n.d.ctx.Done():
				return
			case <-t.C:
			}
		}
	})
}

// ignoreError drops go-coap's asynchronous errors (its default prints
// them to stdout); what they cost shows as lost or late readings.
func ignoreError(error) {}

// coapDTLSConfig is DTLS 1.2 with a fresh random pre-shared key and
// TLS_PSK_WITH_AES_128_CCM_8, the suite RFC 7252 §9.1.3.1 makes mandatory
// for CoAP's PreSharedKey mode (one config for both ends).
func coapDTLSConfig() (*dtls.Config, error) {
	key := make([]byte, 16)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	return &dtls.Config{
		PSK:             func([]byte) ([]byte, error) { return key, nil },
		PSKIdentityHint: []byte(coapPSKIdentity),
		CipherSuites:    []dtls.CipherSuiteID{dtls.TLS_PSK_WITH_AES_128_CCM_8},
	}, nil
}

// setupQUIC connects a quic-go client in the client namespace, from the
// fixed client port caddr, to a quic-go listener in the server namespace,
// DATAGRAMs enabled (RFC 9221): each reading is one DATAGRAM frame,
// unreliable, in a packet quic-go's congestion controller paces and
// acknowledges. With the flow's CC, both ends run over transport/quichook
// with that controller (fresh's controllers under quic-go).
func (n *tunNet) setupQUIC(f *flowRun, caddr netip.AddrPort) error {
	client, server, _, _, err := n.credentials()
	if err != nil {
		return err
	}
	client.NextProtos, server.NextProtos = []string{quicALPN}, []string{quicALPN}
	qcfg := &quic.Config{EnableDatagrams: true}
	var closers []func() error
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			_ = closers[i]()
		}
	}
	// socket opens a UDP socket at a in namespace in, hooked if the flow
	// names a controller, and a quic-go Transport on it.
	socket := func(in func(func() error) error, a netip.AddrPort) (*quic.Transport, *net.UDPConn, error) {
		var uc *net.UDPConn
		if err := in(func() (err error) {
			uc, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(a))
			return err
		}); err != nil {
			return nil, nil, err
		}
		closers = append(closers, uc.Close)
		var pc net.PacketConn = uc
		if f.spec.CC != "" {
			h, err := quichook.New(uc, quichook.Config{CC: f.spec.CC})
			if err != nil {
				return nil, nil, err
			}
			closers = append(closers, h.Close)
			pc = h
		}
		tr := &quic.Transport{Conn: pc}
		closers = append(closers, tr.Close)
		return tr, uc, nil
	}
	str, su, err := socket(n.tun.InServer, netip.AddrPortFrom(n.tun.ServerAddr(), 0))
	if err != nil {
		closeAll()
		return fmt.Errorf("quic server: %w", err)
	}
	ln, err := str.Listen(server, qcfg)
	if err != nil {
		closeAll()
		return fmt.Errorf("quic server: %w", err)
	}
	closers = append(closers, ln.Close)
	ctr, _, err := socket(n.tun.InClient, caddr)
	if err != nil {
		closeAll()
		return fmt.Errorf("quic client: %w", err)
	}
	n.register(f, flowKey{protoUDP, caddr.Port(), port(su.LocalAddr())})
	ctx, cancel := context.WithTimeout(n.d.ctx, setupTimeout)
	defer cancel()
	cli, err := ctr.Dial(ctx, su.LocalAddr(), client, qcfg)
	if err != nil {
		closeAll()
		return fmt.Errorf("quic dial: %w", err)
	}
	srv, err := ln.Accept(ctx)
	if err != nil {
		_ = cli.CloseWithError(0, "")
		closeAll()
		return fmt.Errorf("quic accept: %w", err)
	}
	n.d.goFunc(func() {
		for {
			b, err := srv.ReceiveDatagram(n.d.ctx)
			if err != nil {
				return
			}
			n.delivered(f, b)
		}
	})
	f.tunf.publish = func(msg []byte) error { return cli.SendDatagram(bytes.Clone(msg)) }
	f.onStop = func() {
		_ = cli.CloseWithError(0, "")
		_ = srv.CloseWithError(0, "")
		closeAll()
	}
	return nil
}

// waitListening waits (up to listenWait) for process cmd to listen on
// TCP port p.
func (n *tunNet) waitListening(cmd *exec.Cmd, p uint16, what string) error {
	deadline := time.Now().Add(listenWait)
	for !emu.TCPListening(cmd.Process.Pid, p) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not listening on port %d after %v", what, p, listenWait)
		}
		select {
		case <-n.d.ctx.Done():
			return n.d.ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}
