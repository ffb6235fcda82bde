// Package monitor is the receiving side of a fleet of fresh agents that
// stores into NATS JetStream: every device's freshest status update in a
// key-value bucket (one revision per key), its uploads in an object
// store, and each update on the core subject fresh.update.<key> for live
// subscribers. cmd/fresh-monitor runs it as a service; embed it in a
// server of your own with New and Run, giving it a transport.Listener and
// a jetstream.JetStream (an embedded nats-server or a real cluster: the
// client code is the same).
//
// A device is named by its TLS client certificate's CommonName (mutual
// TLS: give the Listener's Config.TLS a ClientCAs pool and
// RequireAndVerifyClientCert), or by its address without one (Config.
// DeviceName overrides both). Its KV key and subject token is Key(name).
// A name must fit NATS's limits: at most MaxNameLength characters, valid
// UTF-8 without control characters (CheckName; see names.go). Give the
// Listener's transport.Config.VerifyPeer VerifyPeerName and a device with
// another name is refused at the handshake, counted under
// fresh_handshakes_failed_total{reason="refused"}; one that gets through
// all the same (another VerifyPeer, a Config.DeviceName of your own) is
// closed at once with CodeNameRefused and counted under
// fresh_connections_refused_total. Either way nothing of it reaches NATS.
//
// Updates. Each update ReadUpdate returns is stored as a Record (JSON) in
// the KV bucket under the device's key, published to the bucket's subject
// $KV.<bucket>.<key> with the generation and arrival times also in the
// headers HeaderGenerated and HeaderArrived (a KV Put carries no headers,
// and a KV watcher does not see them, so the times are in the value too).
// The store is written no faster than it confirms: one write in flight per
// device, only the newest update pending behind it (see latest.go), so an
// older update is never stored over a newer one. Each write is conditional
// on the key's last message being the one the monitor knows, so that holds
// across monitors too: a record another monitor (or this one before a
// restart) wrote is read and replaced only by a newer update.
//
// Uploads. A connection's stream is stored as one object named
// ObjectName(device, start) (written by the monitor in the object store's
// layout, see objput.go) and committed to the agent (Conn.Commit) only
// once the object store has acknowledged all of it, its info message
// included; on a store failure the connection is closed with
// CodeStorageFailed and the reason, so an agent never reports success for
// bytes that were not stored.
//
// Crash consistency. Whenever a monitor process dies (SIGKILL, a crash),
// the store holds each upload either as a committed object, byte-exact,
// or not at all once a monitor has swept it. (A power cut is JetStream's
// matter: it may lose what the server had not yet synced to disk, every 2
// minutes by default; nats-server's sync_always closes that window.) Each
// upload is staged: a record naming its chunks and its owner (a random ID
// per store the monitor opens) is written on the object's info subject
// before the first chunk, and the object's info replaces it only while it
// stands (a conditional write). Every monitor answers on
// _fresh.owner.<its ID> whether an upload is its own and in progress; a
// dead monitor's subscription is gone, so a request meets "no
// responders". At start and every 10 minutes each monitor sweeps the
// object store: it removes the staging record of each upload whose owner
// is gone (up to the record's own sequence, so that a commit that won the
// race stays, and one after it fails its condition), then the chunks no
// record names. Several monitors may share the store: a live upload of
// another is left alone. The comment at the top of staging.go has the
// details and the order of the steps.
//
// Isolation. Each device's writes go on their own (one writer per device,
// one upload per connection), and a failed one, counted and logged, fails
// that device's write alone: the next device's write goes on. What all
// devices share is the NATS connection: nats.go reconnects it by itself
// when the server or the network drops it, and a connection nats.go
// closes for good (after some of the server's errors) is replaced with
// one from Config.Reconnect (reconnect.go). While it is down, Ready says
// false and the writes fail; the first write after it is back is stored.
package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/internal/units"
	"github.com/fresh-udp/fresh/transport"
)

// Defaults of Config.
const (
	DefaultKVBucket     = "fresh-latest"
	DefaultObjectBucket = "fresh-uploads"
	DefaultStoreTimeout = 5 * time.Second
	// SubjectPrefix is the core subject updates are published on: the
	// device's key is its last token.
	SubjectPrefix = "fresh.update."
)

// Config configures a Monitor. Listener and JetStream are required.
type Config struct {
	// Listener accepts the agents. Run closes it when it returns.
	Listener *transport.Listener
	// JetStream is where the monitor stores: jetstream.New over a
	// nats.Conn to an embedded server or a cluster. A JetStream with a
	// domain or API prefix is not supported (updates are published to
	// the bucket's default subject). Its NATS user needs to publish and
	// subscribe on _fresh.owner.> besides the buckets' subjects: the
	// monitors' questions about each other's uploads (see Crash
	// consistency).
	JetStream jetstream.JetStream
	// KVBucket is the key-value bucket of the freshest update per device
	// (DefaultKVBucket if empty), created with one revision per key if it
	// does not exist; ObjectBucket the object store of uploads
	// (DefaultObjectBucket if empty). Buckets that exist are used as they
	// are configured.
	KVBucket, ObjectBucket string
	// Replicas of both buckets when the monitor creates them (1 if 0; 3
	// on a three-node cluster).
	Replicas int
	// MaxUploadBytes and MaxKVBytes are the byte limits (their streams'
	// MaxBytes) of the object store and the KV bucket when the monitor
	// creates them; 0: none. Give both, their sum within JetStream's
	// storage, so that uploads cannot take the space the devices' updates
	// need: a full object store then fails the upload with
	// CodeStorageFailed, and updates are still stored. JetStream reserves
	// a limit when the bucket is created, and refuses one it has not the
	// room for. Buckets that exist keep their limits (nats stream edit
	// changes them); the monitor warns at start about an object store
	// without one.
	MaxUploadBytes, MaxKVBytes int64
	// StorageHints say what makes room when a store is full, in the
	// monitor's warnings and the reason an upload's agent is given.
	StorageHints StorageHints
	// StoreTimeout bounds one KV write (DefaultStoreTimeout if 0).
	StoreTimeout time.Duration
	// DeviceName names a connection's device; nil names it by its
	// certificate's CommonName, or its address without a certificate.
	DeviceName func(*transport.Conn) string
	// Reconnect, if set, opens a new JetStream (on a new NATS
	// connection) when the one in use has closed for good while Run runs:
	// nats.go reconnects a lost connection by itself, but closes it for
	// good after some of the server's errors (a protocol line over the
	// server's max_control_line, an unknown -ERR, an authorization
	// violation twice in a row), and a closed nats.Conn never comes back.
	// The monitor then opens the buckets through the new one and stores
	// through it; it tries again every second while Reconnect or that
	// fails (closing a connection it got but could not use). The
	// connections Reconnect returns are the caller's to close after Run
	// returns, as JetStream's is. nil: a connection closed for good stays
	// closed, and Ready says false from then on.
	Reconnect func(ctx context.Context) (jetstream.JetStream, error)
	// Logger receives a line per connection accepted and ended, per
	// upload, and per store failure; nil is silent. Rejected handshakes
	// never reach the monitor: the Listener logs them on its own
	// transport.Config.Logger (give it the same one, as fresh-monitor
	// does).
	Logger *slog.Logger
}

// Monitor accepts agents from a Listener and stores what they send in
// JetStream. Its Collector exposes its counters for Prometheus.
type Monitor struct {
	cfg     Config
	log     *slog.Logger
	st      *counters
	latest  *latest
	uploads uploadStore
	nc      *nats.Conn // JetStream's, until Run opens the store
	live    liveStore  // the store on the NATS connection in use
	ready   atomic.Bool
	sweeps  atomic.Int64 // sweeps done, for tests
	// reconnects counts the stores replaced on a new connection.
	reconnects atomic.Int64
	// wrapUploads, set by tests, wraps the object store (to delay or
	// fail it).
	wrapUploads func(uploadStore) uploadStore
	// onWrite, set by tests, is the latest writers' (see latest.onWrite).
	onWrite func(key string, r Record, start time.Time, err error)

	// uploadLog rate-limits the failed uploads' lines (a full store fails
	// every upload; latest has its own for the updates').
	uploadLog *limitedLog
	objLimit  int64 // the object store's byte limit, as opened (-1: none)

	mu    sync.Mutex
	conns map[*transport.Conn]struct{}
}

// New checks cfg and returns a Monitor; Run starts it.
func New(cfg Config) (*Monitor, error) {
	if cfg.Listener == nil {
		return nil, errors.New("monitor: Config.Listener is nil")
	}
	if cfg.JetStream == nil {
		return nil, errors.New("monitor: Config.JetStream is nil")
	}
	if cfg.KVBucket == "" {
		cfg.KVBucket = DefaultKVBucket
	}
	if cfg.ObjectBucket == "" {
		cfg.ObjectBucket = DefaultObjectBucket
	}
	if cfg.Replicas == 0 {
		cfg.Replicas = 1
	}
	if cfg.Replicas < 0 {
		return nil, fmt.Errorf("monitor: Config.Replicas %d: must not be negative", cfg.Replicas)
	}
	if cfg.MaxUploadBytes < 0 || cfg.MaxKVBytes < 0 {
		return nil, fmt.Errorf("monitor: Config.MaxUploadBytes %d, MaxKVBytes %d: must not be negative (0: no limit)", cfg.MaxUploadBytes, cfg.MaxKVBytes)
	}
	h := &cfg.StorageHints
	if h.Uploads == "" {
		h.Uploads = "raise its limit, stream OBJ_" + cfg.ObjectBucket + "'s max bytes, or delete uploads"
	}
	if h.KV == "" {
		h.KV = "raise its limit, stream KV_" + cfg.KVBucket + "'s max bytes"
	}
	if h.JetStream == "" {
		h.JetStream = "raise the server's or the account's JetStream storage, or limit the object store to leave the KV bucket room"
	}
	if cfg.StoreTimeout == 0 {
		cfg.StoreTimeout = DefaultStoreTimeout
	}
	if cfg.StoreTimeout < 0 {
		return nil, fmt.Errorf("monitor: Config.StoreTimeout %v: must not be negative", cfg.StoreTimeout)
	}
	if cfg.DeviceName == nil {
		cfg.DeviceName = PeerName
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Monitor{cfg: cfg, log: log, st: newCounters(), nc: cfg.JetStream.Conn(), uploadLog: newLimitedLog(),
		conns: make(map[*transport.Conn]struct{})}
	return m, nil
}

// PeerName is the CommonName of the certificate the connection's peer
// presented, or its address if it presented none.
func PeerName(conn *transport.Conn) string {
	if st, ok := conn.ConnectionState(); ok && len(st.PeerCertificates) > 0 {
		if cn := st.PeerCertificates[0].Subject.CommonName; cn != "" {
			return cn
		}
	}
	return conn.RemoteAddr().String()
}

// Collector is the monitor's and its listener's counters for a
// prometheus.Registry, read at scrape time.
func (m *Monitor) Collector() prometheus.Collector { return collector{m} }

// Ready says the monitor is accepting agents and its NATS connection is
// up (for a readiness probe).
func (m *Monitor) Ready() bool { return m.ready.Load() && m.conn().IsConnected() }

// Run creates the buckets if they do not exist (trying again for up to
// bucketSetupTimeout while JetStream does not answer, as a cluster that is
// still electing its leader does), then accepts agents until
// ctx ends or the Listener fails. It then closes the Listener (and so
// every connection), waits for the pending writes and returns nil after
// ctx ended, the error otherwise.
func (m *Monitor) Run(ctx context.Context) error {
	defer m.cfg.Listener.Close()
	store, err := m.openBuckets(ctx, m.cfg.JetStream)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while it opened them
		}
		return err
	}
	m.live.cur.Store(store)
	m.latest = newLatest(&m.live, m.cfg.StoreTimeout, m.log, m.st)
	kvLimit := store.maxBytes(store.kvStream)
	m.latest.explain = func(err error) error { return m.whatIsFull(err, true, kvLimit) }
	m.objLimit = store.maxBytes(store.objStream)
	m.latest.onWrite = m.onWrite
	m.uploads = &m.live
	if m.wrapUploads != nil {
		m.uploads = m.wrapUploads(m.uploads)
	}
	// Uploads are staged (staging.go): each store answers the sweeps
	// about its uploads (tryOpenBuckets) until they have all ended, and
	// the object store is swept.
	defer func() {
		if st := m.live.cur.Load(); st.ownerSub != nil {
			_ = st.ownerSub.Unsubscribe()
		}
	}()
	sweepCtx, stopSweeps := context.WithCancel(context.Background())
	var sweeps sync.WaitGroup
	sweeps.Go(func() { m.sweepLoop(sweepCtx) })
	defer func() { stopSweeps(); sweeps.Wait() }()
	m.ready.Store(true)
	defer m.ready.Store(false)
	keepCtx, stopKeeping := context.WithCancel(ctx)
	keeping := make(chan struct{})
	go func() { defer close(keeping); m.keepConnected(keepCtx) }()

	var wg sync.WaitGroup
	defer func() {
		m.cfg.Listener.Close() // ends every connection, so every serve
		wg.Wait()
		m.latest.wait()
		stopKeeping()
		<-keeping
	}()
	for {
		conn, err := m.cfg.Listener.Accept(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("monitor: accept: %w", err)
		}
		wg.Go(func() { m.serve(ctx, conn) })
	}
}

// sweepTimeout bounds one sweep of the object store.
const sweepTimeout = 5 * time.Minute

// sweepLoop sweeps the object store for dead uploads at start and every
// sweepInterval until ctx ends, through the store in use.
func (m *Monitor) sweepLoop(ctx context.Context) {
	for first := true; ; first = false {
		sctx, cancel := context.WithTimeout(ctx, sweepTimeout)
		start := time.Now()
		res, err := m.live.cur.Load().sweep(sctx, m.st)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			m.log.Warn("sweeping the object store for dead uploads failed: trying again later", "bucket", m.cfg.ObjectBucket, "next", sweepInterval, "err", err)
		default:
			level := slog.LevelDebug
			if first || res.uploads > 0 {
				level = slog.LevelInfo
			}
			m.log.Log(ctx, level, "swept the object store for dead uploads", "bucket", m.cfg.ObjectBucket,
				"purged_uploads", res.uploads, "purged_chunks", res.chunks, "purged_bytes", res.bytes,
				"live", res.live, "owner_silent", res.unknown, "unstaged_recent", res.young, "seconds", time.Since(start).Seconds())
		}
		m.sweeps.Add(1)
		select {
		case <-ctx.Done():
			return
		case <-time.After(sweepInterval):
		}
	}
}

// bucketSetupTimeout bounds openBuckets' retries.
const bucketSetupTimeout = time.Minute

// openBuckets opens the buckets, creating the missing ones, and tries
// again while JetStream does not answer in time: a cluster that has just
// formed, or lost the leader of its meta group, answers stream requests
// only once it has elected one, and the monitors of a cluster starting
// together create the same buckets at once, whose requests can wait on
// each other past a request's timeout.
func (m *Monitor) openBuckets(ctx context.Context, js jetstream.JetStream) (*jsStore, error) {
	deadline := time.Now().Add(bucketSetupTimeout)
	for {
		store, err := m.tryOpenBuckets(ctx, js)
		if err == nil || !jetStreamBusy(err) || ctx.Err() != nil || time.Now().After(deadline) {
			return store, err
		}
		m.log.Warn("JetStream does not answer yet: trying again", "err", err)
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(time.Second):
		}
	}
}

// jetStreamBusy says err is JetStream not answering in time, or saying it
// is temporarily unavailable (10008: a cluster without a meta leader), or
// that it has not enough peers for the replicas (10005: "no suitable
// peers for placement, peer offline", which a cluster that has just
// formed or elected a meta leader says until every member has reported
// to it; also what too many -replicas for the cluster says, after
// bucketSetupTimeout then).
func jetStreamBusy(err error) bool {
	var ae *jetstream.APIError
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.As(err, &ae) && (ae.ErrorCode == 10008 || ae.ErrorCode == 10005)
}

func (m *Monitor) tryOpenBuckets(ctx context.Context, js jetstream.JetStream) (*jsStore, error) {
	// Buckets that exist are used as they are (an operator's replicas,
	// limits and placement are theirs); only missing ones are created.
	kv, err := js.KeyValue(ctx, m.cfg.KVBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: m.cfg.KVBucket, History: 1, Replicas: m.cfg.Replicas, MaxBytes: m.cfg.MaxKVBytes,
			Description: "fresh: the freshest status update of each device",
		})
		err = m.reservation(err, m.cfg.MaxKVBytes)
		if errors.Is(err, jetstream.ErrBucketExists) {
			// Another monitor created it between our lookup and our
			// create, with limits of its own (each derives its defaults
			// from its own disk): use it as it is, as any bucket that
			// exists.
			kv, err = js.KeyValue(ctx, m.cfg.KVBucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("monitor: KV bucket %q: %w", m.cfg.KVBucket, err)
	}
	if st, err := kv.Status(ctx); err == nil && st.History() != 1 {
		m.log.Warn("the KV bucket keeps more than the newest update of each device", "bucket", m.cfg.KVBucket, "history", st.History())
	}
	obs, err := js.ObjectStore(ctx, m.cfg.ObjectBucket)
	created := errors.Is(err, jetstream.ErrBucketNotFound)
	if created {
		obs, err = js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket: m.cfg.ObjectBucket, Replicas: m.cfg.Replicas, MaxBytes: m.cfg.MaxUploadBytes,
			Description: "fresh: the devices' uploads",
		})
		err = m.reservation(err, m.cfg.MaxUploadBytes)
		if errors.Is(err, jetstream.ErrBucketExists) {
			obs, err = js.ObjectStore(ctx, m.cfg.ObjectBucket) // created meanwhile by another monitor, as the KV bucket above
			created = false
		}
	}
	if err != nil {
		return nil, fmt.Errorf("monitor: object store %q: %w", m.cfg.ObjectBucket, err)
	}
	s, err := newJSStore(ctx, js, kv, obs, m.cfg.StoreTimeout)
	if err != nil {
		return nil, err
	}
	// Its uploads are staged under its owner ID: it answers for them on
	// its connection from now on (a store is opened once).
	s.log = m.log
	if s.ownerSub, err = s.answerOwners(); err != nil {
		return nil, err
	}
	if !created {
		switch limit := s.maxBytes(s.objStream); {
		case limit <= 0:
			m.log.Warn("the object store has no byte limit: one upload can use up JetStream's storage and stop every device's updates; "+
				"it exists, so it is used as it is: give it a limit that leaves the KV bucket room",
				"bucket", m.cfg.ObjectBucket, "fix", "nats stream edit OBJ_"+m.cfg.ObjectBucket+" --max-bytes SIZE")
		case m.cfg.MaxUploadBytes > 0 && limit != m.cfg.MaxUploadBytes:
			m.log.Info("the object store exists: its own byte limit stays", "bucket", m.cfg.ObjectBucket, "limit", limit, "given", m.cfg.MaxUploadBytes)
		}
	}
	return s, nil
}

// reservation explains JetStream's refusal to create a bucket with a
// byte limit it has not the storage left to reserve.
func (m *Monitor) reservation(err error, limit int64) error {
	var ae *jetstream.APIError
	if errors.As(err, &ae) && ae.ErrorCode == errCodeStorageReservation {
		return fmt.Errorf("creating it with a byte limit of %s: JetStream has less storage left to reserve (its limit minus the other streams' limits): give a smaller limit: %w",
			units.FormatSize(cc.ByteCount(limit)), err)
	}
	return err
}

// serve takes one agent's updates and upload until its connection ends.
func (m *Monitor) serve(ctx context.Context, conn *transport.Conn) {
	device := m.cfg.DeviceName(conn)
	if err := CheckName(device); err != nil {
		m.refuse(conn, err)
		return
	}
	key := Key(device)
	log := m.log.With("device", device, "peer", conn.RemoteAddr().String())
	m.mu.Lock()
	m.conns[conn] = struct{}{}
	m.mu.Unlock()
	m.st.accepted.Add(1)
	resumed := false
	if st, ok := conn.ConnectionState(); ok {
		resumed = st.DidResume
	}
	log.Info("agent connected", "key", key, "resumed", resumed)

	uploadDone := make(chan struct{})
	go func() {
		defer close(uploadDone)
		m.receiveUpload(ctx, conn, device, log)
	}()
	var taken int64
	for {
		u, err := conn.ReadUpdate(ctx)
		if err != nil {
			break // the connection ended (io.EOF: normally), or ctx did
		}
		taken++
		m.st.updatesRead.Add(1)
		m.st.ageSeconds.Observe(max(u.Age, 0).Seconds())
		r := Record{Device: device, Generated: u.Generated, Arrived: time.Now(), Payload: u.Payload}
		m.publishLive(key, r, log)
		m.latest.offer(key, r)
	}
	conn.Close() // after ctx ended; nothing once the connection has
	<-uploadDone
	<-conn.Done()

	s := conn.Stats()
	m.st.mu.Lock()
	m.mu.Lock()
	delete(m.conns, conn)
	m.mu.Unlock()
	m.st.ended.add(s)
	m.st.mu.Unlock()
	m.st.closed.Add(1)
	attrs := []any{"updates", taken, "upload_bytes", s.StreamBytesReceived, "age_mean", s.Age.Mean}
	if err := conn.Err(); err != nil && !errors.Is(err, transport.ErrPeerClosed) && !errors.Is(err, transport.ErrClosed) {
		log.Info("agent disconnected", append(attrs, "err", err)...)
	} else {
		log.Info("agent disconnected", attrs...)
	}
}

// CodeNameRefused is the application close code (Conn.CloseWithError)
// of a connection the monitor ends at once because it cannot store under
// its device's name (CheckName); the reason says why. With VerifyPeerName
// on the Listener such a device is refused at the handshake instead.
const CodeNameRefused uint32 = 2

// refuse closes a connection whose device name the monitor cannot take,
// before anything of it reaches NATS.
func (m *Monitor) refuse(conn *transport.Conn, err error) {
	m.st.refused.Add(1)
	m.log.Warn("device refused: closing its connection", "peer", conn.RemoteAddr().String(), "err", err)
	_ = conn.CloseWithError(CodeNameRefused, err.Error())
}

// publishLive sends the update on fresh.update.<key> for live
// subscribers: a core NATS publish, at most once, never waiting for the
// store.
func (m *Monitor) publishLive(key string, r Record, log *slog.Logger) {
	msg, err := recordMsg(SubjectPrefix+key, r)
	if err == nil {
		err = m.conn().PublishMsg(msg)
	}
	if err != nil {
		log.Debug("publishing an update failed", "err", err)
	}
}

// jsStore is the JetStream behind the monitor.
type jsStore struct {
	js        jetstream.JetStream
	nc        *nats.Conn
	kvSubject string           // "$KV.<bucket>."
	kvStream  jetstream.Stream // the bucket's stream, to read a key's last message
	objBucket string
	objStream jetstream.Stream    // the object store's stream, to purge a failed upload
	pubJS     jetstream.JetStream // the uploads' asynchronous publishes (see objput.go)
	timeout   time.Duration       // a flush's, an acknowledgement's bound
	// owner is this monitor's ID in its staging records (staging.go),
	// inProgress its uploads not yet committed or removed.
	owner      string
	inProgress owners
	ownerSub   *nats.Subscription // answerOwners'; nil until the monitor opens it
	log        *slog.Logger       // the sweeps' lines
	grace      time.Duration      // unstagedGrace, but in tests

	mu  sync.Mutex
	seq map[string]uint64 // per key, the stream sequence of the last message this store wrote or read
}

func newJSStore(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, obs jetstream.ObjectStore, timeout time.Duration) (*jsStore, error) {
	st, err := js.Stream(ctx, "KV_"+kv.Bucket())
	if err != nil {
		return nil, fmt.Errorf("monitor: the stream of KV bucket %q: %w", kv.Bucket(), err)
	}
	ost, err := obs.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("monitor: object store: %w", err)
	}
	objStream, err := js.Stream(ctx, "OBJ_"+ost.Bucket())
	if err != nil {
		return nil, fmt.Errorf("monitor: the stream of object store %q: %w", ost.Bucket(), err)
	}
	// Its own context: unacknowledged publishes expire after timeout
	// whatever the caller's JetStream is configured with.
	pubJS, err := jetstream.New(js.Conn(), jetstream.WithPublishAsyncTimeout(timeout))
	if err != nil {
		return nil, err
	}
	return &jsStore{js: js, nc: js.Conn(), kvSubject: "$KV." + kv.Bucket() + ".", kvStream: st,
		objBucket: ost.Bucket(), objStream: objStream, pubJS: pubJS,
		timeout: timeout, owner: newID(), inProgress: owners{live: make(map[string]struct{})},
		log: slog.New(slog.DiscardHandler), grace: unstagedGrace, seq: make(map[string]uint64)}, nil
}

// errNotNewer: the bucket holds a record of the device at least as new as
// the one to write, written by another writer (a second monitor, or this
// one's previous life); it is kept.
var errNotNewer = errors.New("the bucket holds a newer update of the device")

// putLatest is a KV put with headers: a JetStream publish to the key's
// subject in the bucket's stream, which is what KeyValue.Put does, plus
// the headers. It is conditional on the key's last message being the one
// this store knows (Nats-Expected-Last-Subject-Sequence): another writer
// of the same key (a second monitor the device reached, this monitor
// before a restart) makes it fail, and the store then reads that
// writer's record and writes over it only if r is newer. So an older
// update is never stored over a newer one even across monitors, at the
// cost of one read per device after each restart or foreign write.
func (s *jsStore) putLatest(ctx context.Context, key string, r Record) error {
	subject := s.kvSubject + key
	msg, err := recordMsg(subject, r)
	if err != nil {
		return err
	}
	s.mu.Lock()
	seq := s.seq[key] // 0 if unknown: expect no message, and learn otherwise
	s.mu.Unlock()
	for range 4 {
		ack, err := s.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(seq))
		if err == nil {
			s.setSeq(key, ack.Sequence)
			return nil
		}
		if !wrongLastSequence(err) {
			return err
		}
		last, theirs, err := s.lastRecord(ctx, subject)
		if err != nil {
			return err
		}
		seq = last
		if theirs != nil && !r.Generated.After(theirs.Generated) {
			s.setSeq(key, last)
			return errNotNewer
		}
	}
	return fmt.Errorf("key %s: other writers kept changing it", key)
}

// maxBytes is a bucket's stream's byte limit, as opened; -1 if none.
func (s *jsStore) maxBytes(st jetstream.Stream) int64 {
	if info := st.CachedInfo(); info != nil {
		return info.Config.MaxBytes
	}
	return -1
}

func (s *jsStore) setSeq(key string, seq uint64) {
	s.mu.Lock()
	s.seq[key] = seq
	s.mu.Unlock()
}

// wrongLastSequence says err is JetStream refusing a conditional publish
// (10071; 10164 on a replicated stream).
func wrongLastSequence(err error) bool {
	var ae *jetstream.APIError
	return errors.As(err, &ae) &&
		(ae.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || ae.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// lastRecord is the sequence of subject's last message in the bucket's
// stream (0 if none) and the Record it holds; nil for a delete or purge
// marker, or a value that is not a Record, which any update may replace.
func (s *jsStore) lastRecord(ctx context.Context, subject string) (uint64, *Record, error) {
	m, err := s.kvStream.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, err
	}
	if op := m.Header.Get("KV-Operation"); op != "" {
		return m.Sequence, nil, nil // DEL or PURGE
	}
	var r Record
	if json.Unmarshal(m.Data, &r) != nil {
		return m.Sequence, nil, nil
	}
	return m.Sequence, &r, nil
}

func (s *jsStore) flush(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return s.nc.FlushWithContext(ctx)
}
