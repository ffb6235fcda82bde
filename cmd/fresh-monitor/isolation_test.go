package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cmd/fresh-monitor/internal/fleettest"
	"github.com/fresh-udp/fresh/cmd/fresh-monitor/monitor"
	"github.com/fresh-udp/fresh/transport"
	"github.com/fresh-udp/fresh/transport/devcert"
)

// fleet is a CA whose certificate, and the monitor's certificate and
// key, are files in dir, and the flags that give them to the command.
type fleet struct {
	ca   *devcert.CA
	args []string
}

func newFleet(t *testing.T, dir string) *fleet {
	t.Helper()
	ca, err := devcert.NewCA("fleet CA")
	require.NoError(t, err)
	srv, err := ca.Issue("localhost", "localhost", "127.0.0.1")
	require.NoError(t, err)
	certPEM, keyPEM, err := devcert.PEM(srv)
	require.NoError(t, err)
	for name, b := range map[string][]byte{"cert.pem": certPEM, "key.pem": keyPEM, "ca.pem": ca.CertPEM()} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o600))
	}
	return &fleet{ca: ca, args: []string{"-cert", filepath.Join(dir, "cert.pem"), "-key", filepath.Join(dir, "key.pem"), "-ca", filepath.Join(dir, "ca.pem")}}
}

// dial connects to addr as the device name.
func (f *fleet) dial(t *testing.T, addr, name string) (*transport.Conn, error) {
	t.Helper()
	cert, err := f.ca.Issue(name)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := transport.Dial(ctx, addr, transport.Config{TLS: &tls.Config{
		RootCAs: f.ca.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{cert},
	}})
	if err == nil {
		t.Cleanup(func() { _ = c.Abort() })
	}
	return c, err
}

// One enrolled device with a 1,000-byte certificate name is refused at
// its handshake, counted under reason "refused" and logged once, and the
// rest of the fleet does not notice: another device's updates are stored
// throughout and /readyz stays 200. Names that worked before (".", "*",
// ">", "..", non-ASCII) still do. (Before names were checked, this
// device's upload cut the monitor off NATS for good.)
func TestRunRefusesLongNameFleetUnaffected(t *testing.T) {
	dir := t.TempDir()
	f := newFleet(t, dir)
	r := startRun(t, append([]string{"-listen", "127.0.0.1:0", "-nats-listen", "127.0.0.1:0", "-metrics", "127.0.0.1:0",
		"-data", filepath.Join(dir, "data")}, f.args...)...)
	good, err := f.dial(t, r.addr, "sensor-ok")
	require.NoError(t, err)
	fleettest.SendEvery(t, good, 50*time.Millisecond, nil)
	require.Eventually(t, func() bool { return scrape(t, r.metrics)["fresh_updates_stored_total"] >= 1 }, 10*time.Second, 10*time.Millisecond)

	long := strings.Repeat("é", 500)
	require.Len(t, long, 1000)
	_, err = f.dial(t, r.addr, long)
	require.ErrorIs(t, err, transport.ErrHandshake)
	require.ErrorContains(t, err, "bad certificate", "the device hears its certificate refused")

	// The fleet over the next two seconds: every scrape ready, the other
	// device's updates stored, none failed.
	before := scrape(t, r.metrics)
	var m map[string]float64
	for range 10 {
		time.Sleep(200 * time.Millisecond)
		require.Equal(t, http.StatusOK, get(t, r.metrics+"/readyz"))
		m = scrape(t, r.metrics)
	}
	t.Logf("in the 2 s after the refusal: %v updates stored, %v store errors",
		m["fresh_updates_stored_total"]-before["fresh_updates_stored_total"], m[`fresh_store_errors_total{store="kv"}`])
	require.Greater(t, m["fresh_updates_stored_total"], before["fresh_updates_stored_total"])
	require.Zero(t, m[`fresh_store_errors_total{store="kv"}`])
	require.Equal(t, 1.0, m[`fresh_handshakes_failed_total{reason="refused"}`])
	require.Equal(t, 1.0, m["fresh_handshakes_completed_total"], "only the good device's")
	require.Zero(t, m["fresh_connections_refused_total"], "refused at the handshake, not after")
	require.Zero(t, m["fresh_nats_connections_replaced_total"])
	logs := r.stderr.String()
	require.Equal(t, 1, strings.Count(logs, "handshake rejected"), logs)
	require.Regexp(t, `level=WARN msg="fresh: handshake rejected" remote=127\.0\.0\.1:\d+ reason=refused err=".*device name refused: .*500 characters \(1000 bytes\), more than 64`, logs)

	nc, err := nats.Connect(clientsURL(t, r.stdout.String()))
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	kv, err := js.KeyValue(context.Background(), monitor.DefaultKVBucket)
	require.NoError(t, err)
	for _, name := range []string{".", "*", ">", "..", "capteur-é"} {
		c, err := f.dial(t, r.addr, name)
		require.NoError(t, err, "%q", name)
		require.NoError(t, c.SendUpdate([]byte(name)))
		fleettest.StoredAfter(t, kv, monitor.Key(name), time.Time{}, fmt.Sprintf("%q not stored", name))
	}
	r.stop(t)
}

// clientsURL is the embedded NATS server's client URL the run printed.
func clientsURL(t *testing.T, stdout string) string {
	t.Helper()
	m := regexp.MustCompile(`clients at (nats://\S+)`).FindStringSubmatch(stdout)
	require.NotNil(t, m, stdout)
	return m[1]
}

// natsProxy forwards TCP connections to a NATS server and can end them
// as a server ends a client it will not talk to: an -ERR line, then the
// close.
type natsProxy struct {
	l     net.Listener
	to    string
	mu    sync.Mutex
	conns []net.Conn // the clients' ends
	wg    sync.WaitGroup
}

func startProxy(t *testing.T, to string) *natsProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &natsProxy{l: l, to: to}
	p.wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", to)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c)
			p.mu.Unlock()
			p.wg.Go(func() { _, _ = io.Copy(s, c); s.Close() })
			p.wg.Go(func() { _, _ = io.Copy(c, s); c.Close() })
		}
	})
	t.Cleanup(func() {
		l.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *natsProxy) url() string { return "nats://" + p.l.Addr().String() }

// refuse sends every client the server's -ERR line and closes it: with
// this error nats.go closes its connection for good.
func (p *natsProxy) refuse(errLine string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_, _ = io.WriteString(c, "-ERR '"+errLine+"'\r\n")
		c.Close()
	}
	p.conns = nil
}

// With -nats, the command's NATS connection comes back after the server
// closes it mid-run: kicked (nats.go reconnects), and closed with an
// error after which nats.go closes the connection for good (the monitor
// opens a new one). Each time /readyz returns to 200 and the device's
// updates are stored again.
func TestRunRecoversNATSClosedByServer(t *testing.T) {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true,
		StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	require.NoError(t, err)
	go ns.Start()
	require.True(t, ns.ReadyForConnections(10*time.Second))
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	proxy := startProxy(t, ns.ClientURL()[len("nats://"):])

	dir := t.TempDir()
	f := newFleet(t, dir)
	r := startRun(t, append([]string{"-listen", "127.0.0.1:0", "-nats", proxy.url(), "-metrics", "127.0.0.1:0",
		"-data", filepath.Join(dir, "data")}, f.args...)...)
	conn, err := f.dial(t, r.addr, "sensor-1")
	require.NoError(t, err)
	var paused atomic.Bool
	fleettest.SendEvery(t, conn, 20*time.Millisecond, &paused)
	nc, err := nats.Connect(ns.ClientURL())
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	var kv jetstream.KeyValue
	require.Eventually(t, func() bool {
		kv, err = js.KeyValue(context.Background(), monitor.DefaultKVBucket)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
	fleettest.StoredAfter(t, kv, monitor.Key("sensor-1"), time.Time{}, "not stored at first")

	// Kicked through the server's API.
	cz, err := ns.Connz(&server.ConnzOptions{})
	require.NoError(t, err)
	kicked := 0
	for _, ci := range cz.Conns {
		if ci.Name == "fresh-monitor" {
			require.NoError(t, ns.DisconnectClientByID(ci.Cid))
			kicked++
		}
	}
	require.Equal(t, 1, kicked)
	require.Eventually(t, func() bool { return strings.Contains(r.stderr.String(), "NATS connection restored") }, 20*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return get(t, r.metrics+"/readyz") == http.StatusOK }, 20*time.Second, 10*time.Millisecond)
	fleettest.StoredAfter(t, kv, monitor.Key("sensor-1"), time.Now(), "not stored after the kick")

	// Closed with an error nats.go does not reconnect after. The device
	// pauses so that the -ERR line does not land inside a message.
	paused.Store(true)
	time.Sleep(200 * time.Millisecond)
	proxy.refuse("Maximum Control Line Exceeded")
	paused.Store(false)
	require.Eventually(t, func() bool { return scrape(t, r.metrics)["fresh_nats_connections_replaced_total"] == 1 }, 20*time.Second, 10*time.Millisecond,
		"the connection was not replaced: %s", r.stderr.String())
	require.Contains(t, r.stderr.String(), "NATS connection closed for good")
	require.Eventually(t, func() bool { return get(t, r.metrics+"/readyz") == http.StatusOK }, 20*time.Second, 10*time.Millisecond)
	fleettest.StoredAfter(t, kv, monitor.Key("sensor-1"), time.Now(), "not stored after the connection was replaced")
	r.stop(t)
}

// A port the command cannot have, or a NATS server it cannot reach, is
// reported at once with the bind or dial error and the flag that fixes
// it; the command exits instead of waiting.
func TestRunNamesPortConflictsAndUnreachableNATS(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer tcp.Close()
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer udp.Close()
	busyTCP, busyUDP := tcp.Addr().String(), udp.LocalAddr().String()
	free := []string{"-listen", "127.0.0.1:0", "-nats-listen", "127.0.0.1:0", "-metrics", "127.0.0.1:0"}
	with := func(flag, value string) []string {
		args := []string{"-data", t.TempDir()}
		for i := 0; i < len(free); i += 2 {
			if free[i] != flag {
				args = append(args, free[i], free[i+1])
			}
		}
		return append(args, flag, value)
	}
	for _, tc := range []struct {
		args []string
		says []string
	}{
		{with("-nats-listen", busyTCP), []string{"-nats-listen " + busyTCP + ": listen tcp " + busyTCP + ": bind: address already in use", "give -nats-listen another address (port 0 picks a free one)"}},
		{with("-metrics", busyTCP), []string{"-metrics " + busyTCP + ": listen tcp " + busyTCP + ": bind: address already in use", "give -metrics another address", "-metrics off"}},
		{with("-listen", busyUDP), []string{"-listen " + busyUDP + ": ", "address already in use", "give -listen another port", "-reuseport"}},
		{append(with("-nats-cluster", busyTCP), "-nats-routes", "nats-route://"+busyTCP), []string{"-nats-cluster " + busyTCP + ": ", "address already in use", "give -nats-cluster another port"}},
		{[]string{"-listen", "127.0.0.1:0", "-metrics", "off", "-data", t.TempDir(), "-nats", "nats://fresh:secret@127.0.0.1:1"},
			[]string{"-nats nats://fresh:xxxxx@127.0.0.1:1: no NATS server answered: dial tcp 127.0.0.1:1: connect: connection refused", "give -nats the URL(s) of running ones"}},
	} {
		start := time.Now()
		var stdout, stderr fleettest.Buffer
		err := run(context.Background(), tc.args, &stdout, &stderr)
		t.Logf("%v: %v after %v", tc.args, err, time.Since(start).Round(time.Millisecond))
		require.Error(t, err, "%v", tc.args)
		for _, s := range tc.says {
			require.Contains(t, err.Error(), s, "%v", tc.args)
		}
		require.NotContains(t, err.Error(), "secret")
	}
}
