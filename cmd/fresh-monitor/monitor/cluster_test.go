package monitor

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/transport"
)

// natsCluster is a JetStream cluster of embedded servers routed to each
// other on loopback, each storing in a directory of its own.
type natsCluster struct {
	servers []*server.Server
	urls    []string // client URLs, by server
}

// freePort is a TCP port on loopback nobody listens on now. Routes must
// be configured before the servers start (JetStream clustering needs
// configured routes, not only gossiped ones), so the cluster ports are
// picked up front.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startCluster starts n servers named n0…n<n-1>, each routed to all, and
// waits for the JetStream meta group to have a leader that knows every
// peer and for every server to be current with it.
func startCluster(t *testing.T, n int) *natsCluster {
	t.Helper()
	routes := make([]*url.URL, n)
	ports := make([]int, n)
	for i := range n {
		ports[i] = freePort(t)
		routes[i] = &url.URL{Scheme: "nats-route", Host: fmt.Sprintf("127.0.0.1:%d", ports[i])}
	}
	c := &natsCluster{}
	for i := range n {
		ns, err := server.NewServer(&server.Options{
			ServerName: fmt.Sprintf("n%d", i), Host: "127.0.0.1", Port: server.RANDOM_PORT,
			JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
			Cluster: server.ClusterOpts{Name: "fresh-test", Host: "127.0.0.1", Port: ports[i]},
			Routes:  routes,
		})
		require.NoError(t, err)
		c.servers = append(c.servers, ns)
		go ns.Start()
	}
	t.Cleanup(func() {
		for _, ns := range c.servers {
			ns.Shutdown()
			ns.WaitForShutdown()
		}
	})
	for _, ns := range c.servers {
		require.True(t, ns.ReadyForConnections(20*time.Second), "%s not ready", ns.Name())
		c.urls = append(c.urls, ns.ClientURL())
	}
	require.Eventually(t, func() bool {
		leaders := 0
		for _, ns := range c.servers {
			if !ns.JetStreamIsCurrent() {
				return false
			}
			if ns.JetStreamIsLeader() {
				leaders++
				if len(ns.JetStreamClusterPeers()) != n {
					return false
				}
			}
		}
		return leaders == 1
	}, 30*time.Second, 50*time.Millisecond, "no JetStream meta leader with %d peers", n)
	return c
}

// role names the servers that lead the meta group and the streams.
func (c *natsCluster) role(ns *server.Server) string {
	var r []string
	if ns.JetStreamIsLeader() {
		r = append(r, "meta leader")
	}
	for _, s := range []string{"KV_" + DefaultKVBucket, "OBJ_" + DefaultObjectBucket} {
		if ns.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, s) {
			r = append(r, s+" leader")
		}
	}
	if len(r) == 0 {
		return "follower"
	}
	return strings.Join(r, ", ")
}

// connect is a client of the cluster that starts at server first and
// fails over to the others (all URLs, in order, quick reconnects).
func (c *natsCluster) connect(t *testing.T, first int) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	urls := []string{c.urls[first]}
	for i, u := range c.urls {
		if i != first {
			urls = append(urls, u)
		}
	}
	nc, err := nats.Connect(strings.Join(urls, ","), nats.DontRandomize(), nats.MaxReconnects(-1),
		nats.ReconnectWait(100*time.Millisecond), nats.ReconnectJitter(0, 0))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(2*time.Second))
	require.NoError(t, err)
	return nc, js
}

// writeEvent is one KV write a monitor's writer finished.
type writeEvent struct {
	mon        int
	key        string
	r          Record
	start, end time.Time
	err        error
}

// writeLog records every KV write of the monitors.
type writeLog struct {
	mu     sync.Mutex
	events []writeEvent
}

func (w *writeLog) hook(mon int) func(*Monitor) {
	return func(m *Monitor) {
		m.cfg.Replicas = 3
		// A store timeout shorter than most elections: writes under way
		// during the failover time out, and the monitor must neither
		// count them as stored nor stop writing the devices' next
		// updates.
		m.cfg.StoreTimeout = time.Second
		m.onWrite = func(key string, r Record, start time.Time, err error) {
			w.mu.Lock()
			w.events = append(w.events, writeEvent{mon, key, r, start, time.Now(), err})
			w.mu.Unlock()
		}
	}
}

func (w *writeLog) all() []writeEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]writeEvent(nil), w.events...)
}

// idle says no device's writer runs: every update taken is written or
// failed.
func (m *Monitor) idle() bool {
	m.latest.mu.Lock()
	defer m.latest.mu.Unlock()
	for _, s := range m.latest.devs {
		if s.busy {
			return false
		}
	}
	return true
}

// uploadResult is one upload as its agent saw it.
type uploadResult struct {
	device string
	sum    [32]byte
	err    error // nil: WaitCommitted returned nil
	end    time.Time
}

func dialAgent(ctx context.Context, addr string, p *pki, name string) (*transport.Conn, error) {
	return transport.Dial(ctx, addr, transport.Config{TLS: &tls.Config{
		RootCAs: p.ca.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{p.clients[name]},
	}})
}

// uploadOnce sends data on a connection of its own and waits for the
// commit.
func uploadOnce(addr string, p *pki, name string, data []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := dialAgent(ctx, addr, p, name)
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	if _, err := conn.Write(data); err != nil {
		_ = conn.Abort()
		return fmt.Errorf("write: %w", err)
	}
	if err := conn.CloseWrite(); err != nil {
		_ = conn.Abort()
		return fmt.Errorf("close write: %w", err)
	}
	if err := conn.WaitCommitted(ctx, int64(len(data))); err != nil {
		_ = conn.Abort()
		return err
	}
	_ = conn.Close()
	return nil
}

// A three-node JetStream cluster loses the node that leads the KV
// bucket's stream, and that one of two monitors is connected to, while
// agents on both monitors send updates and uploads. Whatever a monitor
// was told was stored survives: each device's key holds the last update
// the store acknowledged to the monitor, or a newer one; every upload an
// agent saw committed is in the object store, whole. Writes during the
// failover may fail (the monitor drops those updates, the agents of those
// uploads get an error), but every device's updates are stored again
// once the cluster has a new leader.
func TestClusterFailoverKeepsAcknowledgedWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("a three-node cluster and a failover: seconds")
	}
	c := startCluster(t, 3)
	devices := []string{"sensor-1", "sensor-2", "sensor-3", "pump-1", "pump-2", "pump-3"}
	p := newPKI(t, devices...)
	var wlog writeLog

	// Monitor 0 on node 0 creates the R3 buckets. The node killed is the
	// meta group's leader, made the leader of both buckets' streams too
	// (a stepdown with it preferred): the worst node to lose, the
	// cluster must elect three leaders. Monitor 1 is connected to it (or
	// to node 1 if that is node 0): one monitor's client fails over.
	nc0, js0 := c.connect(t, 0)
	mons := []*testMonitor{startMonitor(t, p, js0, wlog.hook(0))}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	streams := []string{"KV_" + DefaultKVBucket, "OBJ_" + DefaultObjectBucket}
	for _, s := range streams {
		st, err := js0.Stream(ctx, s)
		require.NoError(t, err)
		info, err := st.Info(ctx)
		require.NoError(t, err)
		require.Equal(t, 3, info.Config.Replicas, "%s", s)
	}
	victim := -1
	for i, ns := range c.servers {
		if ns.JetStreamIsLeader() {
			victim = i
		}
	}
	require.NotEqual(t, -1, victim, "no meta leader")
	for _, s := range streams {
		leads := func() bool { return c.servers[victim].JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, s) }
		require.Eventually(t, func() bool {
			if leads() {
				return true
			}
			req := fmt.Appendf(nil, `{"placement":{"preferred":%q}}`, c.servers[victim].Name())
			if resp, err := nc0.Request("$JS.API.STREAM.LEADER.STEPDOWN."+s, req, 5*time.Second); err != nil {
				t.Logf("%s stepdown: %v", s, err)
			} else if !strings.Contains(string(resp.Data), `"success":true`) {
				t.Logf("%s stepdown: %s", s, resp.Data)
			}
			for range 50 { // the election
				if leads() {
					return true
				}
				time.Sleep(20 * time.Millisecond)
			}
			return false
		}, 20*time.Second, 10*time.Millisecond, "%s: its leader is not n%d", s, victim)
	}
	other := victim
	if victim == 0 {
		other = 1
	}
	_, js1 := c.connect(t, other)
	mons = append(mons, startMonitor(t, p, js1, wlog.hook(1)))
	for i, ns := range c.servers {
		t.Logf("node %d (%s): %s", i, ns.Name(), c.role(ns))
	}
	t.Logf("monitor 0 on n0, monitor 1 on n%d; killing n%d", other, victim)

	// Agents: half on each monitor, an update every 20 ms each on one
	// connection, and uploads of 1 MiB one after another on others. The
	// devices on the monitor whose node dies pause their updates at the
	// kill: what that monitor was told about the writes under way then
	// is checked before newer updates could cover it up; the other
	// monitor's devices send on through the failover.
	onVictim := 0
	if victim != 0 {
		onVictim = 1
	}
	stop := make(chan struct{})
	var paused atomic.Bool
	var wg sync.WaitGroup
	var sendErrs atomic.Int64
	var umu sync.Mutex
	var uploads []uploadResult
	for i, dev := range devices {
		m := mons[i%2]
		pausing := i%2 == onVictim
		conn := m.dial(t, p, dev)
		wg.Go(func() {
			defer conn.Close()
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for n := 0; ; {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				if pausing && paused.Load() {
					continue
				}
				if conn.SendUpdate(fmt.Appendf(nil, "%s #%d", dev, n)) != nil {
					sendErrs.Add(1)
				}
				n++
			}
		})
		wg.Go(func() {
			time.Sleep(time.Duration(i) * 150 * time.Millisecond) // staggered, so some are under way at the kill
			for range 5 {
				select {
				case <-stop:
					return
				default:
				}
				data := make([]byte, 1<<20)
				_, _ = rand.Read(data)
				err := uploadOnce(m.addr, p, dev, data)
				umu.Lock()
				uploads = append(uploads, uploadResult{dev, sha256.Sum256(data), err, time.Now()})
				umu.Unlock()
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
	survivor := (victim + 1) % 3
	ncS, jsS := c.connect(t, survivor)
	kv, err := jsS.KeyValue(ctx, DefaultKVBucket)
	require.NoError(t, err)
	// requireAcknowledgedStored checks that each device's key holds the
	// newest update a monitor was told was stored, or a newer one, and
	// that one was stored after the kill if afterKill; it returns the
	// newest acknowledged write of each device.
	var killed time.Time
	requireAcknowledgedStored := func(devs []string, afterKill bool) map[string]writeEvent {
		t.Helper()
		acked := map[string]writeEvent{}
		for _, e := range wlog.all() {
			if a, ok := acked[e.key]; e.err == nil && (!ok || e.r.Generated.After(a.r.Generated)) {
				acked[e.key] = e
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for _, dev := range devs {
			a, ok := acked[Key(dev)]
			require.True(t, ok, "%s: no update ever stored", dev)
			if afterKill {
				require.True(t, a.start.After(killed), "%s: no update stored after the kill (last acknowledged %s, started %v before the kill)",
					dev, a.r.Payload, killed.Sub(a.start))
			}
			// The stream's leader answers STREAM.MSG.GET: it has every
			// write it acknowledged. A KV Get is a direct get, which a
			// follower may answer before it has caught up.
			got, err := leaderGet(ctx, ncS, Key(dev))
			require.NoError(t, err, "%s: acknowledged %s, but the bucket's leader has nothing", dev, a.r.Payload)
			require.False(t, got.Generated.Before(a.r.Generated), "%s: acknowledged %q (generated %v), the bucket holds the older %q (%v)",
				dev, a.r.Payload, a.r.Generated, got.Payload, got.Generated)
			var direct Record
			require.Eventually(t, func() bool {
				e, err := kv.Get(ctx, Key(dev))
				if err != nil {
					return false
				}
				direct = decode(t, e)
				return !direct.Generated.Before(a.r.Generated)
			}, 10*time.Second, 20*time.Millisecond, "%s: KV Get never caught up with the acknowledged %q", dev, a.r.Payload)
			t.Logf("%s: last acknowledged %q (write started %v after the kill), leader %q, KV Get %q", dev, a.r.Payload,
				a.start.Sub(killed).Round(time.Millisecond), got.Payload, direct.Payload)
		}
		return acked
	}

	time.Sleep(3 * time.Second)
	t.Logf("killing n%d (%s)", victim, c.role(c.servers[victim]))
	paused.Store(true)
	killed = time.Now()
	c.servers[victim].Shutdown()
	// The paused devices' last writes end (acknowledged by the new
	// leader, or failed); then the bucket must hold what was
	// acknowledged.
	require.Eventually(t, mons[onVictim].idle, 30*time.Second, 10*time.Millisecond, "the writes under way at the kill never finished")
	var frozen []string
	for i, dev := range devices {
		if i%2 == onVictim {
			frozen = append(frozen, dev)
		}
	}
	t.Logf("paused at the kill, after %v:", time.Since(killed).Round(time.Millisecond))
	requireAcknowledgedStored(frozen, false)
	paused.Store(false)
	// Run on until the writes have been going again for a while.
	time.Sleep(time.Until(killed.Add(8 * time.Second)))
	close(stop)
	wg.Wait()
	for _, m := range mons {
		require.Eventually(t, m.idle, 30*time.Second, 10*time.Millisecond, "a monitor's writes never finished")
	}
	for i, ns := range c.servers {
		if i != victim {
			t.Logf("after: node %d (%s): %s", i, ns.Name(), c.role(ns))
		}
	}
	t.Logf("at the end:")
	requireAcknowledgedStored(devices, true)
	events := wlog.all()
	var failed []writeEvent
	for _, e := range events {
		if e.err != nil {
			failed = append(failed, e)
		}
	}

	// Every committed upload is in the object store, whole.
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	obs, err := jsS.ObjectStore(ctx, DefaultObjectBucket)
	require.NoError(t, err)
	infos, err := obs.List(ctx)
	require.NoError(t, err)
	// An object that cannot be read whole (its digest fails, chunks
	// missing) is not stored; it may only be a failed upload's whose
	// purge the cluster refused during the failover.
	stored := map[[32]byte]*jetstream.ObjectInfo{}
	unreadable := 0
	for _, info := range infos {
		octx, ocancel := context.WithTimeout(context.Background(), 10*time.Second) // one stuck read (a chunk missing) does not starve the rest
		b, err := obs.GetBytes(octx, info.Name)
		ocancel()
		if err != nil {
			unreadable++
			t.Logf("object %s cannot be read: %v", info.Name, err)
			continue
		}
		stored[sha256.Sum256(b)] = info
	}
	var committed, uploadFailed int
	for _, u := range uploads {
		if u.err != nil {
			uploadFailed++
			t.Logf("upload of %s failed at kill%s: %v", u.device, sinceOrNone(u.end, killed), u.err)
			continue
		}
		committed++
		info, ok := stored[u.sum]
		require.True(t, ok, "%s: an upload committed at kill%s is not in the object store (or fails its digest)", u.device, sinceOrNone(u.end, killed))
		require.Equal(t, u.device, info.Metadata["device"])
	}
	require.NotZero(t, committed, "no upload committed")

	// The stall of the KV writes: from the start of the first write that
	// failed (under way at the kill, or sent while there was no leader)
	// to the acknowledgement of the first write that started after it;
	// and from the kill to the first acknowledged write started after it.
	firstOKAfter := func(t0 time.Time) time.Time {
		var first time.Time
		for _, e := range events {
			if e.err == nil && e.start.After(t0) && (first.IsZero() || e.end.Before(first)) {
				first = e.end
			}
		}
		return first
	}
	var firstFail time.Time
	for _, e := range failed {
		// One that failed before the kill timed out on a loaded machine,
		// not in the failover.
		if e.end.After(killed) && (firstFail.IsZero() || e.start.Before(firstFail)) {
			firstFail = e.start
		}
	}
	stall := "no write failed"
	if !firstFail.IsZero() {
		ok := firstOKAfter(firstFail)
		stall = fmt.Sprintf("first failed write started at kill%s, the first write started after it acknowledged at kill%s: %v",
			sinceOrNone(firstFail, killed), sinceOrNone(ok, killed), ok.Sub(firstFail).Round(time.Millisecond))
	}
	t.Logf("KV writes: %d, %d failed; stall: %s; the first write started after the kill acknowledged at kill%s",
		len(events), len(failed), stall, sinceOrNone(firstOKAfter(killed), killed))
	for _, e := range failed {
		t.Logf("failed write: monitor %d %s %q started at kill%s, took %v: %v", e.mon, e.key, e.r.Payload,
			sinceOrNone(e.start, killed), e.end.Sub(e.start).Round(time.Millisecond), e.err)
	}
	for i, m := range mons {
		t.Logf("monitor %d: updates read %d, stored %d, superseded %d, stale %d, KV errors %d; uploads stored %d, failed %d, aborted %d",
			i, m.st.updatesRead.Load(), m.st.updatesStored.Load(), m.st.updatesSuperseded.Load(), m.st.updatesStale.Load(),
			m.st.kvErrors.Load(), m.st.uploadsStored.Load(), m.st.uploadsFailed.Load(), m.st.uploadsAborted.Load())
	}
	t.Logf("uploads: %d committed, %d failed; %d objects in the store, %d of them unreadable; %d update sends failed",
		committed, uploadFailed, len(infos), unreadable, sendErrs.Load())
}

// leaderGet reads key's record in the KV bucket from its stream's leader
// (the JetStream API's STREAM.MSG.GET, not a direct get).
func leaderGet(ctx context.Context, nc *nats.Conn, key string) (Record, error) {
	req, err := json.Marshal(map[string]string{"last_by_subj": "$KV." + DefaultKVBucket + "." + key})
	if err != nil {
		return Record{}, err
	}
	var resp *nats.Msg
	for {
		// A request lost in an election is asked again.
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err = nc.RequestWithContext(rctx, "$JS.API.STREAM.MSG.GET.KV_"+DefaultKVBucket, req)
		cancel()
		if err == nil || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return Record{}, err
	}
	var r struct {
		Message *struct {
			Data []byte `json:"data"`
		} `json:"message"`
		Error *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &r); err != nil {
		return Record{}, err
	}
	if r.Error != nil || r.Message == nil {
		return Record{}, fmt.Errorf("STREAM.MSG.GET: %s", resp.Data)
	}
	var rec Record
	err = json.Unmarshal(r.Message.Data, &rec)
	return rec, err
}

func sinceOrNone(t, from time.Time) string {
	if t.IsZero() {
		return ": none"
	}
	d := t.Sub(from).Round(time.Millisecond)
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}
