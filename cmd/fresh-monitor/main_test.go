package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cmd/fresh-monitor/internal/fleettest"
	"github.com/fresh-udp/fresh/transport"
	"github.com/fresh-udp/fresh/transport/devcert"
)

// scrape reads /metrics into sample → value ("name{labels}" as exposed).
func scrape(t *testing.T, base string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		require.NoError(t, err, line)
		m[line[:i]] = v
	}
	require.NoError(t, sc.Err())
	return m
}

func get(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// started is a run of the command in this process, up and listening.
type started struct {
	stdout, stderr fleettest.Buffer
	addr           string // the UDP address agents dial
	metrics        string // the metrics base URL ("" with -metrics off)
	cancel         context.CancelFunc
	done           chan error
}

var (
	listenLineRE  = regexp.MustCompile(`listening on (\S+) `)
	metricsBaseRE = regexp.MustCompile(`metrics at (http://\S+)/metrics`)
	natsLineRE    = regexp.MustCompile(`clients at (nats://\S+)`)
)

// startRun runs the command with args until stop (or the test's end) and
// waits for its listening line.
func startRun(t *testing.T, args ...string) *started {
	t.Helper()
	r := &started{done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- run(ctx, args, &r.stdout, &r.stderr) }()
	t.Cleanup(cancel)
	require.Eventually(t, func() bool { return listenLineRE.MatchString(r.stdout.String()) }, 20*time.Second, 10*time.Millisecond,
		"no listening line: %s\n%s", r.stdout.String(), r.stderr.String())
	out := r.stdout.String()
	r.addr = listenLineRE.FindStringSubmatch(out)[1]
	if m := metricsBaseRE.FindStringSubmatch(out); m != nil {
		r.metrics = m[1]
	}
	return r
}

// stop ends the run as Ctrl-C does and requires a clean return.
func (r *started) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
}

// devCAPool is the throwaway CA a run without -cert wrote into data.
func devCAPool(t *testing.T, data string) *x509.CertPool {
	t.Helper()
	caPEM, err := os.ReadFile(filepath.Join(data, "dev-ca.pem"))
	require.NoError(t, err, "the throwaway CA is written to -data")
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	return pool
}

// With no flags but addresses the command embeds JetStream, serves a
// throwaway certificate whose CA it writes to -data, stores an agent's
// updates and upload, and its /metrics shows the counters with their
// values: connections, updates received and stored, upload bytes, store
// write latency, drops by reason, and no per-device label.
func TestRunStoresAndServesMetrics(t *testing.T) {
	data := t.TempDir()
	r := startRun(t, "-listen", "127.0.0.1:0", "-nats-listen", "127.0.0.1:0", "-metrics", "127.0.0.1:0", "-pprof", "-data", data)
	out := r.stdout.String()
	require.Contains(t, out, "embedded NATS server with JetStream in "+data)
	require.Contains(t, out, "no -cert/-key: serving a throwaway certificate")
	addr, base, stderr := r.addr, r.metrics, &r.stderr
	pool := devCAPool(t, data)
	ctx := context.Background()
	dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
	defer dcancel()
	conn, err := transport.Dial(dctx, addr, transport.Config{TLS: &tls.Config{RootCAs: pool, ServerName: "localhost"}})
	require.NoError(t, err)
	defer conn.Abort()
	for i := range 5 {
		require.NoError(t, conn.SendUpdate([]byte{byte(i)}))
		time.Sleep(20 * time.Millisecond)
	}
	payload := make([]byte, 1<<20)
	_, _ = rand.Read(payload)
	_, err = conn.Write(payload)
	require.NoError(t, err)
	require.NoError(t, conn.CloseWrite())
	require.NoError(t, conn.WaitCommitted(dctx, int64(len(payload))))

	require.Equal(t, http.StatusOK, get(t, base+"/healthz"))
	require.Equal(t, http.StatusOK, get(t, base+"/readyz"))
	require.Equal(t, http.StatusOK, get(t, base+"/debug/pprof/heap"))
	var m map[string]float64
	require.Eventually(t, func() bool {
		m = scrape(t, base)
		return m["fresh_updates_stored_total"] >= 1
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, 1.0, m["fresh_connections"])
	require.Equal(t, 1.0, m["fresh_connections_accepted_total"])
	require.GreaterOrEqual(t, m["fresh_updates_received_total"], 1.0)
	require.GreaterOrEqual(t, m["fresh_updates_read_total"], m["fresh_updates_stored_total"])
	require.LessOrEqual(t, m["fresh_updates_read_total"], m["fresh_updates_received_total"])
	require.Equal(t, float64(len(payload)), m["fresh_upload_bytes_total"])
	require.Equal(t, 1.0, m[`fresh_uploads_total{result="stored"}`])
	require.Equal(t, 0.0, m[`fresh_uploads_total{result="failed"}`])
	require.Equal(t, 1.0, m[`fresh_store_write_seconds_count{store="object"}`])
	require.Equal(t, m["fresh_updates_stored_total"], m[`fresh_store_write_seconds_count{store="kv"}`])
	require.Greater(t, m[`fresh_store_write_seconds_sum{store="kv"}`], 0.0)
	require.Equal(t, 0.0, m[`fresh_store_errors_total{store="kv"}`])
	require.Equal(t, 0.0, m["fresh_orphan_chunks_purged_total"], "a new store holds no dead upload")
	require.Contains(t, m, "fresh_orphan_bytes_purged_total")
	require.Contains(t, m, `fresh_initials_dropped_total{reason="bad_token"}`)
	require.Contains(t, m, `fresh_initials_dropped_total{reason="unauthenticated"}`)
	require.Contains(t, m, `fresh_initials_dropped_total{reason="handshake_limit"}`)
	require.Contains(t, m, `fresh_datagrams_dropped_total{reason="malformed"}`)
	require.Contains(t, m, "fresh_retries_sent_total")
	require.Contains(t, m, "fresh_handshake_timeouts_total")
	require.Contains(t, m, "fresh_stateless_resets_sent_total")
	require.Greater(t, m[`fresh_bytes_total{direction="received"}`], float64(len(payload)))
	require.Equal(t, m["fresh_updates_read_total"], m["fresh_update_age_seconds_count"])
	require.Greater(t, m["fresh_update_age_seconds_sum"], 0.0)
	require.Contains(t, m, "go_goroutines")
	for k := range m {
		require.NotContains(t, k, "device", "no per-device labels")
	}

	// An agent that does not trust the monitor's certificate rejects the
	// handshake with a TLS alert: counted by its reason, logged once.
	_, err = transport.Dial(dctx, addr, transport.Config{TLS: &tls.Config{RootCAs: x509.NewCertPool(), ServerName: "localhost"}})
	require.ErrorIs(t, err, transport.ErrHandshake)
	require.Eventually(t, func() bool {
		m = scrape(t, base)
		return m[`fresh_handshakes_failed_total{reason="peer_alert"}`] == 1
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, 2.0, m["fresh_handshakes_started_total"])
	require.Equal(t, 1.0, m["fresh_handshakes_completed_total"])
	require.Equal(t, 0.0, m[`fresh_handshakes_failed_total{reason="no_certificate"}`])
	require.Equal(t, 0.0, m[`fresh_handshakes_failed_total{reason="timeout"}`])
	require.Equal(t, 1, strings.Count(stderr.String(), "handshake rejected"), stderr.String())
	require.Regexp(t, `level=WARN msg="fresh: handshake rejected" remote=127\.0\.0\.1:\d+ reason=peer_alert err=".*bad certificate`, stderr.String())

	// The connection's end moves its counters to the ended totals: they
	// do not go down.
	received := m[`fresh_bytes_total{direction="received"}`]
	require.NoError(t, conn.Close())
	require.Eventually(t, func() bool {
		m = scrape(t, base)
		return m["fresh_connections_closed_total"] == 1 && m["fresh_connections"] == 0
	}, 10*time.Second, 20*time.Millisecond)
	require.GreaterOrEqual(t, m[`fresh_bytes_total{direction="received"}`], received)
	require.Contains(t, stderr.String(), "agent connected")
	require.Contains(t, stderr.String(), "upload stored")

	r.stop(t)
}

// With -ca an agent without a certificate, and one with a certificate of
// another CA, are refused: /metrics counts each under its reason and the
// log has one line for each.
func TestRunCountsRejectedAgents(t *testing.T) {
	dir := t.TempDir()
	f := newFleet(t, dir)
	ca := f.ca
	r := startRun(t, append([]string{"-listen", "127.0.0.1:0", "-nats-listen", "127.0.0.1:0", "-metrics", "127.0.0.1:0",
		"-data", filepath.Join(dir, "data")}, f.args...)...)
	addr, base, stderr := r.addr, r.metrics, &r.stderr
	ctx := context.Background()

	other, err := devcert.NewCA("another fleet's CA")
	require.NoError(t, err)
	foreign, err := other.Issue("intruder")
	require.NoError(t, err)
	dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
	defer dcancel()
	for _, getCert := range []func(*tls.CertificateRequestInfo) (*tls.Certificate, error){
		nil, // no certificate
		func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &foreign, nil },
	} {
		_, err := transport.Dial(dctx, addr, transport.Config{TLS: &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", GetClientCertificate: getCert}})
		require.ErrorIs(t, err, transport.ErrHandshake)
	}
	var m map[string]float64
	require.Eventually(t, func() bool {
		m = scrape(t, base)
		return m[`fresh_handshakes_failed_total{reason="no_certificate"}`] == 1 && m[`fresh_handshakes_failed_total{reason="unknown_authority"}`] == 1
	}, 10*time.Second, 20*time.Millisecond, "%v", m)
	require.Equal(t, 2.0, m["fresh_handshakes_started_total"])
	require.Equal(t, 0.0, m["fresh_handshakes_completed_total"])
	require.Equal(t, 0.0, m["fresh_connections_accepted_total"])
	logs := stderr.String()
	require.Equal(t, 2, strings.Count(logs, "handshake rejected"), logs)
	require.Contains(t, logs, `reason=no_certificate err="transport: handshake failed: tls: client didn't provide a certificate"`)
	require.Contains(t, logs, "reason=unknown_authority")

	r.stop(t)
}

func TestFlagErrorsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-cert", "a.pem"},
		{"-insecure", "-ca", "ca.pem"},
		{"-ca", "ca.pem"},
		{"-replicas", "0"},
		{"-pprof", "-metrics", "off"},
		{"-nats", "nats://x:4222", "-nats-listen", "127.0.0.1:0"},
		{"-nats", "nats://x:4222", "-nats-routes", "nats-route://a:6222"},
		{"-nats", "nats://x:4222", "-nats-cluster", "127.0.0.1:6222"},
		{"-nats", "nats://x:4222", "-nats-name", "n1"},
		{"-nats", "nats://x:4222", "-nats-cluster-name", "c"},
		{"-nats", "nats://x:4222", "-max-store", "1GB"},
		{"-max-upload-store", "lots"},
		{"-nats-routes", "nats-route://a:6222"},
		{"-nats-cluster", "127.0.0.1:6222"},
		{"-nats-cluster", "127.0.0.1:0", "-nats-routes", "nats-route://a:6222"},
		{"-nats-cluster", "127.0.0.1:6222", "-nats-routes", "nats://a:6222"},
		{"-nats-cluster", "127.0.0.1:6222", "-nats-routes", "nats-route://a"},
		{"-nats-cluster-name", "c"},
		{"-replicas", "3"},
		{"-nats-cluster", "127.0.0.1:6222", "-nats-routes", "nats-route://a:6222", "-nats-cluster-name", "a b"},
		{"stray"},
		{"-steer", "/sys/fs/bpf/x"},
		{"-server-id", "256"},
	} {
		_, err := parseFlags(args, io.Discard)
		require.Error(t, err, args)
		require.True(t, errors.As(err, new(*usageError)), "%v: %v", args, err)
	}
	o, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	require.Equal(t, ":4433", o.listen)
	require.Equal(t, "fresh-latest", o.kvBucket)
	require.Equal(t, "fresh-uploads", o.objBucket)
	require.Equal(t, "127.0.0.1:9464", o.metrics)
	require.Equal(t, "fresh-monitor", o.natsName)

	_, err = parseFlags([]string{"-nats", "nats://x:4222", "-nats-routes", "nats-route://a:6222"}, io.Discard)
	require.ErrorContains(t, err, "-nats and -nats-routes")
	o, err = parseFlags([]string{"-nats-cluster", "127.0.0.1:6222", "-nats-routes", "nats-route://a:6222, nats-route://b:6222"}, io.Discard)
	require.NoError(t, err)
	require.Len(t, o.natsRoutes, 2)
	require.Equal(t, "b:6222", o.natsRoutes[1].Host)
	require.Equal(t, "fresh", o.natsClusterName)
	require.Regexp(t, `^fresh-\S+-6222$`, o.natsName, "named by host and cluster port")
}

// Three fresh-monitors with -nats-cluster and -nats-routes are one
// JetStream cluster: the buckets one creates have three replicas, and an
// update one stores is read through another's server.
func TestRunThreeAsACluster(t *testing.T) {
	if testing.Short() {
		t.Skip("three servers forming a cluster: seconds")
	}
	var routes []string
	var ports []string
	for range 3 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		_, port, _ := net.SplitHostPort(l.Addr().String())
		l.Close()
		ports = append(ports, port)
		routes = append(routes, "nats-route://127.0.0.1:"+port)
	}
	ctx, cancel := context.WithCancel(context.Background())
	type node struct {
		data           string
		stdout, stderr fleettest.Buffer
		done           chan error
	}
	nodes := make([]*node, 3)
	for i := range nodes {
		n := &node{data: t.TempDir(), done: make(chan error, 1)}
		nodes[i] = n
		go func() {
			n.done <- run(ctx, []string{"-listen", "127.0.0.1:0", "-nats-listen", "127.0.0.1:0", "-metrics", "127.0.0.1:0", "-data", n.data,
				"-nats-cluster", "127.0.0.1:" + ports[i], "-nats-routes", strings.Join(routes, ","), "-replicas", "3"}, &n.stdout, &n.stderr)
		}()
	}
	t.Cleanup(func() { // registered after t.TempDir: runs before the directories go
		cancel()
		for _, n := range nodes {
			select {
			case <-n.done:
			case <-time.After(20 * time.Second):
			}
		}
	})
	metricsRE := regexp.MustCompile(`metrics at (http://\S+)/metrics`)
	listenRE := regexp.MustCompile(`listening on (\S+) `)
	clientsRE := regexp.MustCompile(`clients at (\S+)`)
	for i, n := range nodes {
		require.Eventually(t, func() bool { return listenRE.MatchString(n.stdout.String()) }, 60*time.Second, 10*time.Millisecond,
			"node %d: no listening line: %s\n%s", i, n.stdout.String(), n.stderr.String())
		require.Contains(t, n.stdout.String(), "in cluster \"fresh\"")
		base := metricsRE.FindStringSubmatch(n.stdout.String())[1]
		require.Eventually(t, func() bool {
			select {
			case err := <-n.done:
				n.done <- err
				require.NoError(t, err, "node %d ended: %s", i, n.stderr.String())
			default:
			}
			resp, err := http.Get(base + "/readyz")
			if err != nil {
				return false // shutting down: the next round says why
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}, 30*time.Second, 20*time.Millisecond, "node %d not ready (the buckets not there): %s", i, n.stderr.String())
	}
	addr := listenRE.FindStringSubmatch(nodes[0].stdout.String())[1]
	caPEM, err := os.ReadFile(filepath.Join(nodes[0].data, "dev-ca.pem"))
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
	defer dcancel()
	conn, err := transport.Dial(dctx, addr, transport.Config{TLS: &tls.Config{RootCAs: pool, ServerName: "localhost"}})
	require.NoError(t, err)
	defer conn.Abort()
	require.NoError(t, conn.SendUpdate([]byte("clustered")))

	nc, err := nats.Connect(clientsRE.FindStringSubmatch(nodes[2].stdout.String())[1])
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	var st jetstream.Stream
	require.Eventually(t, func() bool { // the monitors create the buckets once they listen
		st, err = js.Stream(ctx, "KV_fresh-latest")
		return err == nil
	}, 10*time.Second, 10*time.Millisecond, "no KV bucket: %v", err)
	require.Equal(t, 3, st.CachedInfo().Config.Replicas)
	var ci *jetstream.ClusterInfo
	require.Eventually(t, func() bool { // elected a moment after its creation
		info, err := st.Info(ctx)
		if err == nil && info.Cluster != nil && info.Cluster.Leader != "" {
			ci = info.Cluster
		}
		return ci != nil
	}, 10*time.Second, 10*time.Millisecond, "the KV stream has no leader")
	peers := map[string]bool{ci.Leader: true}
	for _, r := range ci.Replicas {
		peers[r.Name] = true
	}
	require.Len(t, peers, 3, "a leader and two replicas: %+v", ci)
	requireOnlyRecord(t, js, "fresh-latest", "clustered", "the update is not in the bucket read through another member")
	cancel()
	for i, n := range nodes {
		select {
		case err := <-n.done:
			n.done <- err // for the cleanup
			require.NoError(t, err, "node %d: %s", i, n.stderr.String())
		case <-time.After(20 * time.Second):
			t.Fatalf("node %d: run did not return after its context ended", i)
		}
	}
}

// With -nats the command embeds nothing and stores into that server.
func TestRunWithExternalNATS(t *testing.T) {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true,
		StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	require.NoError(t, err)
	go ns.Start()
	require.True(t, ns.ReadyForConnections(10*time.Second))
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()

	data := t.TempDir()
	r := startRun(t, "-listen", "127.0.0.1:0", "-nats", ns.ClientURL(), "-metrics", "off", "-data", data,
		"-kv-bucket", "latest-test")
	require.Contains(t, r.stdout.String(), "storing into the NATS server at")
	require.NotContains(t, r.stdout.String(), "embedded NATS server")
	addr := r.addr
	pool := devCAPool(t, data)
	ctx := context.Background()
	dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
	defer dcancel()
	conn, err := transport.Dial(dctx, addr, transport.Config{TLS: &tls.Config{RootCAs: pool, ServerName: "localhost"}})
	require.NoError(t, err)
	defer conn.Abort()
	require.NoError(t, conn.SendUpdate([]byte("external")))

	nc, err := nats.Connect(ns.ClientURL())
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	// No client certificate: the device is named by its address.
	requireOnlyRecord(t, js, "latest-test", "external", "the update is not in the external server's bucket")
	r.stop(t)
}

// requireOnlyRecord waits until bucket holds one key, whose record's
// payload is payload.
func requireOnlyRecord(t *testing.T, js jetstream.JetStream, bucket, payload, msg string) {
	t.Helper()
	ctx := context.Background()
	want := `"payload":"` + base64.StdEncoding.EncodeToString([]byte(payload)) + `"`
	require.Eventually(t, func() bool {
		kv, err := js.KeyValue(ctx, bucket)
		if err != nil {
			return false
		}
		keys, err := kv.Keys(ctx)
		if err != nil || len(keys) != 1 {
			return false
		}
		e, err := kv.Get(ctx, keys[0])
		return err == nil && strings.Contains(string(e.Value()), want)
	}, 10*time.Second, 10*time.Millisecond, msg)
}
