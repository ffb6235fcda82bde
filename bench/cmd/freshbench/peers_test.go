package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
)

func TestPeersCommand(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "r.json")
	b, err := json.Marshal([]*report.Run{{Scenario: "s", Flows: []report.Flow{
		{Name: "udp", Kind: scenario.KindTelemetry, AgeMs: &report.AgeStats{P95: 120}},
		{Name: "fresh", Kind: scenario.KindTelemetry, AgeMs: &report.AgeStats{P95: 110}},
		{Name: "up", Kind: scenario.KindBulk, GoodputBps: 9e6}}}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(in, b, 0o600))
	out := filepath.Join(dir, "p.png")
	var stdout, stderr bytes.Buffer
	require.Equal(t, exitOK, run([]string{"peers", "--out", out, in}, &stdout, &stderr), stderr.String())
	st, err := os.Stat(out)
	require.NoError(t, err)
	require.Positive(t, st.Size())

	stderr.Reset()
	require.Equal(t, exitUsage, run([]string{"peers", in}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "--out")
	stderr.Reset()
	require.NoError(t, os.WriteFile(in, []byte(`{"not": "runs"}`), 0o600))
	require.Equal(t, exitUsage, run([]string{"peers", "--out", out, in}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "not the JSON array of runs")
}
