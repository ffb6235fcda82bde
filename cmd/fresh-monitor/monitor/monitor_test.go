package monitor

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/transport"
	"github.com/fresh-udp/fresh/transport/devcert"
)

// The tests run the real parts: an embedded nats-server with JetStream
// in a temporary directory, the monitor on a loopback UDP port, agents
// dialling it with certificates of their own, and nats.go watchers
// reading what the monitor stored.

// startNATS starts an embedded JetStream server, its options changed by
// opts, and connects to it.
func startNATS(t *testing.T, opts ...func(*server.Options)) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	o := &server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true,
		StoreDir: t.TempDir(), NoLog: true, NoSigs: true}
	for _, opt := range opts {
		opt(o)
	}
	ns, err := server.NewServer(o)
	require.NoError(t, err)
	go ns.Start()
	require.True(t, ns.ReadyForConnections(10*time.Second), "nats-server not ready")
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	nc, err := nats.Connect(ns.ClientURL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	// A short publish timeout: a store failure that shows as a missing
	// acknowledgement fails in a second, not the default 5 s.
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(time.Second))
	require.NoError(t, err)
	return nc, js
}

// pki is a CA, the monitor's certificate and one client certificate per
// device name.
type pki struct {
	ca      *devcert.CA
	server  tls.Certificate
	clients map[string]tls.Certificate
}

func newPKI(t *testing.T, names ...string) *pki {
	t.Helper()
	ca, err := devcert.NewCA("test CA")
	require.NoError(t, err)
	srv, err := ca.Issue("localhost", "localhost", "127.0.0.1")
	require.NoError(t, err)
	p := &pki{ca: ca, server: srv, clients: map[string]tls.Certificate{}}
	for _, n := range names {
		c, err := ca.Issue(n)
		require.NoError(t, err)
		p.clients[n] = c
	}
	return p
}

// testMonitor is a running Monitor.
type testMonitor struct {
	*Monitor
	addr string
	js   jetstream.JetStream
}

// startMonitor runs a Monitor requiring client certificates of p's CA,
// storing through js, until the test ends.
func startMonitor(t *testing.T, p *pki, js jetstream.JetStream, opts ...func(*Monitor)) *testMonitor {
	t.Helper()
	ln, err := transport.Listen("127.0.0.1:0", transport.Config{TLS: &tls.Config{
		Certificates: []tls.Certificate{p.server},
		ClientAuth:   tls.RequireAndVerifyClientCert, ClientCAs: p.ca.Pool(),
	}})
	require.NoError(t, err)
	m, err := New(Config{Listener: ln, JetStream: js, Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil)),
		StoreTimeout: 2 * time.Second})
	require.NoError(t, err)
	for _, o := range opts {
		o(m)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after its context ended")
		}
	})
	require.Eventually(t, m.Ready, 30*time.Second, 5*time.Millisecond, "monitor not ready (its buckets)")
	return &testMonitor{Monitor: m, addr: ln.Addr().String(), js: js}
}

// testWriter sends the monitor's log lines to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// dial connects an agent with the certificate of name.
func (m *testMonitor) dial(t *testing.T, p *pki, name string) *transport.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := transport.Dial(ctx, m.addr, transport.Config{TLS: &tls.Config{
		RootCAs: p.ca.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{p.clients[name]},
	}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Abort() })
	return conn
}

func (m *testMonitor) kv(t *testing.T) jetstream.KeyValue {
	t.Helper()
	kv, err := m.js.KeyValue(context.Background(), DefaultKVBucket)
	require.NoError(t, err)
	return kv
}

func (m *testMonitor) objects(t *testing.T) jetstream.ObjectStore {
	t.Helper()
	obs, err := m.js.ObjectStore(context.Background(), DefaultObjectBucket)
	require.NoError(t, err)
	return obs
}

func decode(t *testing.T, e jetstream.KeyValueEntry) Record {
	t.Helper()
	var r Record
	require.NoError(t, json.Unmarshal(e.Value(), &r), "%s", e.Value())
	return r
}

// One agent's updates reach a KV watcher in generation order, the newest
// last, each with the time the agent generated it, and reach a live
// subscriber of fresh.update.<key> with the times in the headers.
func TestUpdatesReachKVWatcherNewestLast(t *testing.T) {
	nc, js := startNATS(t)
	p := newPKI(t, "sensor-1")
	m := startMonitor(t, p, js)

	live, err := nc.SubscribeSync(SubjectPrefix + Key("sensor-1"))
	require.NoError(t, err)
	conn := m.dial(t, p, "sensor-1")
	const n = 20
	sent := make([]time.Time, n)
	for i := range n {
		sent[i] = time.Now()
		require.NoError(t, conn.SendUpdate(fmt.Appendf(nil, "reading %d", i)))
		time.Sleep(20 * time.Millisecond) // slower than the regulator: each one goes
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w, err := m.kv(t).Watch(ctx, Key("sensor-1"))
	require.NoError(t, err)
	defer w.Stop()
	var got []Record
	for e := range w.Updates() {
		if e == nil {
			continue // the end of the initial values
		}
		r := decode(t, e)
		got = append(got, r)
		if string(r.Payload) == fmt.Sprintf("reading %d", n-1) {
			break
		}
	}
	require.NotEmpty(t, got, "the watcher saw no update")
	last := got[len(got)-1]
	require.Equal(t, fmt.Sprintf("reading %d", n-1), string(last.Payload), "the newest last")
	require.Equal(t, "sensor-1", last.Device)
	for i := 1; i < len(got); i++ {
		require.True(t, got[i].Generated.After(got[i-1].Generated), "generation times only grow")
	}
	// Same host, so the corrected generation time is the send time, to
	// the clock estimator's error.
	require.WithinDuration(t, sent[n-1], last.Generated, 100*time.Millisecond)
	require.False(t, last.Arrived.Before(last.Generated.Add(-10*time.Millisecond)), "arrived after generated")

	// The bucket keeps one revision: the newest.
	e, err := m.kv(t).Get(ctx, Key("sensor-1"))
	require.NoError(t, err)
	require.Equal(t, last.Payload, decode(t, e).Payload)
	st, err := js.Stream(ctx, "KV_"+DefaultKVBucket)
	require.NoError(t, err)
	msg, err := st.GetLastMsgForSubject(ctx, "$KV."+DefaultKVBucket+"."+Key("sensor-1"))
	require.NoError(t, err)
	require.Equal(t, last.Generated.UTC().Format(time.RFC3339Nano), msg.Header.Get(HeaderGenerated))
	require.Equal(t, "sensor-1", msg.Header.Get(HeaderDevice))

	lm, err := live.NextMsg(5 * time.Second)
	require.NoError(t, err)
	require.Equal(t, "sensor-1", lm.Header.Get(HeaderDevice))
	require.NotEmpty(t, lm.Header.Get(HeaderGenerated))
}

// Three agents with three certificates are three devices: three keys,
// each holding its own device's newest update.
func TestThreeAgentsThreeKeys(t *testing.T) {
	_, js := startNATS(t)
	names := []string{"sensor-1", "sensor-2", "pump.7"}
	p := newPKI(t, names...)
	m := startMonitor(t, p, js)
	for _, name := range names {
		conn := m.dial(t, p, name)
		require.NoError(t, conn.SendUpdate([]byte("hello from "+name)))
	}
	kv := m.kv(t)
	want := []string{Key("sensor-1"), Key("sensor-2"), Key("pump.7")}
	require.Eventually(t, func() bool {
		keys, err := kv.Keys(context.Background())
		return err == nil && len(keys) == 3
	}, 10*time.Second, 10*time.Millisecond)
	keys, err := kv.Keys(context.Background())
	require.NoError(t, err)
	require.ElementsMatch(t, want, keys)
	for _, name := range names {
		e, err := kv.Get(context.Background(), Key(name))
		require.NoError(t, err)
		r := decode(t, e)
		require.Equal(t, name, r.Device)
		require.Equal(t, "hello from "+name, string(r.Payload))
	}
}

// upload writes data on conn and half-closes the stream.
func upload(t *testing.T, conn *transport.Conn, data []byte) {
	t.Helper()
	_, err := conn.Write(data)
	require.NoError(t, err)
	require.NoError(t, conn.CloseWrite())
}

// An upload lands in the object store whole (its SHA-256 matches), and
// the agent's WaitCommitted returns nil only once the object is there.
func TestUploadStoredThenCommitted(t *testing.T) {
	_, js := startNATS(t)
	p := newPKI(t, "camera-3")
	m := startMonitor(t, p, js)
	conn := m.dial(t, p, "camera-3")
	data := make([]byte, 5<<20)
	_, _ = rand.Read(data)

	written := make(chan struct{})
	go func() { defer close(written); upload(t, conn, data) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, conn.WaitCommitted(ctx, int64(len(data))))
	// Committed: the object must be there already, whole.
	obs := m.objects(t)
	infos, err := obs.List(ctx)
	require.NoError(t, err, "no object when the upload was committed")
	require.Len(t, infos, 1)
	info := infos[0]
	require.Equal(t, "camera-3", info.Metadata["device"])
	require.Regexp(t, `^camera-3/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`, info.Name)
	require.EqualValues(t, len(data), info.Size)
	got, err := obs.GetBytes(ctx, info.Name)
	require.NoError(t, err)
	require.Equal(t, sha256.Sum256(data), sha256.Sum256(got))
	<-written
	require.NoError(t, conn.Close())
	require.EqualValues(t, 1, m.st.uploadsStored.Load())
	require.EqualValues(t, len(data), m.st.uploadBytes.Load())
}

// gatedUploads holds each stored upload's Put until gate is closed: the
// object exists, but the store has not yet said so.
type gatedUploads struct {
	uploadStore
	gate   chan struct{}
	stored chan struct{}
}

func (g *gatedUploads) putUpload(ctx context.Context, name, device string, r io.Reader) (uint64, error) {
	n, err := g.uploadStore.putUpload(ctx, name, device, r)
	close(g.stored)
	<-g.gate
	return n, err
}

// The commit waits for the store's confirmation, not for the bytes to
// have been read or even written: while Put has not returned, the
// agent's WaitCommitted does not return and nothing is committed.
func TestUploadCommittedOnlyAfterPutReturns(t *testing.T) {
	_, js := startNATS(t)
	p := newPKI(t, "camera-3")
	gate, stored := make(chan struct{}), make(chan struct{})
	var open sync.Once
	t.Cleanup(func() { open.Do(func() { close(gate) }) }) // before the monitor's cleanup, should the test fail
	m := startMonitor(t, p, js, func(m *Monitor) {
		m.wrapUploads = func(s uploadStore) uploadStore {
			return &gatedUploads{uploadStore: s, gate: gate, stored: stored}
		}
	})
	conn := m.dial(t, p, "camera-3")
	data := make([]byte, 1<<20)
	_, _ = rand.Read(data)
	upload(t, conn, data)
	<-stored
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	err := conn.WaitCommitted(ctx, int64(len(data)))
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "committed before the store confirmed")
	require.Zero(t, conn.Committed())
	open.Do(func() { close(gate) })
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, conn.WaitCommitted(ctx, int64(len(data))))
}

// A store that fails mid-upload makes the agent's WaitCommitted fail,
// never return nil, with the monitor's reason: here the object store is
// deleted under the monitor, or its NATS connection closed.
func TestUploadStoreFailureFailsWaitCommitted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(t *testing.T, nc *nats.Conn, js jetstream.JetStream)
	}{
		{"object store deleted", func(t *testing.T, _ *nats.Conn, js jetstream.JetStream) {
			require.NoError(t, js.DeleteObjectStore(context.Background(), DefaultObjectBucket))
		}},
		{"nats connection closed", func(t *testing.T, nc *nats.Conn, _ jetstream.JetStream) { nc.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc, js := startNATS(t)
			p := newPKI(t, "camera-3")
			m := startMonitor(t, p, js)
			conn := m.dial(t, p, "camera-3")
			half := make([]byte, 2<<20)
			_, _ = rand.Read(half)
			_, err := conn.Write(half)
			require.NoError(t, err)
			// The monitor is storing the first half; then the store breaks.
			require.Eventually(t, func() bool { return m.st.uploadBytes.Load() >= 1<<20 }, 10*time.Second, time.Millisecond)
			tc.break_(t, nc, js)
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			done := make(chan struct{})
			go func() {
				defer close(done)
				if _, err := conn.Write(half); err == nil {
					_ = conn.CloseWrite()
				}
			}()
			err = conn.WaitCommitted(ctx, int64(2*len(half)))
			committed := conn.Committed()
			_ = conn.Abort() // ends the writer, should the monitor have stopped reading
			<-done
			require.Error(t, err, "WaitCommitted returned nil although the store failed")
			require.NotErrorIs(t, err, context.DeadlineExceeded, "the monitor must say it failed, not leave the agent waiting")
			var ae *transport.ApplicationError
			require.ErrorAs(t, err, &ae)
			require.Equal(t, CodeStorageFailed, ae.Code)
			require.Contains(t, ae.Reason, "storing the upload")
			require.Zero(t, committed)
			require.EqualValues(t, 1, m.st.uploadsFailed.Load())
		})
	}
}

// Two writers of one key (two monitors a device reached, or a monitor and
// its previous life) never store an older update over a newer one: a
// write whose expected last message is not the key's reads the other
// writer's record and keeps it if it is not older.
func TestStoreKeepsNewerRecordOfAnotherWriter(t *testing.T) {
	_, js := startNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a, b := openTestStore(t, js, time.Second), openTestStore(t, js, time.Second)
	kv, err := js.KeyValue(ctx, DefaultKVBucket)
	require.NoError(t, err)
	t0 := time.Now().UTC()
	rec := func(ms int) Record {
		return Record{Device: "dev", Generated: t0.Add(time.Duration(ms) * time.Millisecond)}
	}
	stored := func() time.Time {
		e, err := kv.Get(ctx, "dev")
		require.NoError(t, err)
		return decode(t, e).Generated
	}

	require.NoError(t, a.putLatest(ctx, "dev", rec(20)))
	require.ErrorIs(t, b.putLatest(ctx, "dev", rec(10)), errNotNewer, "b knows nothing of a's write, and its update is older")
	require.True(t, stored().Equal(rec(20).Generated))
	require.NoError(t, b.putLatest(ctx, "dev", rec(30)), "newer: written over a's")
	require.True(t, stored().Equal(rec(30).Generated))
	require.ErrorIs(t, a.putLatest(ctx, "dev", rec(25)), errNotNewer, "a's last write is no longer the key's")
	require.True(t, stored().Equal(rec(30).Generated))
	require.NoError(t, a.putLatest(ctx, "dev", rec(40)))
	require.NoError(t, a.putLatest(ctx, "dev", rec(50)), "a knows the key's last message again: no read")
	require.True(t, stored().Equal(rec(50).Generated))

	// A deleted key takes any update.
	require.NoError(t, kv.Delete(ctx, "dev"))
	require.NoError(t, b.putLatest(ctx, "dev", rec(1)))
	require.True(t, stored().Equal(rec(1).Generated))
}

// An upload the agent aborts is not stored (the partial object is
// purged), not committed, and counted as aborted.
func TestUploadAbortedNotStored(t *testing.T) {
	_, js := startNATS(t)
	p := newPKI(t, "camera-3")
	m := startMonitor(t, p, js)
	conn := m.dial(t, p, "camera-3")
	part := make([]byte, 2<<20)
	_, _ = rand.Read(part)
	_, err := conn.Write(part)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return m.st.uploadBytes.Load() >= 1<<20 }, 10*time.Second, time.Millisecond)
	require.NoError(t, conn.Abort())
	require.Eventually(t, func() bool { return m.st.uploadsAborted.Load() == 1 }, 10*time.Second, time.Millisecond)
	require.Zero(t, conn.Committed())
	require.Zero(t, m.st.uploadsStored.Load())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = m.objects(t).List(ctx)
	require.ErrorIs(t, err, jetstream.ErrNoObjectsFound, "an aborted upload left an object")
	st, err := js.Stream(ctx, "OBJ_"+DefaultObjectBucket)
	require.NoError(t, err)
	info, err := st.Info(ctx)
	require.NoError(t, err)
	require.Zero(t, info.State.Msgs, "the partial upload's chunks are purged")
}

// Buckets an operator made are used as they are, not reconfigured.
func TestExistingBucketsKeptAsConfigured(t *testing.T) {
	_, js := startNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: DefaultKVBucket, History: 3})
	require.NoError(t, err)
	p := newPKI(t, "sensor-1")
	m := startMonitor(t, p, js)
	st, err := m.kv(t).Status(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 3, st.History())
	m.objects(t) // created, since it did not exist
}

// Bucket setup tries again on what a cluster says while it elects its
// leaders or waits for its members, and not on a refusal that stays.
func TestJetStreamBusy(t *testing.T) {
	for _, tc := range []struct {
		err  error
		busy bool
	}{
		{context.DeadlineExceeded, true},
		{fmt.Errorf("monitor: KV bucket: %w", nats.ErrTimeout), true},
		{jetstream.ErrNoStreamResponse, true},
		{&jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}, true},
		{&jetstream.APIError{Code: 400, ErrorCode: 10005, Description: "no suitable peers for placement, peer offline"}, true},
		{&jetstream.APIError{Code: 500, ErrorCode: 10074, Description: "replicas > 1 not supported in non-clustered mode"}, false},
		{jetstream.ErrBucketNotFound, false},
		{context.Canceled, false},
	} {
		require.Equal(t, tc.busy, jetStreamBusy(tc.err), "%v", tc.err)
	}
}

// lateBuckets is a JetStream on which the buckets look missing at their
// first lookup although another monitor has created them: what a monitor
// sees when several start together and one creates the buckets between
// another's lookup and create.
type lateBuckets struct {
	jetstream.JetStream
	kvHidden, objHidden bool
}

func (j *lateBuckets) KeyValue(ctx context.Context, bucket string) (jetstream.KeyValue, error) {
	if !j.kvHidden {
		j.kvHidden = true
		return nil, jetstream.ErrBucketNotFound
	}
	return j.JetStream.KeyValue(ctx, bucket)
}

func (j *lateBuckets) ObjectStore(ctx context.Context, bucket string) (jetstream.ObjectStore, error) {
	if !j.objHidden {
		j.objHidden = true
		return nil, jetstream.ErrBucketNotFound
	}
	return j.JetStream.ObjectStore(ctx, bucket)
}

// Monitors that start together derive their byte limits from their own
// disks, so the one that loses the race to create a bucket asks for a
// different configuration and JetStream refuses it (10058, the name is in
// use): it must use the bucket the winner made, not fail to start (as
// TestRunThreeAsACluster once did).
func TestBucketsCreatedMeanwhileAreUsed(t *testing.T) {
	_, js := startNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: DefaultKVBucket, History: 1, MaxBytes: 1 << 20})
	require.NoError(t, err)
	_, err = js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: DefaultObjectBucket, MaxBytes: 4 << 20})
	require.NoError(t, err)
	m, err := New(Config{Listener: &transport.Listener{}, JetStream: js, MaxKVBytes: 2 << 20, MaxUploadBytes: 8 << 20})
	require.NoError(t, err)
	late := &lateBuckets{JetStream: js}
	st, err := m.tryOpenBuckets(ctx, late)
	require.NoError(t, err, "a bucket created by another monitor between lookup and create")
	require.True(t, late.kvHidden && late.objHidden, "both lookups went through the race")
	if st.ownerSub != nil {
		require.NoError(t, st.ownerSub.Unsubscribe())
	}
	info, err := js.Stream(ctx, "KV_"+DefaultKVBucket)
	require.NoError(t, err)
	require.EqualValues(t, 1<<20, info.CachedInfo().Config.MaxBytes, "the winner's bucket is used as it is")
}
