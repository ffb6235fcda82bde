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

// setupMQTT starts the flow's broker in the server namespace, subscribes
// beside it, and connects the device's publisher through the router from
// the fixed client port caddr. QoS 1 when the flow is reliable, else 0;
// a clean session; paho's default 30-s keep-alive.
func (n *tunNet) setupMQTT(f *flowRun, caddr netip.AddrPort) error {
	if _, err := exec.LookPath(mosquittoBinary); err != nil {
		return ErrNoMosquitto
	}
	sport := uint16(mqttPort + f.idx)
	if f.spec.Secure {
		sport = uint16(mqttTLSPort + f.idx)
	}
	broker := netip.AddrPortFrom(n.tun.ServerAddr(), sport)
	dir, err := os.MkdirTemp("", "fresh-mqtt-")
	if err != nil {
		return err
	}
	conf := filepath.Join(dir, "mosquitto.conf")
	// set_tcp_nodelay: the broker forwards each PUBLISH at once, as a
	// broker tuned for telemetry would (the subscriber is local, so only
	// the PUBACKs to the device cross the router).
	// user root: the TUN router runs as root, and a broker that drops to
	// its own user could not read the run's certificate files (0600).
	text := fmt.Sprintf("listener %d %s\nallow_anonymous true\npersistence false\nset_tcp_nodelay true\nuser root\nlog_dest stderr\nlog_type error\n",
		sport, n.tun.ServerAddr())
	var clientTLS *tls.Config
	if f.spec.Secure {
		var certPEM, keyPEM []byte
		var err error
		clientTLS, _, certPEM, keyPEM, err = n.credentials()
		if err == nil {
			err = errors.Join(os.WriteFile(filepath.Join(dir, "cert.pem"), certPEM, 0o600),
				os.WriteFile(filepath.Join(dir, "key.pem"), keyPEM, 0o600))
		}
		if err != nil {
			_ = os.RemoveAll(dir)
			return err
		}
		text += fmt.Sprintf("certfile %s\nkeyfile %s\ntls_version tlsv1.3\n", filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
	}
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return err
	}
	logPath := filepath.Join(dir, "mosquitto.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		_ = os.RemoveAll(dir)
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(mosquittoBinary, "-c", conf)
	cmd.Stderr = logFile
	if err := n.start(n.tun.InServer, cmd); err != nil {
		_ = os.RemoveAll(dir)
		return fmt.Errorf("mosquitto: %w", err)
	}
	exited := make(chan struct{})
	n.d.goFunc(func() {
		_ = cmd.Wait()
		close(exited)
	})
	if err := n.waitListening(cmd, sport, "mosquitto"); err != nil {
		b, _ := os.ReadFile(logPath)
		if len(b) > 0 {
			err = fmt.Errorf("%w; its log: %s", err, bytes.TrimSpace(b))
		}
		return err
	}
	n.d.goFunc(func() {
		<-exited
		_ = os.RemoveAll(dir)
	})
	n.register(f, flowKey{protoTCP, caddr.Port(), sport})

	qos := byte(0)
	if f.spec.Reliable {
		qos = 1
	}
	topic := "fresh/" + f.spec.Name
	uri := "tcp://" + broker.String()
	sub, err := n.mqttConnect(f.spec.Name+"-monitor", uri, n.tun.InServer, nil, clientTLS)
	if err != nil {
		return fmt.Errorf("mqtt subscriber: %w", err)
	}
	tok := sub.Subscribe(topic, qos, func(_ mqtt.Client, m mqtt.Message) { n.delivered(f, m.Payload()) })
	if err := waitToken(tok); err != nil {
		sub.Disconnect(0)
		return fmt.Errorf("mqtt subscribe: %w", err)
	}
	pub, err := n.mqttConnect(f.spec.Name, uri, n.tun.InClient, net.TCPAddrFromAddrPort(caddr), clientTLS)
	if err != nil {
		sub.Disconnect(0)
		return fmt.Errorf("mqtt publisher: %w", err)
	}
	f.tunf.publish = func(msg []byte) error {
		// Asynchronous, as a device's publisher is: a QoS 1 message waits
		// for its PUBACK in paho, not in the reading loop.
		tok := pub.Publish(topic, qos, false, bytes.Clone(msg))
		if qos == 0 {
			return nil
		}
		n.d.goFunc(func() { _ = waitToken(tok) })
		return nil
	}
	f.onStop = func() {
		pub.Disconnect(100)
		sub.Disconnect(100)
	}
	return nil
}

// mqttConnect connects a paho client to the broker at uri, its TCP
// connection opened by in (the namespace it belongs to) from laddr (nil:
// any), over TLS with tc unless it is nil. No reconnect: a dropped
// connection ends the flow's deliveries, which the result shows as lost
// messages.
func (n *tunNet) mqttConnect(id, uri string, in func(func() error) error, laddr *net.TCPAddr, tc *tls.Config) (mqtt.Client, error) {
	o := mqtt.NewClientOptions().AddBroker(uri).SetClientID(id).
		SetCleanSession(true).SetAutoReconnect(false).SetConnectRetry(false).
		SetConnectTimeout(setupTimeout).SetWriteTimeout(peerTimeout).
		SetCustomOpenConnectionFn(func(u *url.URL, _ mqtt.ClientOptions) (c net.Conn, err error) {
			err = in(func() error {
				dl := net.Dialer{LocalAddr: laddr, Timeout: setupTimeout}
				c, err = dl.DialContext(n.d.ctx, "tcp4", u.Host)
				return err
			})
			if err != nil || tc == nil {
				return c, err
			}
			// paho leaves TLS to a custom connection: the handshake here.
			tlsConn := tls.Client(c, tc)
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

// setupCoAP starts the flow's CoAP server (go-coap) in the server
// namespace and connects the device's client to it from the fixed client
// port caddr, over DTLS when the flow is secure. Reliable flows POST
// confirmable requests, answered by a piggybacked 2.04 Changed; the others
// POST non-confirmable ones with No-Response (RFC 7967), the way a device
// reports readings it does not need acknowledged.
func (n *tunNet) setupCoAP(f *flowRun, caddr netip.AddrPort) error {
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
		return err
	}
	listen := netip.AddrPortFrom(n.tun.ServerAddr(), 0).String()
	var cc *coapclient.Conn
	var stop func()
	var saddr *net.UDPAddr
	if f.spec.Secure {
		cfg, err := coapDTLSConfig()
		if err != nil {
			return err
		}
		var l *coapnet.DTLSListener
		if err := n.tun.InServer(func() (err error) {
			l, err = coapnet.NewDTLSListener("udp4", listen, cfg)
			return err
		}); err != nil {
			return fmt.Errorf("coap server: %w", err)
		}
		saddr = l.Addr().(*net.UDPAddr)
		srv := coapdtls.NewServer(options.WithMux(router), options.WithPeriodicRunner(n.coapPeriodic), options.WithErrors(ignoreError))
		n.d.goFunc(func() { _ = srv.Serve(l) })
		stop = srv.Stop
		var pc *net.UDPConn
		if err := n.tun.InClient(func() (err error) {
			pc, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(caddr))
			return err
		}); err != nil {
			stop()
			return fmt.Errorf("coap client: %w", err)
		}
		n.register(f, flowKey{protoUDP, caddr.Port(), uint16(saddr.Port)})
		dc, err := dtls.Client(pc, saddr, cfg)
		if err == nil {
			ctx, cancel := context.WithTimeout(n.d.ctx, setupTimeout)
			err = dc.HandshakeContext(ctx)
			cancel()
		}
		if err != nil {
			_ = pc.Close()
			stop()
			return fmt.Errorf("coap client: DTLS: %w", err)
		}
		cc = coapdtls.Client(dc, options.WithPeriodicRunner(n.coapPeriodic), options.WithErrors(ignoreError))
		stop = func() { _ = dc.Close(); srv.Stop() }
	} else {
		var l *coapnet.UDPConn
		if err := n.tun.InServer(func() (err error) {
			l, err = coapnet.NewListenUDP("udp4", listen)
			return err
		}); err != nil {
			return fmt.Errorf("coap server: %w", err)
		}
		saddr = l.LocalAddr().(*net.UDPAddr)
		srv := udp.NewServer(options.WithMux(router), options.WithPeriodicRunner(n.coapPeriodic), options.WithErrors(ignoreError))
		n.d.goFunc(func() { _ = srv.Serve(l) })
		var uc *net.UDPConn
		if err := n.tun.InClient(func() (err error) {
			uc, err = net.DialUDP("udp4", net.UDPAddrFromAddrPort(caddr), saddr)
			return err
		}); err != nil {
			srv.Stop()
			return fmt.Errorf("coap client: %w", err)
		}
		n.register(f, flowKey{protoUDP, caddr.Port(), uint16(saddr.Port)})
		cc = udp.Client(uc, options.WithPeriodicRunner(n.coapPeriodic), options.WithErrors(ignoreError))
		stop = func() { _ = uc.Close(); srv.Stop() }
	}
	ctx := n.d.ctx
	f.tunf.publish = func(msg []byte) error {
		if f.spec.Reliable {
			// Each confirmable POST waits for its ACK (and retransmits)
			// in a goroutine of its own: the reading loop goes on.
			body := bytes.Clone(msg)
			n.d.goFunc(func() {
				rctx, cancel := context.WithTimeout(ctx, peerTimeout)
				defer cancel()
				if resp, err := cc.Post(rctx, coapPath, message.AppOctets, bytes.NewReader(body)); err == nil {
					cc.ReleaseMessage(resp)
				}
			})
			return nil
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
	f.onStop = func() {
		_ = cc.Close()
		stop()
	}
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
