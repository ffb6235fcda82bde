package emudriver

import (
	"context"
	"encoding/json"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/internal/realtime"
)

func parse(t *testing.T, js string) *scenario.Scenario {
	t.Helper()
	s, err := scenario.Parse([]byte(js))
	require.NoError(t, err)
	return s
}

// noLeak checks that the goroutines a test started are gone (Close of
// everything is synchronous, but the runtime may take a moment to retire
// them).
func noLeak(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(3 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines: %d before, %d after:\n%s", before, n, buf[:runtime.Stack(buf, true)])
		}
	})
}

const bulkScenario = `{
  "name": "emu-bulk", "duration": "4s", "seed": 3,
  "forward": {"rate": "20Mbps", "delay": "10ms", "queue": {"limit": 200}},
  "reverse": {"rate": "20Mbps", "delay": "10ms", "queue": {"limit": 200}},
  "flows": [{"name": "bulk", "kind": "bulk", "cc": "owd"}]
}`

func TestBulkOverRelay(t *testing.T) {
	noLeak(t)
	s := parse(t, bulkScenario)
	var progress []time.Duration
	r, err := Run(context.Background(), s, Options{Trace: true, Progress: func(done, _ time.Duration) { progress = append(progress, done) }})
	require.NoError(t, err)
	require.Equal(t, "emu", r.Driver)
	require.Equal(t, "owd", r.CC)
	require.Equal(t, 4.0, r.DurationS)
	require.Len(t, r.Flows, 1)
	f := r.Flows[0]
	t.Logf("goodput %.2f Mbit/s, owd %+v, queue %+v, lost %d, retx %d, sent %d, delivered %d, util %+v, slow start %.2fs, signals %v",
		f.GoodputBps/1e6, f.OWDms, f.QueueMs, f.Lost, f.Retransmitted, f.Sent, f.Delivered, r.Utilization, f.SlowStartS, f.SignalShare)
	// Real time on a shared machine is noisy. Without the race detector
	// owd fills ~90 % of the link (18 of the 18.5 Mbit/s of payload the 82
	// bytes of headers leave); under it, the detector's slowdown shows up
	// as delay noise and owd backs off to ~20–30 %; on a loaded machine it
	// backs off further, as a delay-based controller must. So the floor
	// is the long real-time suite's; every run requires data delivered and
	// the link's ceiling.
	low := 0.30
	if raceEnabled {
		low = 0.10
	}
	require.Positive(t, f.GoodputBps)
	require.Positive(t, f.Delivered)
	realtime.Check(t, f.GoodputBps > low*20e6, "goodput %.2f Mbit/s > %.0f %% of the 20 Mbit/s link", f.GoodputBps/1e6, low*100)
	realtime.Check(t, r.Utilization.Forward > low, "forward utilisation %.2f > %.2f", r.Utilization.Forward, low)
	require.Less(t, f.GoodputBps, 1.10*20e6)
	require.Greater(t, f.OWDms.P50, 10.0, "the path's 10 ms are in every packet's OWD")
	require.Less(t, f.OWDms.P50, 200.0)
	require.GreaterOrEqual(t, f.QueueMs.P50, 0.0)
	require.Equal(t, 1.0, r.Jain)
	require.NotNil(t, f.Series)
	require.InDelta(t, 40, len(f.Series.T), 1)
	require.NotEmpty(t, f.OWDSamples)
	require.NotEmpty(t, progress)
	require.Equal(t, 4*time.Second, progress[len(progress)-1])

	b, err := json.Marshal([]*report.Run{r})
	require.NoError(t, err)
	var back []map[string]any
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, "emu", back[0]["driver"])
}

func TestUpdatesOverRelay(t *testing.T) {
	noLeak(t)
	s := parse(t, `{
  "name": "emu-acp", "duration": "4s",
  "forward": {"rate": "2Mbps", "delay": "20ms", "queue": {"limit": 50}},
  "reverse": {"rate": "2Mbps", "delay": "20ms", "queue": {"limit": 50}},
  "flows": [{"name": "updates", "kind": "acp", "size": 512, "dscp": "CS7"}]
}`)
	r, err := Run(context.Background(), s, Options{})
	require.NoError(t, err)
	require.Equal(t, "-", r.CC)
	f := r.Flows[0]
	t.Logf("age %+v, rate %v Hz, owd %+v, sent %d, delivered %d, lost %d", *f.AgeMs, *f.RateHz, f.OWDms, f.Sent, f.Delivered, f.Lost)
	require.NotNil(t, f.AgeMs)
	require.NotNil(t, f.RateHz)
	require.Greater(t, f.AgeMs.Mean, 20.0, "age includes the path's delay")
	require.Less(t, f.AgeMs.Mean, 2000.0)
	require.False(t, f.AgeMs.Mean != f.AgeMs.Mean, "finite")
	require.GreaterOrEqual(t, f.AgeMs.P95, f.AgeMs.Mean*0.5)
	require.Greater(t, *f.RateHz, 0.0)
	require.Greater(t, f.Delivered, int64(0))
	require.Greater(t, f.OWDms.P50, 20.0)
	require.Greater(t, f.GoodputBps, 0.0)
}

// Fixed-rate update flows run over the relay at their rate, both ways
// (the reverse one from the Listener's side).
func TestFixedUpdatesOverRelay(t *testing.T) {
	noLeak(t)
	s := parse(t, `{
  "name": "emu-fixed", "duration": "3s",
  "forward": {"rate": "2Mbps", "delay": "20ms", "queue": {"limit": 30}},
  "reverse": {"rate": "2Mbps", "delay": "20ms"},
  "flows": [{"name": "u50", "kind": "fixed", "update_rate": 50, "size": 500},
            {"name": "rev20", "kind": "fixed", "update_rate": 20, "size": 300, "reverse": true}]
}`)
	r, err := Run(context.Background(), s, Options{})
	require.NoError(t, err)
	for i, hz := range []float64{50, 20} {
		f := r.Flows[i]
		t.Logf("%s: rate %v Hz, age %+v, delivered %d", f.Name, *f.RateHz, *f.AgeMs, f.Delivered)
		require.Equal(t, "fixed", f.Kind)
		// A fixed policy never sends faster than its rate; on a busy host
		// (timers late, the race detector) it may send somewhat slower.
		require.LessOrEqual(t, float64(f.Sent), hz*3*1.05+1, "%s sent", f.Name)
		require.Greater(t, float64(f.Sent), hz*3*0.5, "%s sent", f.Name)
		require.Greater(t, float64(f.Delivered), 0.8*float64(f.Sent))
		require.Greater(t, f.AgeMs.Mean, 20.0, "age includes the path's delay")
	}
}

func TestDelayChangeRaisesOWD(t *testing.T) {
	noLeak(t)
	s := parse(t, `{
  "name": "emu-change", "duration": "4s",
  "forward": {"rate": "10Mbps", "delay": "10ms"},
  "reverse": {"rate": "10Mbps", "delay": "10ms"},
  "flows": [{"name": "probe", "kind": "cbr", "rate": "400kbps", "size": 500}],
  "changes": [{"at": "2s", "forward": {"delay": "60ms"}}]
}`)
	r, err := Run(context.Background(), s, Options{Trace: true})
	require.NoError(t, err)
	f := r.Flows[0]
	se := f.Series
	var before, after []float64
	for i, ts := range se.T {
		switch {
		case ts > 0.5 && ts <= 1.9:
			before = append(before, se.OWDms[i])
		case ts > 2.5:
			after = append(after, se.OWDms[i])
		}
	}
	mb, ma := report.Summarize(before).P50, report.Summarize(after).P50
	t.Logf("OWD p50 before %.1f ms, after %.1f ms; queue %+v", mb, ma, f.QueueMs)
	require.InDelta(t, 10, mb, 5)
	require.InDelta(t, 60, ma, 8)
	require.Less(t, f.QueueMs.P50, 5.0, "the delay change is propagation, not queueing")
	require.Greater(t, f.Delivered, int64(300))
	// Lost = sent − delivered: what is still in the 60 ms pipe at the end counts.
	require.LessOrEqual(t, f.Lost, int64(10))
}

func TestCancel(t *testing.T) {
	noLeak(t)
	s := parse(t, `{
  "name": "emu-cancel", "duration": "30s",
  "forward": {"rate": "10Mbps", "delay": "5ms"},
  "reverse": {"rate": "10Mbps", "delay": "5ms"},
  "flows": [{"name": "bulk", "kind": "bulk"}, {"name": "u", "kind": "acp"},
            {"name": "rev", "kind": "cbr", "rate": "1Mbps", "reverse": true}]
}`)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(time.Second, cancel)
	start := time.Now()
	_, err := Run(ctx, s, Options{})
	require.ErrorIs(t, err, context.Canceled)
	// Long before the scenario's 30 s, with room for a loaded machine's
	// teardown.
	require.Less(t, time.Since(start), 10*time.Second)
}

func TestUnsupported(t *testing.T) {
	for _, js := range []string{
		`{"name": "x", "duration": "1s", "forward": {"rate": "1Mbps"}, "reverse": {"rate": "1Mbps"},
		  "flows": [{"kind": "iperf3"}]}`,
		`{"name": "x", "duration": "1s", "forward": {"rate": "1Mbps"}, "reverse": {"rate": "1Mbps"},
		  "flows": [{"kind": "telemetry"}]}`,
		`{"name": "x", "duration": "1s", "forward": {"rate": "1Mbps"}, "reverse": {"rate": "1Mbps"},
		  "flows": [{"kind": "fixed", "update_rate": 10, "reverse": true}, {"name": "l", "kind": "lazy", "reverse": true}]}`,
		`{"name": "x", "duration": "1s", "clock_offset": "5ms", "forward": {"rate": "1Mbps"}, "reverse": {"rate": "1Mbps"},
		  "flows": [{"kind": "bulk"}]}`,
		`{"name": "x", "duration": "1s", "forward": {"rate": "1Mbps"}, "reverse": {"rate": "1Mbps"},
		  "flows": [{"kind": "bulk", "extra_delay": "10ms"}]}`,
		`{"name": "x", "duration": "1s", "forward": {"rate": "1Mbps"}, "reverse": {"rate": "1Mbps"},
		  "flows": [{"kind": "bulk", "max_window": 20000}]}`,
	} {
		_, err := Run(context.Background(), parse(t, js), Options{})
		require.ErrorIs(t, err, ErrUnsupported)
	}
}
