package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"github.com/pion/dtls/v3"
	coapdtls "github.com/plgd-dev/go-coap/v3/dtls"
	"github.com/plgd-dev/go-coap/v3/message"
	"github.com/plgd-dev/go-coap/v3/message/codes"
	coapmux "github.com/plgd-dev/go-coap/v3/mux"
	coapnet "github.com/plgd-dev/go-coap/v3/net"
	coapoptions "github.com/plgd-dev/go-coap/v3/options"
	"github.com/plgd-dev/go-coap/v3/udp"
	"github.com/quic-go/quic-go"

	"github.com/fresh-udp/fresh/transport"
	"github.com/fresh-udp/fresh/transport/devcert"
)

// peerNames is every peer, in the table's order: the bare floors first,
// then what a developer would choose instead of fresh, then fresh.
func peerNames() []string {
	return []string{"udp", "tcp", "mqtt-qos0", "mqtt-qos1-tls", "coap-non", "coap-con-dtls", "quic-datagram", "fresh", "fresh-tls"}
}

const (
	readingSize = 100
	coapPath    = "/r"
	// coapNoResponseAll is RFC 7967 §2's No-Response value that
	// suppresses every response (2.xx, 4.xx and 5.xx).
	coapNoResponseAll = 26
	pskIdentity       = "fresh-device"
	quicALPN          = "fresh-devicecost"
	// The child's configuration, from the parent.
	envAddr = "FRESH_DEVICECOST_ADDR"
	envCA   = "FRESH_DEVICECOST_CA"
	envPSK  = "FRESH_DEVICECOST_PSK"
	envHz   = "FRESH_DEVICECOST_HZ"
)

// monitors are the receiving ends of every peer, in this process.
type monitors struct {
	dir     string
	caFile  string
	psk     []byte
	addr    map[string]string // peer → the address its device connects to
	count   map[string]*atomic.Int64
	missing map[string]string // peer → why it cannot run here
	closers []func()
}

func (m *monitors) received(p string) int64 { return m.count[p].Load() }

func (m *monitors) unavailable(p string) string { return m.missing[p] }

func (m *monitors) env(p string, hz float64) []string {
	return []string{childEnv + "=" + p, envAddr + "=" + m.addr[p], envCA + "=" + m.caFile,
		envPSK + "=" + hex.EncodeToString(m.psk), envHz + "=" + strconv.FormatFloat(hz, 'g', -1, 64)}
}

func (m *monitors) close() {
	for i := len(m.closers) - 1; i >= 0; i-- {
		m.closers[i]()
	}
	_ = os.RemoveAll(m.dir)
}

// startMonitors starts every monitor the peers of o need.
func startMonitors(ctx context.Context, o options) (m *monitors, err error) {
	m = &monitors{addr: map[string]string{}, count: map[string]*atomic.Int64{}, missing: map[string]string{}}
	for _, p := range peerNames() {
		m.count[p] = new(atomic.Int64)
	}
	if m.dir, err = os.MkdirTemp("", "devicecost-"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			m.close()
		}
	}()
	ca, err := devcert.NewCA("devicecost")
	if err != nil {
		return nil, err
	}
	cert, err := ca.Issue("monitor", "127.0.0.1")
	if err != nil {
		return nil, err
	}
	m.caFile = filepath.Join(m.dir, "ca.pem")
	if err := os.WriteFile(m.caFile, ca.CertPEM(), 0o600); err != nil {
		return nil, err
	}
	serverTLS := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}
	m.psk = make([]byte, 16)
	if _, err := rand.Read(m.psk); err != nil {
		return nil, err
	}
	for _, start := range []func() error{
		m.startUDP, m.startTCP,
		func() error { return m.startMQTT(o.mosquitto, cert) },
		m.startCoAP,
		func() error { return m.startQUIC(ctx, serverTLS) },
		func() error { return m.startFresh(ctx, serverTLS) },
	} {
		if err := start(); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *monitors) startUDP() error {
	uc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return err
	}
	m.closers = append(m.closers, func() { _ = uc.Close() })
	m.addr["udp"] = uc.LocalAddr().String()
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := uc.ReadFrom(buf); err != nil {
				return
			}
			m.count["udp"].Add(1)
		}
	}()
	return nil
}

func (m *monitors) startTCP() error {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return err
	}
	m.closers = append(m.closers, func() { _ = ln.Close() })
	m.addr["tcp"] = ln.Addr().String()
	serve(ln.Accept, func(c net.Conn) {
		defer c.Close()
		buf := make([]byte, readingSize)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			m.count["tcp"].Add(1)
		}
	})
	return nil
}

// freePort is a TCP port on loopback nothing listens on now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// startMQTT starts one mosquitto with a plain and a TLS 1.3 listener and
// a subscriber that counts each device's PUBLISHes by topic.
func (m *monitors) startMQTT(binary string, cert tls.Certificate) error {
	if _, err := exec.LookPath(binary); err != nil {
		why := fmt.Sprintf("no %s broker (Debian: apt-get install mosquitto; or -mosquitto PATH)", binary)
		m.missing["mqtt-qos0"], m.missing["mqtt-qos1-tls"] = why, why
		return nil
	}
	plain, err1 := freePort()
	secure, err2 := freePort()
	certPEM, keyPEM, err3 := devcert.PEM(cert)
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	certFile, keyFile := filepath.Join(m.dir, "cert.pem"), filepath.Join(m.dir, "key.pem")
	conf := filepath.Join(m.dir, "mosquitto.conf")
	// set_tcp_nodelay: the broker forwards each PUBLISH at once.
	text := fmt.Sprintf("persistence false\nset_tcp_nodelay true\nlog_dest stderr\nlog_type error\n"+
		"listener %d 127.0.0.1\nallow_anonymous true\n"+
		"listener %d 127.0.0.1\nallow_anonymous true\ncertfile %s\nkeyfile %s\ntls_version tlsv1.3\n",
		plain, secure, certFile, keyFile)
	if os.Geteuid() == 0 {
		text += "user root\n" // else it drops to its own user, who cannot read the 0600 key
	}
	if err := errors.Join(os.WriteFile(certFile, certPEM, 0o600), os.WriteFile(keyFile, keyPEM, 0o600),
		os.WriteFile(conf, []byte(text), 0o600)); err != nil {
		return err
	}
	var log bytes.Buffer
	cmd := exec.Command(binary, "-c", conf)
	cmd.Stderr = &log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("mosquitto: %w", err)
	}
	m.closers = append(m.closers, func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	m.addr["mqtt-qos0"] = fmt.Sprintf("tcp://127.0.0.1:%d", plain)
	m.addr["mqtt-qos1-tls"] = fmt.Sprintf("ssl://127.0.0.1:%d", secure)
	// The subscriber, once the broker listens.
	o := mqtt.NewClientOptions().AddBroker(m.addr["mqtt-qos0"]).SetClientID("devicecost-monitor").
		SetAutoReconnect(false).SetConnectTimeout(5 * time.Second)
	sub := mqtt.NewClient(o)
	deadline := time.Now().Add(5 * time.Second)
	for {
		t := sub.Connect()
		t.Wait()
		if t.Error() == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("mosquitto: not answering after 5 s: %v; its log: %s", t.Error(), bytes.TrimSpace(log.Bytes()))
		}
		time.Sleep(50 * time.Millisecond)
	}
	m.closers = append(m.closers, func() { sub.Disconnect(0) })
	t := sub.Subscribe("devicecost/#", 1, func(_ mqtt.Client, msg mqtt.Message) {
		if c, ok := m.count[strings.TrimPrefix(msg.Topic(), "devicecost/")]; ok {
			c.Add(1)
		}
	})
	t.Wait()
	return t.Error()
}

// startCoAP starts a go-coap server on plain UDP and one on DTLS 1.2;
// POSTs to coapPath are readings, a confirmable one answered 2.04.
func (m *monitors) startCoAP() error {
	router := func(peer string) (*coapmux.Router, error) {
		r := coapmux.NewRouter()
		return r, r.Handle(coapPath, coapmux.HandlerFunc(func(w coapmux.ResponseWriter, req *coapmux.Message) {
			m.count[peer].Add(1)
			if req.Type() == message.Confirmable {
				_ = w.SetResponse(codes.Changed, message.TextPlain, nil)
			}
		}))
	}
	rp, err := router("coap-non")
	if err != nil {
		return err
	}
	l, err := coapnet.NewListenUDP("udp4", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := udp.NewServer(coapoptions.WithMux(rp))
	go func() { _ = srv.Serve(l) }()
	m.closers = append(m.closers, srv.Stop)
	m.addr["coap-non"] = l.LocalAddr().String()
	rs, err := router("coap-con-dtls")
	if err != nil {
		return err
	}
	dl, err := coapnet.NewDTLSListener("udp4", "127.0.0.1:0", dtlsConfig(m.psk))
	if err != nil {
		return err
	}
	dsrv := coapdtls.NewServer(coapoptions.WithMux(rs))
	go func() { _ = dsrv.Serve(dl) }()
	m.closers = append(m.closers, dsrv.Stop)
	m.addr["coap-con-dtls"] = dl.Addr().String()
	return nil
}

// dtlsConfig is DTLS 1.2 with pre-shared key psk and
// TLS_PSK_WITH_AES_128_CCM_8, RFC 7252 §9.1.3.1's mandatory suite.
func dtlsConfig(psk []byte) *dtls.Config {
	return &dtls.Config{
		PSK:             func([]byte) ([]byte, error) { return psk, nil },
		PSKIdentityHint: []byte(pskIdentity),
		CipherSuites:    []dtls.CipherSuiteID{dtls.TLS_PSK_WITH_AES_128_CCM_8},
	}
}

func (m *monitors) startQUIC(ctx context.Context, serverTLS *tls.Config) error {
	st := serverTLS.Clone()
	st.NextProtos = []string{quicALPN}
	ln, err := quic.ListenAddr("127.0.0.1:0", st, &quic.Config{EnableDatagrams: true})
	if err != nil {
		return err
	}
	m.closers = append(m.closers, func() { _ = ln.Close() })
	m.addr["quic-datagram"] = ln.Addr().String()
	serve(func() (*quic.Conn, error) { return ln.Accept(ctx) }, func(c *quic.Conn) {
		for {
			if _, err := c.ReceiveDatagram(ctx); err != nil {
				return
			}
			m.count["quic-datagram"].Add(1)
		}
	})
	return nil
}

func (m *monitors) startFresh(ctx context.Context, serverTLS *tls.Config) error {
	for peer, cfg := range map[string]transport.Config{"fresh": {Insecure: true}, "fresh-tls": {TLS: serverTLS}} {
		ln, err := transport.Listen("127.0.0.1:0", cfg)
		if err != nil {
			return err
		}
		m.closers = append(m.closers, func() { _ = ln.Close() })
		m.addr[peer] = ln.Addr().String()
		serve(func() (*transport.Conn, error) { return ln.Accept(ctx) }, func(c *transport.Conn) {
			defer c.Close()
			for {
				if _, err := c.ReadUpdate(ctx); err != nil {
					return
				}
				m.count[peer].Add(1)
			}
		})
	}
	return nil
}

// serve accepts connections until accept fails (its listener closed) and
// gives each to handle on a goroutine of its own.
func serve[C any](accept func() (C, error), handle func(C)) {
	go func() {
		for {
			c, err := accept()
			if err != nil {
				return
			}
			go handle(c)
		}
	}()
}

// runDevice is the child: peer p's device, configured from the
// environment, sending a reading every 1/hz s until it is killed.
func runDevice(p string) error {
	addr := os.Getenv(envAddr)
	hz, err := strconv.ParseFloat(os.Getenv(envHz), 64)
	if err != nil || hz <= 0 {
		return fmt.Errorf("%s=%q: want a positive rate", envHz, os.Getenv(envHz))
	}
	caPEM, err := os.ReadFile(os.Getenv(envCA))
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	clientTLS := &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS13}
	psk, err := hex.DecodeString(os.Getenv(envPSK))
	if err != nil {
		return fmt.Errorf("%s: %w", envPSK, err)
	}
	ctx := context.Background()
	send, err := connectDevice(ctx, p, addr, clientTLS, psk)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", addr, err)
	}
	msg := make([]byte, readingSize)
	t := time.NewTicker(time.Duration(float64(time.Second) / hz))
	defer t.Stop()
	for now := range t.C {
		binary.BigEndian.PutUint64(msg, uint64(now.UnixNano()))
		if err := send(msg); err != nil {
			return err
		}
	}
	return nil
}

// connectDevice connects peer p's device to addr and returns how it sends
// a reading.
func connectDevice(ctx context.Context, p, addr string, clientTLS *tls.Config, psk []byte) (func([]byte) error, error) {
	switch p {
	case "udp", "tcp":
		c, err := net.Dial(p+"4", addr) // Go's TCP sockets have Nagle off
		if err != nil {
			return nil, err
		}
		return func(b []byte) error { _, err := c.Write(b); return err }, nil
	case "mqtt-qos0", "mqtt-qos1-tls":
		// paho's defaults (30-s keep-alive, reconnecting), TLS 1.3 on the
		// secure one; QoS 1 waits for each PUBACK.
		o := mqtt.NewClientOptions().AddBroker(addr).SetClientID("devicecost-" + p).SetTLSConfig(clientTLS)
		c := mqtt.NewClient(o)
		if t := c.Connect(); t.Wait() && t.Error() != nil {
			return nil, t.Error()
		}
		var qos byte
		if p == "mqtt-qos1-tls" {
			qos = 1
		}
		return func(b []byte) error {
			t := c.Publish("devicecost/"+p, qos, false, b)
			t.Wait()
			return t.Error()
		}, nil
	case "coap-non":
		cc, err := udp.Dial(addr)
		if err != nil {
			return nil, err
		}
		return func(b []byte) error {
			req, err := cc.NewPostRequest(ctx, coapPath, message.AppOctets, bytes.NewReader(b),
				message.Option{ID: message.NoResponse, Value: []byte{coapNoResponseAll}})
			if err != nil {
				return err
			}
			defer cc.ReleaseMessage(req)
			req.SetType(message.NonConfirmable)
			return cc.WriteMessage(req)
		}, nil
	case "coap-con-dtls":
		cc, err := coapdtls.Dial(addr, dtlsConfig(psk))
		if err != nil {
			return nil, err
		}
		return func(b []byte) error {
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			resp, err := cc.Post(rctx, coapPath, message.AppOctets, bytes.NewReader(b))
			if err == nil {
				cc.ReleaseMessage(resp)
			}
			return err
		}, nil
	case "quic-datagram":
		ct := clientTLS.Clone()
		ct.NextProtos = []string{quicALPN}
		c, err := quic.DialAddr(ctx, addr, ct, &quic.Config{EnableDatagrams: true})
		if err != nil {
			return nil, err
		}
		return func(b []byte) error { return c.SendDatagram(bytes.Clone(b)) }, nil
	case "fresh", "fresh-tls":
		cfg := transport.Config{Insecure: true}
		if p == "fresh-tls" {
			cfg = transport.Config{TLS: clientTLS}
		}
		c, err := transport.Dial(ctx, addr, cfg)
		if err != nil {
			return nil, err
		}
		return c.SendUpdate, nil
	}
	return nil, fmt.Errorf("unknown peer %q", p)
}
