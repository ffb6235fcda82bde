package emudriver

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/scenario"
)

// loadTrace reads a committed trace scenario, cut to d.
func loadTrace(t *testing.T, name string, d time.Duration) *scenario.Scenario {
	t.Helper()
	s, err := scenario.Load(filepath.Join("..", "scenarios", name+".json"))
	require.NoError(t, err)
	s.Duration = scenario.Duration(d)
	return s
}

// The TUN router runs a cellular-trace scenario: owd's data crosses the
// trace-driven link (CoDel on a T-Mobile LTE uplink window), every packet
// at least the path's 20 ms late. Skipped without root or /dev/net/tun.
func TestTraceOverTUN(t *testing.T) {
	s := loadTrace(t, "trace-tmobile-lte-short-up-codel", 3*time.Second)
	r := runTUN(t, s)
	f := flowOf(t, r, "bulk")
	t.Logf("goodput %.2f Mbit/s, owd %+v, util %+v", f.GoodputBps/1e6, f.OWDms, r.Utilization)
	require.Positive(t, f.Bytes)
	require.Greater(t, f.OWDms.P50, 20.0)
	require.Positive(t, r.Utilization.Forward)
	require.LessOrEqual(t, r.Utilization.Forward, 1.0)
}
