//go:build linux

package main

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cmd/fresh-monitor/monitor"
	"github.com/fresh-udp/fresh/transport"
)

// crashKillsEnv sets the number of SIGKILLs of TestCrashFleet (default
// 3, for the default suite; the issue's check is 20 or more):
//
//	FRESH_CRASH_KILLS=25 go test -run TestCrashFleet -v ./cmd/fresh-monitor/
const crashKillsEnv = "FRESH_CRASH_KILLS"

// gate holds the agents back while the monitor is down and being
// checked: each pass is of one generation, and an agent that dialled a
// monitor of a later one than it passed in does nothing with it.
type gate struct {
	mu   sync.Mutex
	gen  int
	open chan struct{} // closed while the gate is open
}

func newGate() *gate { return &gate{open: make(chan struct{})} }

func (g *gate) pass(ctx context.Context) (int, bool) {
	g.mu.Lock()
	c, gen := g.open, g.gen
	g.mu.Unlock()
	select {
	case <-c:
		return gen, true
	case <-ctx.Done():
		return 0, false
	}
}

func (g *gate) current() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.gen
}

func (g *gate) openUp() {
	g.mu.Lock()
	close(g.open)
	g.mu.Unlock()
}

func (g *gate) shut() {
	g.mu.Lock()
	g.gen++
	g.open = make(chan struct{})
	g.mu.Unlock()
}

// crashFleet is the agents' side of the crash test: what they sent,
// what they were told was committed, the connections to break at a kill.
type crashFleet struct {
	mu        sync.Mutex
	sent      map[[32]byte]string // SHA-256 of each upload begun → its device
	committed map[[32]byte]string // SHA-256 of each upload WaitCommitted returned nil for → device
	conns     map[*transport.Conn]struct{}
	broken    atomic.Int64 // uploads whose WaitCommitted failed
}

func (f *crashFleet) track(c *transport.Conn, on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if on {
		f.conns[c] = struct{}{}
	} else {
		delete(f.conns, c)
	}
}

// abortAll ends every agent's connection: what an agent whose monitor
// died sees sooner or later.
func (f *crashFleet) abortAll() {
	f.mu.Lock()
	conns := make([]*transport.Conn, 0, len(f.conns))
	for c := range f.conns {
		conns = append(conns, c)
	}
	f.mu.Unlock()
	for _, c := range conns {
		_ = c.Abort()
	}
}

// agent dials the monitor, sends updates every 10 ms and uploads one
// random object after another (256 KiB to 4 MiB) until ctx ends.
func (f *crashFleet) agent(ctx context.Context, g *gate, addr string, cfg transport.Config, device string, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	for ctx.Err() == nil {
		gen, ok := g.pass(ctx)
		if !ok {
			return
		}
		dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		conn, err := transport.Dial(dctx, addr, cfg)
		cancel()
		if err != nil {
			continue
		}
		f.track(conn, true)
		if g.current() != gen { // dialled a monitor that is being checked
			_ = conn.Abort()
			f.track(conn, false)
			continue
		}
		done := make(chan struct{})
		var updates sync.WaitGroup
		updates.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				case <-time.After(10 * time.Millisecond):
				}
				if conn.SendUpdate(fmt.Appendf(nil, "%s update %d", device, i)) != nil {
					return
				}
			}
		})
		for ctx.Err() == nil && conn.Err() == nil {
			data := make([]byte, 256<<10+rng.IntN(4<<20-256<<10))
			for i := 0; i < len(data); i += 8 {
				v := rng.Uint64()
				for j := 0; j < 8 && i+j < len(data); j++ {
					data[i+j] = byte(v >> (8 * j))
				}
			}
			sum := sha256.Sum256(data)
			f.mu.Lock()
			f.sent[sum] = device
			f.mu.Unlock()
			if _, err := conn.Write(data); err != nil {
				f.broken.Add(1)
				break
			}
			if err := conn.CloseWrite(); err != nil {
				f.broken.Add(1)
				break
			}
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			err := conn.WaitCommitted(wctx, int64(len(data)))
			cancel()
			if err != nil {
				f.broken.Add(1)
				break
			}
			f.mu.Lock()
			f.committed[sum] = device
			f.mu.Unlock()
			break // one upload per connection: the stream is one object
		}
		close(done)
		updates.Wait()
		_ = conn.Close()
		f.track(conn, false)
	}
}

// kvSeen is what an external KV watcher saw stored: per key, the highest
// revision (the stream sequence) and its record's generation time. An
// update is acknowledged into the KV bucket once a watcher has seen it:
// JetStream delivers only what it stored.
type kvSeen struct {
	mu   sync.Mutex
	rev  map[string]uint64
	gen  map[string]time.Time
	seen atomic.Int64
}

// watch records what a watcher of the KV bucket sees through url until
// the returned function is called (or the server goes).
func (k *kvSeen) watch(t *testing.T, url string) func() {
	t.Helper()
	nc, err := nats.Connect(url, nats.NoReconnect())
	require.NoError(t, err)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	kv, err := js.KeyValue(ctx, monitor.DefaultKVBucket)
	require.NoError(t, err)
	w, err := kv.WatchAll(ctx)
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Go(func() {
		for e := range w.Updates() {
			if e == nil || e.Operation() != jetstream.KeyValuePut {
				continue
			}
			var r monitor.Record
			if json.Unmarshal(e.Value(), &r) != nil {
				continue
			}
			k.mu.Lock()
			if e.Revision() > k.rev[e.Key()] {
				k.rev[e.Key()], k.gen[e.Key()] = e.Revision(), r.Generated
			}
			k.mu.Unlock()
			k.seen.Add(1)
		}
	})
	return func() {
		cancel()
		_ = w.Stop()
		nc.Close()
		wg.Wait()
	}
}

// crashCheck is what one check after a restart found.
type crashCheck struct {
	objects, committed, keys int
}

// check requires of the store, with no agent connected and the monitor's
// first sweep done: every upload an agent saw committed is an object,
// byte-exact; every object is one an agent sent, whole (its digest
// holds); no chunk is left that no object names, and no staging record;
// every key holds the revision the watcher saw last, or a newer one.
func (f *crashFleet) check(t *testing.T, url string, k *kvSeen, hashes map[string][32]byte) crashCheck {
	t.Helper()
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	obs, err := js.ObjectStore(ctx, monitor.DefaultObjectBucket)
	require.NoError(t, err)
	infos, err := obs.List(ctx, jetstream.ListObjectsShowDeleted())
	if err == jetstream.ErrNoObjectsFound {
		err = nil
	}
	require.NoError(t, err)
	f.mu.Lock()
	defer f.mu.Unlock()
	stored := map[[32]byte]bool{}
	chunks := map[string]uint32{}
	for _, info := range infos {
		require.False(t, info.Deleted, "a staging record survived the sweep: %+v", info)
		sum, ok := hashes[info.Name]
		if !ok {
			b, err := obs.GetBytes(ctx, info.Name)
			if err != nil {
				held := "?"
				if st, serr := js.Stream(ctx, "OBJ_"+monitor.DefaultObjectBucket); serr == nil {
					subj := "$O." + monitor.DefaultObjectBucket + ".C." + info.NUID
					if si, ierr := st.Info(ctx, jetstream.WithSubjectFilter(subj)); ierr == nil {
						held = strconv.FormatUint(si.State.Subjects[subj], 10)
					}
				}
				require.NoError(t, err, "object %s does not read back whole: its info names %d chunks, the store holds %s", info.Name, info.Chunks, held)
			}
			sum = sha256.Sum256(b)
			hashes[info.Name] = sum
		}
		require.Equal(t, monitor.Key(f.sent[sum]), strings.Split(info.Name, "/")[0], "object %s is no upload an agent sent, or another device's", info.Name)
		stored[sum] = true
		chunks[info.NUID] = info.Chunks
	}
	for sum, device := range f.committed {
		require.True(t, stored[sum], "an upload of %s was committed to its agent and is not in the store", device)
	}
	st, err := js.Stream(ctx, "OBJ_"+monitor.DefaultObjectBucket)
	require.NoError(t, err)
	si, err := st.Info(ctx, jetstream.WithSubjectFilter("$O."+monitor.DefaultObjectBucket+".C.>"))
	require.NoError(t, err)
	var orphans uint64
	for subj, n := range si.State.Subjects {
		want, named := chunks[strings.TrimPrefix(subj, "$O."+monitor.DefaultObjectBucket+".C.")]
		if !named {
			orphans += n
			continue
		}
		require.EqualValues(t, want, n, "the chunks of %s", subj)
	}
	require.Zero(t, orphans, "chunks of dead uploads survived the sweep")

	kv, err := js.KeyValue(ctx, monitor.DefaultKVBucket)
	require.NoError(t, err)
	k.mu.Lock()
	defer k.mu.Unlock()
	for key, rev := range k.rev {
		e, err := kv.Get(ctx, key)
		require.NoError(t, err, "key %s, acknowledged at revision %d, is gone", key, rev)
		require.GreaterOrEqual(t, e.Revision(), rev, "key %s: the watcher saw revision %d, the bucket holds %d", key, rev, e.Revision())
		var r monitor.Record
		require.NoError(t, json.Unmarshal(e.Value(), &r))
		require.False(t, r.Generated.Before(k.gen[key]), "key %s holds an older update than one acknowledged", key)
	}
	return crashCheck{objects: len(infos), committed: len(f.committed), keys: len(k.rev)}
}

// The fleet monitor killed with SIGKILL at random moments while agents
// upload and send updates, and started again on the same -data each
// time: every upload an agent saw committed is in the store byte-exact
// (SHA-256), no object is corrupt or foreign, no chunk of a dead upload
// survives the restart's sweep, and the KV bucket holds every update an
// external watcher saw stored (its revision or a newer one). Kills land
// mid-upload: the test requires that some uploads broke and that the
// sweeps purged chunks. FRESH_CRASH_KILLS sets the number of kills.
func TestCrashFleet(t *testing.T) {
	kills := 3
	if s := os.Getenv(crashKillsEnv); s != "" {
		var err error
		kills, err = strconv.Atoi(s)
		require.NoError(t, err, crashKillsEnv)
	}
	agents := 4
	if kills >= 10 {
		agents = 8
	}
	dir := t.TempDir()
	fl := newFleet(t, dir)
	ca, certFlags := fl.ca, fl.args
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	natsAddr := l.Addr().String()
	l.Close()
	listen := "127.0.0.1:" + strconv.Itoa(freeUDPPort(t))
	args := append([]string{"-listen", listen, "-nats-listen", natsAddr, "-metrics", "127.0.0.1:0", "-data", filepath.Join(dir, "data")}, certFlags...)
	natsURL := "nats://" + natsAddr

	f := &crashFleet{sent: map[[32]byte]string{}, committed: map[[32]byte]string{}, conns: map[*transport.Conn]struct{}{}}
	k := &kvSeen{rev: map[string]uint64{}, gen: map[string]time.Time{}}
	hashes := map[string][32]byte{}
	g := newGate()
	ctx, cancel := context.WithCancel(context.Background())
	var fleet sync.WaitGroup
	defer func() { cancel(); f.abortAll(); fleet.Wait() }()
	for i := range agents {
		device := fmt.Sprintf("agent-%02d", i)
		cert, err := ca.Issue(device)
		require.NoError(t, err)
		cfg := transport.Config{TLS: &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{cert}}}
		fleet.Go(func() { f.agent(ctx, g, listen, cfg, device, uint64(i)) })
	}

	// started waits for the monitor's first sweep; purged is what it
	// purged (fresh_orphan_*_purged_total).
	started := func() (*proc, float64, float64) {
		p := startProc(t, args...)
		var m map[string]float64
		require.Eventually(t, func() bool {
			m = scrape(t, p.metrics)
			p.mu.Lock()
			defer p.mu.Unlock()
			return strings.Contains(strings.Join(p.out, "\n"), "swept the object store for dead uploads")
		}, 60*time.Second, 10*time.Millisecond, "no sweep at start")
		m = scrape(t, p.metrics)
		return p, m["fresh_orphan_chunks_purged_total"], m["fresh_orphan_bytes_purged_total"]
	}
	p, _, _ := started()
	stopWatch := k.watch(t, natsURL)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	var purgedChunks, purgedBytes float64
	start := time.Now()
	for kill := range kills {
		g.openUp()
		time.Sleep(300*time.Millisecond + time.Duration(rng.Int64N(int64(1200*time.Millisecond))))
		g.shut()
		require.NoError(t, p.cmd.Process.Kill())
		_ = p.cmd.Wait()
		stopWatch()
		f.abortAll()
		var chunks, bytes float64
		p, chunks, bytes = started()
		purgedChunks += chunks
		purgedBytes += bytes
		c := f.check(t, natsURL, k, hashes)
		t.Logf("kill %d: restart swept %.0f chunks (%.1f MiB) of dead uploads; %d objects, %d committed to agents, %d keys",
			kill+1, chunks, bytes/(1<<20), c.objects, c.committed, c.keys)
		stopWatch = k.watch(t, natsURL)
	}
	// A last run to the end, a clean stop, a start, and the same checks.
	g.openUp()
	time.Sleep(time.Second)
	g.shut()
	f.abortAll()
	stopWatch()
	p.stop(t)
	p, _, _ = started()
	c := f.check(t, natsURL, k, hashes)
	p.stop(t)
	t.Logf("%d kills in %v, %d agents: %d uploads committed to agents (all in the store, byte-exact), %d broken off, %d objects; "+
		"sweeps purged %.0f chunks, %.1f MiB of dead uploads; %d KV keys hold every update a watcher saw stored (%d seen)",
		kills, time.Since(start).Round(time.Second), agents, c.committed, f.broken.Load(), c.objects, purgedChunks, purgedBytes/(1<<20), c.keys, k.seen.Load())
	require.Positive(t, c.committed, "no upload completed: the test checked nothing")
	require.Positive(t, f.broken.Load(), "no kill broke an upload off")
	require.Positive(t, purgedChunks, "no kill left chunks for a sweep: the kills missed the uploads")
	require.Positive(t, c.keys)
}
