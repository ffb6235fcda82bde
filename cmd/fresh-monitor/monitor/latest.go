package monitor

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// Freshest-only writing of the latest update per device. Updates are
// state, not a log: the store needs only the newest one of each device,
// and a store slower than a device's update rate must not build a queue
// (whose tail grows older the longer it is) nor let a slow write of an old
// update land after a newer one. So each device has at most one write in
// flight and at most one update pending behind it; a newer update replaces
// the pending one (counted as superseded), and an update not newer than
// one already taken (a second connection of the same device, or a clock
// step on it) is dropped as stale. Writes of one device are therefore in
// generation order, and the bucket holds the newest that was written.

// Record is what the monitor stores for each update, JSON in the KV
// bucket's value and in the fresh.update.<key> messages: the device's
// name, when the update was generated (the agent's clock corrected into
// the monitor's, transport.Update.Generated), when it arrived, and its
// payload (base64 in the JSON). The same times are in the message headers
// HeaderGenerated and HeaderArrived (RFC 3339 with nanoseconds).
type Record struct {
	Device    string    `json:"device"`
	Generated time.Time `json:"generated"`
	Arrived   time.Time `json:"arrived"`
	Payload   []byte    `json:"payload"`
}

// Header names of the times of a Record on its messages.
const (
	HeaderGenerated = "Fresh-Generated"
	HeaderArrived   = "Fresh-Arrived"
	HeaderDevice    = "Fresh-Device"
)

// latestStore stores one device's newest record under its key.
type latestStore interface {
	putLatest(ctx context.Context, key string, r Record) error
}

// latest runs the per-device writers.
type latest struct {
	store   latestStore
	timeout time.Duration // one write's bound
	log     *slog.Logger
	failLog *limitedLog // rate-limits the failed writes' lines: a full store fails every device's
	st      *counters
	// explain says what is full if a write failed for lack of space.
	explain func(error) error
	// onWrite, set by tests, sees each write's record, start and
	// outcome (nil: the store acknowledged it) as the writer does.
	onWrite func(key string, r Record, start time.Time, err error)

	mu   sync.Mutex
	devs map[string]*slot
	wg   sync.WaitGroup // the writers running
}

// slot is one device's writer state. A slot stays for the monitor's life
// (a few dozen bytes per device ever seen) so that newest survives a
// reconnection.
type slot struct {
	newest  time.Time // generation time of the newest record taken
	pending *Record   // taken, not yet being written
	busy    bool      // a writer goroutine runs for this device
}

func newLatest(store latestStore, timeout time.Duration, log *slog.Logger, st *counters) *latest {
	return &latest{store: store, timeout: timeout, log: log, failLog: newLimitedLog(), st: st,
		explain: func(err error) error { return err }, devs: make(map[string]*slot)}
}

// offer takes a device's update for writing; false if it is not newer
// than one taken before (dropped as stale). It never blocks on the store.
func (l *latest) offer(key string, r Record) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.devs[key]
	if s == nil {
		s = &slot{}
		l.devs[key] = s
	}
	if !r.Generated.After(s.newest) {
		l.st.updatesStale.Add(1)
		return false
	}
	s.newest = r.Generated
	if s.pending != nil {
		l.st.updatesSuperseded.Add(1)
	}
	s.pending = &r
	if !s.busy {
		s.busy = true
		l.wg.Add(1)
		go l.write(key, s)
	}
	return true
}

// write stores the device's pending record, and again while a newer one
// arrived during the write; it ends when nothing is pending. A failed
// write is counted and logged, not retried: the device's next update
// (several a second) is written instead, and retrying an old one would
// only delay it.
func (l *latest) write(key string, s *slot) {
	defer l.wg.Done()
	for {
		l.mu.Lock()
		r := s.pending
		s.pending = nil
		if r == nil {
			s.busy = false
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()

		ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
		start := time.Now()
		err := l.store.putLatest(ctx, key, *r)
		cancel()
		l.st.observeWrite("kv", time.Since(start))
		if l.onWrite != nil {
			l.onWrite(key, *r, start, err)
		}
		if errors.Is(err, errNotNewer) {
			l.st.updatesStale.Add(1)
			continue
		}
		if err != nil {
			l.st.storeErrors("kv").Add(1)
			l.failLog.Log(l.log, slog.LevelWarn, "storing an update failed", "device", r.Device, "key", key, "generated", r.Generated, "err", l.explain(err))
			continue
		}
		l.st.updatesStored.Add(1)
	}
}

// wait returns once every writer has finished (nothing pending).
func (l *latest) wait() { l.wg.Wait() }
