package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// kvBucket is fresh-monitor's default KV bucket (monitor.DefaultKVBucket).
const kvBucket = "fresh-latest"

// record is the JSON value fresh-monitor stores per device
// (monitor.Record; this module does not import cmd/fresh-monitor's).
type record struct {
	Device    string    `json:"device"`
	Generated time.Time `json:"generated"`
	Arrived   time.Time `json:"arrived"`
	Payload   []byte    `json:"payload"`
}

// watcher follows every key of the bucket as a dashboard would and
// records each update's end-to-end age: the wall time it is seen here
// less the generation time the agent wrote into it (one host, one
// clock). It sees an update after JetStream stored it and the
// client library delivered it, so its queueing counts.
type watcher struct {
	kw   jetstream.KeyWatcher
	seen []atomic.Uint64 // per agent, the highest sequence number seen
	done chan struct{}

	mu   sync.Mutex
	ages []time.Duration
	// The age split where the monitor and JetStream stamped the record:
	// agent to the monitor's ReadUpdate (Record.Arrived − generation),
	// from there to JetStream storing it (the message's timestamp,
	// Created), and from there to this watcher.
	toMonitor, toStore, toWatcher []time.Duration
	bad                           int // values that are not a record of this run
	measured                      atomic.Bool
}

func openKV(ctx context.Context, natsURL string) (*nats.Conn, jetstream.KeyValue, error) {
	nc, err := nats.Connect(natsURL, nats.Name("fleetload"))
	if err != nil {
		return nil, nil, fmt.Errorf("NATS %s: %w", natsURL, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	kv, err := js.KeyValue(ctx, kvBucket)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("KV bucket %q: %w", kvBucket, err)
	}
	return nc, kv, nil
}

func watch(ctx context.Context, kv jetstream.KeyValue, agents int) (*watcher, error) {
	kw, err := kv.WatchAll(ctx, jetstream.UpdatesOnly(), jetstream.IgnoreDeletes())
	if err != nil {
		return nil, err
	}
	w := &watcher{kw: kw, seen: make([]atomic.Uint64, agents), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for e := range kw.Updates() {
			if e == nil {
				continue // the end of the initial values (none: UpdatesOnly)
			}
			now := time.Now()
			var r record
			idx, seq, gen, ok := 0, uint64(0), int64(0), json.Unmarshal(e.Value(), &r) == nil
			if ok {
				idx, seq, gen, ok = decodePayload(r.Payload)
			}
			if !ok || idx >= agents {
				w.mu.Lock()
				w.bad++
				w.mu.Unlock()
				continue
			}
			if seq > w.seen[idx].Load() {
				w.seen[idx].Store(seq)
			}
			if w.measured.Load() {
				w.mu.Lock()
				g := time.UnixMicro(gen)
				w.ages = append(w.ages, now.Sub(g))
				w.toMonitor = append(w.toMonitor, r.Arrived.Sub(g))
				w.toStore = append(w.toStore, e.Created().Sub(r.Arrived))
				w.toWatcher = append(w.toWatcher, now.Sub(e.Created()))
				w.mu.Unlock()
			}
		}
	}()
	return w, nil
}

// caughtUp says how many agents' last sent update the watcher has not
// seen yet.
func (w *watcher) behind(f *fleet) int {
	n := 0
	for i, a := range f.agents {
		if w.seen[i].Load() < a.lastSeq {
			n++
		}
	}
	return n
}

func (w *watcher) stop() {
	_ = w.kw.Stop()
	<-w.done
}

// Check is what the bucket holds of the fleet at the end.
type Check struct {
	Devices int `json:"devices"`
	// Missing: no record under the device's key. Stale: a record, but
	// not of the last update the agent sent. Both fail the run's check;
	// Missing fails the run.
	Missing int `json:"missing"`
	Stale   int `json:"stale"`
	// GeneratedSkewMaxUS is the largest difference between a record's
	// Generated (the transport's stamp corrected by the monitor's clock
	// offset estimate) and the generation time the agent wrote into the
	// payload, µs: on one host it is the estimate's error.
	GeneratedSkewMaxUS int64    `json:"generated_skew_max_us"`
	Examples           []string `json:"examples,omitempty"`
	// NotLast names the missing and stale devices (the first 1,000).
	NotLast []string `json:"not_last,omitempty"`
}

// check reads every device's key from the bucket and compares it with
// the last update its agent handed to the regulator.
func check(ctx context.Context, kv jetstream.KeyValue, f *fleet) Check {
	c := Check{Devices: len(f.agents)}
	var mu sync.Mutex
	note := func(s string) {
		if len(c.Examples) < 5 {
			c.Examples = append(c.Examples, s)
		}
		if len(c.NotLast) < 1000 {
			c.NotLast = append(c.NotLast, s)
		}
	}
	idx := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range idx {
				a := f.agents[i]
				e, err := kv.Get(ctx, a.name)
				mu.Lock()
				switch {
				case errors.Is(err, jetstream.ErrKeyNotFound):
					c.Missing++
					note(a.name + ": no record")
				case err != nil:
					c.Missing++
					note(fmt.Sprintf("%s: %v", a.name, err))
				default:
					var r record
					_, seq, gen, ok := 0, uint64(0), int64(0), json.Unmarshal(e.Value(), &r) == nil
					if ok {
						_, seq, gen, ok = decodePayload(r.Payload)
					}
					switch {
					case !ok || r.Device != a.name:
						c.Stale++
						note(fmt.Sprintf("%s: a record not of this agent (%q)", a.name, r.Device))
					case seq != a.lastSeq || gen != a.lastGen:
						c.Stale++
						note(fmt.Sprintf("%s: update %d stored, %d sent last", a.name, seq, a.lastSeq))
					default:
						skew := r.Generated.UnixMicro() - gen
						c.GeneratedSkewMaxUS = max(c.GeneratedSkewMaxUS, skew, -skew)
					}
				}
				mu.Unlock()
			}
		})
	}
	for i := range f.agents {
		idx <- i
	}
	close(idx)
	wg.Wait()
	slices.Sort(c.NotLast)
	c.Examples = c.NotLast[:min(len(c.NotLast), 5)]
	return c
}
