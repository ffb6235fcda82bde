package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/report"
)

// TestEmuRelayRunsTraceScenario: "freshbench emu --relay" runs a committed
// cellular-trace scenario (its trace path resolved from the repository
// root), cut to 3 s: data crosses the trace link, at least the path's
// 20 ms late.
func TestEmuRelayRunsTraceScenario(t *testing.T) {
	out := filepath.Join(t.TempDir(), "runs.json")
	var stdout, stderr bytes.Buffer
	code := run([]string{"emu", "--relay", "--duration", "3s", "--json", out,
		filepath.Join("..", "..", "scenarios", "trace-tmobile-lte-short-up-fifo.json")}, &stdout, &stderr)
	require.Equal(t, exitOK, code, stderr.String())
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	var runs []report.Run
	require.NoError(t, json.Unmarshal(b, &runs))
	require.Len(t, runs, 1)
	f := runs[0].Flows[0]
	t.Logf("goodput %.2f Mbit/s, owd %+v, util %+v", f.GoodputBps/1e6, f.OWDms, runs[0].Utilization)
	require.Equal(t, "emu", runs[0].Driver)
	require.Positive(t, f.Bytes)
	require.Greater(t, f.OWDms.P50, 20.0)
	require.Positive(t, runs[0].Utilization.Forward)
	require.LessOrEqual(t, runs[0].Utilization.Forward, 1.0)
}
