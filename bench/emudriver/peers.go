package emudriver

import (
	"bytes"
	"context"
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
	"github.com/plgd-dev/go-coap/v3/message"
	"github.com/plgd-dev/go-coap/v3/message/codes"
	coapmux "github.com/plgd-dev/go-coap/v3/mux"
	coapnet "github.com/plgd-dev/go-coap/v3/net"
	"github.com/plgd-dev/go-coap/v3/options"
	"github.com/plgd-dev/go-coap/v3/udp"

	"github.com/fresh-udp/fresh/bench/emu"
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
	// peerTimeout bounds a reliable message's wait for its
	// acknowledgement and a client's disconnect.
	peerTimeout = 30 * time.Second
	// coapPath is the resource the device POSTs its readings to.
	coapPath = "/r"
	// coapNoResponseAll is RFC 7967 §2's No-Response value that
	// suppresses every response class (2.xx, 4.xx and 5.xx: 2|8|16).
	coapNoResponseAll = 26
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
	broker := netip.AddrPortFrom(n.tun.ServerAddr(), sport)
	dir, err := os.MkdirTemp("", "fresh-mqtt-")
	if err != nil {
		return err
	}
	conf := filepath.Join(dir, "mosquitto.conf")
	// set_tcp_nodelay: the broker forwards each PUBLISH at once, as a
	// broker tuned for telemetry would (the subscriber is local, so only
	// the PUBACKs to the device cross the router).
	text := fmt.Sprintf("listener %d %s\nallow_anonymous true\npersistence false\nset_tcp_nodelay true\nlog_dest none\n",
		sport, n.tun.ServerAddr())
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return err
	}
	cmd := exec.Command(mosquittoBinary, "-c", conf)
	if err := n.start(n.tun.InServer, cmd); err != nil {
		_ = os.RemoveAll(dir)
		return fmt.Errorf("mosquitto: %w", err)
	}
	n.d.goFunc(func() {
		_ = cmd.Wait()
		_ = os.RemoveAll(dir)
	})
	if err := n.waitListening(cmd, sport, "mosquitto"); err != nil {
		return err
	}
	n.register(f, flowKey{protoTCP, caddr.Port(), sport})

	qos := byte(0)
	if f.spec.Reliable {
		qos = 1
	}
	topic := "fresh/" + f.spec.Name
	uri := "tcp://" + broker.String()
	sub, err := n.mqttConnect(f.spec.Name+"-monitor", uri, n.tun.InServer, nil)
	if err != nil {
		return fmt.Errorf("mqtt subscriber: %w", err)
	}
	tok := sub.Subscribe(topic, qos, func(_ mqtt.Client, m mqtt.Message) { n.delivered(f, m.Payload()) })
	if err := waitToken(tok); err != nil {
		sub.Disconnect(0)
		return fmt.Errorf("mqtt subscribe: %w", err)
	}
	pub, err := n.mqttConnect(f.spec.Name, uri, n.tun.InClient, net.TCPAddrFromAddrPort(caddr))
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
// any). No reconnect: a dropped connection ends the flow's deliveries,
// which the result shows as lost messages.
func (n *tunNet) mqttConnect(id, uri string, in func(func() error) error, laddr *net.TCPAddr) (mqtt.Client, error) {
	o := mqtt.NewClientOptions().AddBroker(uri).SetClientID(id).
		SetCleanSession(true).SetAutoReconnect(false).SetConnectRetry(false).
		SetConnectTimeout(setupTimeout).SetWriteTimeout(peerTimeout).
		SetCustomOpenConnectionFn(func(u *url.URL, _ mqtt.ClientOptions) (c net.Conn, err error) {
			err = in(func() error {
				dl := net.Dialer{LocalAddr: laddr, Timeout: setupTimeout}
				c, err = dl.DialContext(n.d.ctx, "tcp4", u.Host)
				return err
			})
			return c, err
		})
	c := mqtt.NewClient(o)
	if err := waitToken(c.Connect()); err != nil {
		return nil, err
	}
	return c, nil
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
// port caddr. Reliable flows POST confirmable requests, answered by a
// piggybacked 2.04 Changed; the others POST non-confirmable ones with
// No-Response (RFC 7967), the way a device reports readings it does not
// need acknowledged.
func (n *tunNet) setupCoAP(f *flowRun, caddr netip.AddrPort) error {
	var l *coapnet.UDPConn
	if err := n.tun.InServer(func() (err error) {
		l, err = coapnet.NewListenUDP("udp4", netip.AddrPortFrom(n.tun.ServerAddr(), 0).String())
		return err
	}); err != nil {
		return fmt.Errorf("coap server: %w", err)
	}
	saddr := l.LocalAddr().(*net.UDPAddr)
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
		l.Close()
		return err
	}
	srv := udp.NewServer(options.WithMux(router))
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
	cc := udp.Client(uc)
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
		_ = uc.Close()
		srv.Stop()
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
