package emudriver

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
)

// runTUN runs a scenario through the TUN router, or skips the test with
// the reason it cannot run here.
func runTUN(t *testing.T, s *scenario.Scenario) *report.Run {
	t.Helper()
	if _, err := exec.LookPath(iperf3Binary); err != nil {
		t.Skipf("no %s: %v", iperf3Binary, err)
	}
	r, err := Run(context.Background(), s, Options{TUN: true})
	if errors.Is(err, ErrNoTUN) {
		t.Skip(err.Error())
	}
	require.NoError(t, err)
	return r
}

func flowOf(t *testing.T, r *report.Run, name string) report.Flow {
	t.Helper()
	for _, f := range r.Flows {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no flow %q", name)
	return report.Flow{}
}

// The CI smoke test of the TUN router: kernel CUBIC (iperf3) and our owd
// each move data through the router, alone in turn on a 20 Mbit/s, 20 ms
// path with a 100-packet FIFO, and owd queues less than CUBIC, which fills
// the buffer.
func TestTUNSmoke(t *testing.T) {
	s, err := scenario.Load(filepath.Join("..", "scenarios", "tun-smoke.json"))
	require.NoError(t, err)
	r := runTUN(t, s)
	require.Equal(t, "emu-tun", r.Driver)
	owd, cubic := flowOf(t, r, "owd"), flowOf(t, r, "kernel-cubic")
	t.Logf("owd: %.2f Mbit/s, queue p95 %.1f ms, %d packets; cubic: %.2f Mbit/s, queue p95 %.1f ms, %d segments, %d retransmitted",
		owd.GoodputBps/1e6, owd.QueueMs.P95, owd.Delivered, cubic.GoodputBps/1e6, cubic.QueueMs.P95, cubic.Delivered, cubic.Retransmitted)
	for _, f := range []report.Flow{owd, cubic} {
		require.Positive(t, f.Bytes, f.Name)
		require.Positive(t, f.Delivered, "%s: data packets seen at the router", f.Name)
		require.Positive(t, f.GoodputBps, f.Name)
	}
	require.Less(t, owd.QueueMs.P95, cubic.QueueMs.P95)
	require.Positive(t, r.Utilization.Forward)
}
