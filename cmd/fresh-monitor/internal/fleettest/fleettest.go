// Package fleettest has the fresh-monitor tests' agents and checks of
// what the monitor stored, shared by the command's and package monitor's
// tests (it cannot import monitor: monitor's own tests use it).
package fleettest

import (
	"context"
	"encoding/json"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/transport"
)

// SendEvery sends an update with a growing counter on conn every period
// until the test ends, but while paused (nil: never) is set.
func SendEvery(t *testing.T, conn *transport.Conn, period time.Duration, paused *atomic.Bool) {
	stop, done := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(stop); <-done })
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(period):
			}
			if paused == nil || !paused.Load() {
				_ = conn.SendUpdate([]byte(strconv.Itoa(i)))
			}
		}
	}()
}

// StoredAfter waits until kv holds a record under key (monitor.Record's
// JSON) generated after t0.
func StoredAfter(t *testing.T, kv jetstream.KeyValue, key string, t0 time.Time, msgAndArgs ...any) {
	t.Helper()
	require.Eventually(t, func() bool {
		e, err := kv.Get(context.Background(), key)
		if err != nil {
			return false
		}
		var r struct {
			Generated time.Time `json:"generated"`
		}
		return json.Unmarshal(e.Value(), &r) == nil && r.Generated.After(t0)
	}, 20*time.Second, 10*time.Millisecond, msgAndArgs...)
}
