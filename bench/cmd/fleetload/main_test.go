package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/internal/rusage"
)

// The smoke version of the fleet run: 20 agents against one fresh-monitor
// process (built from the tree) for 3 s. Every device's last update is in
// the bucket, the watcher saw updates with a sane age, the monitor held
// every agent and stored their updates.
func TestFleetSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/fresh-monitor and runs it with 20 agents")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var out strings.Builder
	reps, err := run(ctx, []string{"-agents", "20", "-monitors", "1", "-rate", "5", "-duration", "3s", "-settle", "10s"}, &out)
	t.Log("\n" + out.String())
	require.NoError(t, err)
	require.Len(t, reps, 1)
	r := reps[0]
	require.Zero(t, r.Check.Missing, "devices missing from the bucket: %v", r.Check.Examples)
	require.Zero(t, r.Check.Stale, "devices whose record is not their last update: %v", r.Check.Examples)
	require.Zero(t, r.BadValues)
	require.Len(t, r.PerMonitor, 1)
	require.Equal(t, 20.0, r.PerMonitor[0].Devices, "the monitor holds every agent")
	// ACP sends at most the sensing rate (5/s), less when the shared CPU
	// queues; a broken send path gives next to nothing.
	require.Greater(t, r.Seen, 20*3, "updates the watcher saw")
	require.LessOrEqual(t, float64(r.Seen), 20*5*(r.DurationS+r.SettleS)+20)
	require.GreaterOrEqual(t, r.Stored, float64(r.Seen), "the watcher sees only what was stored")
	require.Positive(t, r.Age.P50)
	require.Less(t, r.Age.P99, 2000.0, "ms: end-to-end age within a few update periods")
	require.Less(t, r.Check.GeneratedSkewMaxUS, int64(100_000), "the monitor's clock correction on one host")
	require.Positive(t, r.CPUCores, "the monitor's CPU was read")
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"-monitors", "2, 1", "-agents", "10"}, &strings.Builder{})
	require.NoError(t, err)
	require.Equal(t, []int{2, 1}, o.monitors)
	for _, args := range [][]string{{"-monitors", "0"}, {"-monitors", "1,x"}, {"-agents", "0"}, {"-rate", "0"},
		{"-duration", "0s"}, {"-per-socket", "0"}, {"-agents", "100000"}, {"extra"}} {
		_, err := parseFlags(args, &strings.Builder{})
		require.Error(t, err, "%q", args)
	}
}

// /proc/<pid>/stat's utime+stime agree with getrusage on this process,
// to a couple of clock ticks.
func TestCPUTimeReadsThisProcess(t *testing.T) {
	for {
		if d, err := rusage.Process(); err != nil || d > 200*time.Millisecond {
			require.NoError(t, err)
			break
		}
	}
	lo, _ := rusage.Process()
	d, err := cpuTime(os.Getpid())
	require.NoError(t, err)
	hi, _ := rusage.Process()
	require.GreaterOrEqual(t, d, lo-30*time.Millisecond)
	require.LessOrEqual(t, d, hi+30*time.Millisecond)
}
