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

// A streaming point is a telemetry flow's p95 age over the runs against
// the upload's goodput in its file, labelled with whose upload it was; a
// sleeping one is the wake-to-stored median against the bytes per wake.
func TestPeerPoints(t *testing.T) {
	run := func(age, upload float64) *report.Run {
		return &report.Run{Scenario: "s", Flows: []report.Flow{
			{Name: "mqtt", Kind: scenario.KindTelemetry, AgeMs: &report.AgeStats{P95: age}},
			{Name: "cubic", Kind: scenario.KindIperf3, GoodputBps: upload},
		}}
	}
	pts, sleeping, err := peerPoints([]*report.Run{run(100, 8e6), run(300, 10e6)})
	require.NoError(t, err)
	require.False(t, sleeping)
	require.Equal(t, []peerPoint{{label: "mqtt + CUBIC upload", x: 200, y: 9}}, pts)

	wake := &report.Run{Scenario: "w", Flows: []report.Flow{{Name: "fresh", Kind: scenario.KindTelemetry, Sent: 4,
		WakeToStoredMs: &report.Stats{P50: 65}, Link: &report.LinkCount{DataBytes: 3000, ReturnBytes: 1000}}}}
	pts, sleeping, err = peerPoints([]*report.Run{wake})
	require.NoError(t, err)
	require.True(t, sleeping)
	require.Equal(t, []peerPoint{{label: "fresh", x: 65, y: 1000}}, pts)

	_, _, err = peerPoints([]*report.Run{run(1, 1), {Scenario: "s"}})
	require.ErrorContains(t, err, "missing from a run")
}

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
