package monitor

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// slowStore is a latestStore whose writes wait for release, recording the
// generation times written in order and the most writes in flight at once.
type slowStore struct {
	release chan struct{}
	mu      sync.Mutex
	written map[string][]time.Time
	inFly   int
	maxFly  int
}

func (s *slowStore) putLatest(ctx context.Context, key string, r Record) error {
	s.mu.Lock()
	s.inFly++
	s.maxFly = max(s.maxFly, s.inFly)
	s.mu.Unlock()
	<-s.release
	s.mu.Lock()
	s.inFly--
	s.written[key] = append(s.written[key], r.Generated)
	s.mu.Unlock()
	return nil
}

// A store slower than the updates gets one write at a time per device,
// and of what arrived during a write only the newest: an update older
// than one taken is dropped, never written after the newer one.
func TestLatestWritesNewestOnlyOneAtATime(t *testing.T) {
	store := &slowStore{release: make(chan struct{}), written: map[string][]time.Time{}}
	st := newCounters()
	l := newLatest(store, time.Second, slog.New(slog.DiscardHandler), st)
	t0 := time.Unix(1_700_000_000, 0)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Millisecond) }

	require.True(t, l.offer("dev", Record{Generated: at(1)}))
	// The first write is in flight (blocked); these wait behind it.
	require.Eventually(t, func() bool { store.mu.Lock(); defer store.mu.Unlock(); return store.inFly == 1 }, 5*time.Second, time.Millisecond)
	require.True(t, l.offer("dev", Record{Generated: at(2)}))
	require.True(t, l.offer("dev", Record{Generated: at(4)}))
	require.False(t, l.offer("dev", Record{Generated: at(3)}), "older than one taken: stale")
	require.False(t, l.offer("dev", Record{Generated: at(4)}), "not newer: stale")
	// Another device is written independently.
	require.True(t, l.offer("other", Record{Generated: at(1)}))
	require.Eventually(t, func() bool { store.mu.Lock(); defer store.mu.Unlock(); return store.inFly == 2 }, 5*time.Second, time.Millisecond)
	time.Sleep(20 * time.Millisecond) // a second write of dev, if there were one, would start now

	close(store.release)
	l.wait()
	store.mu.Lock()
	defer store.mu.Unlock()
	require.Equal(t, []time.Time{at(1), at(4)}, store.written["dev"], "dev: the first, then only the newest pending, in generation order")
	require.Equal(t, []time.Time{at(1)}, store.written["other"])
	require.Equal(t, 2, store.maxFly, "one write in flight per device (two devices)")
	require.EqualValues(t, 1, st.updatesSuperseded.Load(), "at(2) replaced by at(4) while at(1) was being written")
	require.EqualValues(t, 2, st.updatesStale.Load())
	require.EqualValues(t, 3, st.updatesStored.Load())
}

// flakyStore is a latestStore that fails every write while down.
type flakyStore struct {
	mu      sync.Mutex
	down    bool
	written []time.Time
}

var errStoreDown = errors.New("no leader")

func (s *flakyStore) putLatest(_ context.Context, _ string, r Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return errStoreDown
	}
	s.written = append(s.written, r.Generated)
	return nil
}

// A write the store fails (a cluster electing a leader) is counted as an
// error, never as stored, and is not retried; the device's next update,
// once the store is back, is written: a failure does not stop a device's
// writes.
func TestLatestWriteFailureNotStoredNextUpdateWritten(t *testing.T) {
	store := &flakyStore{down: true}
	st := newCounters()
	l := newLatest(store, time.Second, slog.New(slog.DiscardHandler), st)
	var mu sync.Mutex
	outcomes := map[time.Time]error{}
	l.onWrite = func(_ string, r Record, _ time.Time, err error) {
		mu.Lock()
		outcomes[r.Generated] = err
		mu.Unlock()
	}
	t0 := time.Unix(1_700_000_000, 0)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Millisecond) }

	require.True(t, l.offer("dev", Record{Generated: at(1)}))
	l.wait()
	require.EqualValues(t, 1, st.kvErrors.Load())
	require.Zero(t, st.updatesStored.Load(), "a failed write is not stored")
	require.ErrorIs(t, outcomes[at(1)], errStoreDown)

	store.mu.Lock()
	store.down = false
	store.mu.Unlock()
	require.True(t, l.offer("dev", Record{Generated: at(2)}), "the device's next update is taken")
	l.wait()
	require.NoError(t, outcomes[at(2)])
	require.EqualValues(t, 1, st.updatesStored.Load())
	store.mu.Lock()
	defer store.mu.Unlock()
	require.Equal(t, []time.Time{at(2)}, store.written, "the failed one not retried, the next written")
}

func TestKeyIsInjectiveAndAToken(t *testing.T) {
	names := []string{"sensor-17", "sensor.17", "sensor_17", "sensor=2E17", "a/b", "a b", "", "=", "é", "127.0.0.1:4433", "*", ">"}
	seen := map[string]string{}
	for _, n := range names {
		k := Key(n)
		require.Regexp(t, `^[-_=A-Za-z0-9]+$`, k, n)
		prev, dup := seen[k]
		require.False(t, dup, "%q and %q share key %q", n, prev, k)
		seen[k] = n
	}
	require.Equal(t, "sensor-17", Key("sensor-17"))
	require.Equal(t, "sensor=2E17", Key("sensor.17"))
}
