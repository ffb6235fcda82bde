package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/internal/benchtest"
	"github.com/fresh-udp/fresh/bench/report"
)

// The command over the committed trace scenarios, with the fake
// simulator: the flags reach the summary (bench/cellular, which tests
// its tables), which writes a figure per trace, traces.md beside them and
// every run in the JSON, and says so on stderr.
func TestTracesCommand(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := tracesCommand([]string{"--scenarios", filepath.Join("..", "..", "scenarios"), "--seeds", "1-3",
		"--cc", "owd,cubic", "--out", out, "--json", filepath.Join(out, "runs.json")}, &stdout, &stderr, benchtest.Sim)
	require.NoError(t, err, stderr.String())
	for _, trace := range []string{"att-lte-driving-2016", "tmobile-lte-short", "tmobile-umts-driving", "verizon-evdo-driving"} {
		for _, dir := range []string{"up", "down"} {
			path := filepath.Join(out, "traces-"+trace+"-"+dir+".png")
			benchtest.RequirePNG(t, path)
			require.Contains(t, stderr.String(), "freshbench traces: wrote "+path+"\n")
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "traces.md"))
	require.NoError(t, err)
	require.Contains(t, string(b), "](traces-tmobile-lte-short-up.png)", "linked beside the figures")
	require.Contains(t, string(b), "`go run ./bench/cmd/freshbench traces --seeds 1-3 --cc owd,cubic`")
	var runs []report.Run
	b, err = os.ReadFile(filepath.Join(out, "runs.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &runs))
	require.Len(t, runs, 16*2*3)
	require.Equal(t, "owd", runs[0].CC)
	require.Equal(t, int64(3), runs[2].Seed)
	require.Contains(t, stderr.String(), "freshbench traces: 96 runs in")
	require.Empty(t, stdout.String())
}

func TestTracesCommandUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, exitOK, run([]string{"traces", "-h"}, &stdout, &stderr))
	require.Contains(t, stdout.String(), "freshbench traces [--seeds LIST]")
	for _, args := range [][]string{
		{"traces", "--seeds", "3-1"},
		{"traces", "--cc", "warp"},
		{"traces", "--duration", "0s"},
		{"traces", "extra"},
		{"traces", "--md", "-", "--json", "-"},
		{"traces", "--scenarios", t.TempDir()},
	} {
		stderr.Reset()
		require.Equal(t, exitUsage, run(args, &stdout, &stderr), "%v", args)
		require.Contains(t, stderr.String(), "freshbench traces")
	}
}
