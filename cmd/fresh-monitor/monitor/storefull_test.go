package monitor

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cmd/fresh-monitor/internal/fleettest"
	"github.com/fresh-udp/fresh/internal/loglimit"
	"github.com/fresh-udp/fresh/transport"
)

// fleetHints are fresh-monitor's hints, as the tests expect to find them.
var fleetHints = StorageHints{Uploads: "raise -max-upload-store", KV: "raise -max-kv-store", JetStream: "raise -max-store"}

// With a 24 MiB JetStream, a 16 MiB object store and a 4 MiB KV bucket,
// an upload larger than the object store fails back to its agent with a
// storage error that names what is full and the flag that makes room, and
// the other devices' updates keep being stored while it runs: not one of
// their writes fails. What the upload stored is purged.
func TestStoreFullFailsTheUploadNotTheUpdates(t *testing.T) {
	_, js := startNATS(t, func(o *server.Options) { o.JetStreamMaxStore = 24 << 20 })
	names := []string{"camera", "sensor-1", "sensor-2", "sensor-3", "sensor-4", "sensor-5"}
	p := newPKI(t, names...)
	var stored, failed atomic.Int64
	m := startMonitor(t, p, js, func(m *Monitor) {
		m.cfg.MaxUploadBytes, m.cfg.MaxKVBytes, m.cfg.StorageHints = 16<<20, 4<<20, fleetHints
		m.onWrite = func(_ string, _ Record, _ time.Time, err error) {
			if err != nil {
				failed.Add(1)
			} else {
				stored.Add(1)
			}
		}
	})
	var sensors []*transport.Conn
	for _, n := range names[1:] {
		sensors = append(sensors, m.dial(t, p, n))
	}
	for _, c := range sensors {
		fleettest.SendEvery(t, c, 5*time.Millisecond, nil)
	}
	require.Eventually(t, func() bool { return stored.Load() >= 5 }, 10*time.Second, 5*time.Millisecond)

	cam := m.dial(t, p, "camera")
	data := make([]byte, 32<<20)
	_, _ = rand.Read(data)
	go func() {
		if _, err := cam.Write(data); err == nil {
			_ = cam.CloseWrite()
		}
	}()
	require.Eventually(t, func() bool { return m.st.uploadBytes.Load() >= 4<<20 }, 20*time.Second, time.Millisecond)
	before := stored.Load()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := cam.WaitCommitted(ctx, int64(len(data)))
	var ae *transport.ApplicationError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, CodeStorageFailed, ae.Code)
	require.Contains(t, ae.Reason, `storing the upload failed: the object store "fresh-uploads" is full, its limit 16MiB (raise -max-upload-store): chunk `)
	require.Greater(t, stored.Load(), before, "updates stored while the upload filled its store")
	require.Zero(t, failed.Load(), "no update failed")
	chunks, infos := objState(t, js)
	require.Zero(t, chunks+infos, "the failed upload is purged")

	// And the store takes uploads again.
	cam2 := m.dial(t, p, "camera")
	upload(t, cam2, data[:1<<20])
	require.NoError(t, cam2.WaitCommitted(ctx, 1<<20))
}

// A KV bucket that is full fails the writes of new devices: each warning
// names the bucket, its limit and the flag to raise, and the warnings are
// rate-limited (loglimit.Burst a second, then one saying how many were
// not logged).
func TestKVFullWarningsNameTheLimitRateLimited(t *testing.T) {
	_, js := startNATS(t)
	var names []string
	for i := range 40 {
		names = append(names, fmt.Sprintf("sensor-%02d", i))
	}
	p := newPKI(t, names...)
	logs := &fleettest.Buffer{}
	m := startMonitor(t, p, js, func(m *Monitor) {
		m.cfg.MaxKVBytes, m.cfg.StorageHints = 2<<10, fleetHints
		m.log = slog.New(slog.NewTextHandler(logs, nil))
	})
	var conns []*transport.Conn
	for _, n := range names {
		conns = append(conns, m.dial(t, p, n))
	}
	var paused atomic.Bool
	for _, c := range conns {
		fleettest.SendEvery(t, c, 5*time.Millisecond, &paused)
	}
	start := time.Now()
	require.Eventually(t, func() bool { return m.st.kvErrors.Load() > 4*loglimit.Burst }, 20*time.Second, 5*time.Millisecond)
	time.Sleep(loglimit.Window) // a second window: its first line says how many the first did not log
	paused.Store(true)
	time.Sleep(100 * time.Millisecond) // the writes under way end
	elapsed := time.Since(start)

	lines := strings.Count(logs.String(), `msg="storing an update failed"`)
	windows := int(elapsed/loglimit.Window) + 2 // and one begun as the last writes failed
	require.LessOrEqual(t, lines, windows*loglimit.Burst, "%d failures logged in %v", m.st.kvErrors.Load(), elapsed)
	require.Less(t, int64(lines), m.st.kvErrors.Load())
	require.Contains(t, logs.String(), `the KV bucket \"fresh-latest\" is full, its limit 2KiB (raise -max-kv-store)`)
	require.Regexp(t, `msg="storing an update failed" .* suppressed=\d+`, logs.String())
}
