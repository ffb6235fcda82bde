package monitor

import (
	"context"
	"io"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// A NATS connection the server closed comes back by itself (nats.go
// reconnects: a server restart, a kicked client, a network break), but
// nats.go closes it for good after some of the server's errors: a
// protocol line over max_control_line, an unknown -ERR, an authorization
// violation twice in a row. A closed nats.Conn never reconnects, and every
// device's writes would fail from then on (one device's 1,000-byte name
// did that before names were checked). So the monitor writes through
// liveStore, which keepConnected points at a store on a new connection
// (Config.Reconnect) when the one in use closes for good.

// liveStore is the store in use: the latest writers and the uploads go
// through it, so a replacement takes effect at their next write.
type liveStore struct{ cur atomic.Pointer[jsStore] }

func (l *liveStore) putLatest(ctx context.Context, key string, r Record) error {
	return l.cur.Load().putLatest(ctx, key, r)
}

func (l *liveStore) putUpload(ctx context.Context, name, device string, r io.Reader) (uint64, error) {
	return l.cur.Load().putUpload(ctx, name, device, r)
}

func (l *liveStore) flush(ctx context.Context) error { return l.cur.Load().flush(ctx) }

// conn is the NATS connection the monitor writes through now.
func (m *Monitor) conn() *nats.Conn {
	if st := m.live.cur.Load(); st != nil {
		return st.nc
	}
	return m.nc
}

// reconnectRetry is how long keepConnected waits between two failed
// attempts at a new connection.
const reconnectRetry = time.Second

// keepConnected waits for the store's connection to close for good and
// replaces the store with one on a connection from Config.Reconnect,
// until ctx ends. Without Reconnect it says, once, that the monitor
// stores nothing any more.
func (m *Monitor) keepConnected(ctx context.Context) {
	for {
		nc := m.live.cur.Load().nc
		closed := nc.StatusChanged(nats.CLOSED)
		if !nc.IsClosed() {
			select {
			case <-closed:
			case <-ctx.Done():
			}
		}
		nc.RemoveStatusListener(closed)
		if ctx.Err() != nil {
			return
		}
		if m.cfg.Reconnect == nil {
			m.log.Error("NATS connection closed for good: nothing is stored from now on (give Config.Reconnect to open a new one)", "err", nc.LastError())
			return
		}
		m.log.Error("NATS connection closed for good (nats.go does not reconnect after this error): opening a new one", "err", nc.LastError())
		st := m.reopen(ctx)
		if st == nil {
			return
		}
		m.live.cur.Store(st)
		m.reconnects.Add(1)
		m.log.Warn("NATS connection replaced: storing again", "url", st.nc.ConnectedUrlRedacted())
	}
}

// reopen gets a JetStream from Config.Reconnect and opens the buckets
// through it, every reconnectRetry until it succeeds (nil once ctx ends).
// A JetStream it got but cannot use, its connection is closed.
func (m *Monitor) reopen(ctx context.Context) *jsStore {
	var lastLog time.Time
	for {
		js, err := m.cfg.Reconnect(ctx)
		var st *jsStore
		if err == nil {
			if st, err = m.openBuckets(ctx, js); err != nil {
				js.Conn().Close()
			}
		}
		if err == nil {
			return st
		}
		if time.Since(lastLog) >= 10*time.Second {
			m.log.Warn("no new NATS connection yet: trying again every second", "err", err)
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(reconnectRetry):
		}
	}
}

var _ interface {
	latestStore
	uploadStore
} = (*liveStore)(nil)
