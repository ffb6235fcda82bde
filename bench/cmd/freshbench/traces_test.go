package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/sim"
)

// The summary over the committed trace scenarios, with the fake
// simulator: a figure per trace, a table per trace with a row per queue
// and controller, the worst seed named, every run in the JSON.
func TestTracesCommand(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := tracesCommand([]string{"--scenarios", filepath.Join("..", "..", "scenarios"), "--seeds", "1-3",
		"--cc", "owd,cubic", "--out", out, "--json", filepath.Join(out, "runs.json")}, &stdout, &stderr, fakeSim)
	require.NoError(t, err, stderr.String())
	for _, trace := range []string{"att-lte-driving-2016", "tmobile-lte-short", "tmobile-umts-driving", "verizon-evdo-driving"} {
		for _, dir := range []string{"up", "down"} {
			requirePNG(t, filepath.Join(out, "traces-"+trace+"-"+dir+".png"))
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "traces.md"))
	require.NoError(t, err)
	md := string(b)
	require.Contains(t, md, "## Cellular traces")
	require.Contains(t, md, "### TMobile-LTE-short.up (ACKs: TMobile-LTE-short.down)")
	require.Contains(t, md, "![TMobile-LTE-short.up: throughput against p95 one-way delay](traces-tmobile-lte-short-up.png)")
	require.Contains(t, md, "`go run ./bench/cmd/freshbench traces --seeds 1-3 --cc owd,cubic`")
	// The fake's goodput grows and its delay grows with seed % 5: seed 1
	// is the worst for throughput, seed 3 for delay.
	var rows []string
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| fifo | owd | ") || strings.HasPrefix(l, "| codel | cubic | ") {
			rows = append(rows, l)
		}
	}
	require.Len(t, rows, 2*8+2, "a row per trace, and two in the overview")
	require.Regexp(t, `^\| fifo \| owd \| [0-9.]+ \| [0-9.]+ \(seed 1\) \| [0-9.]+ \| [0-9.]+ \(seed 3\) \| 93\.0 % \|$`, rows[2], "the first trace's table, after the overview")
	var runs []report.Run
	b, err = os.ReadFile(filepath.Join(out, "runs.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &runs))
	require.Len(t, runs, 16*2*3)
	require.Equal(t, "owd", runs[0].CC)
	require.Equal(t, int64(1), runs[0].Seed)
	require.Equal(t, int64(3), runs[2].Seed)
	require.Contains(t, stderr.String(), "freshbench traces: 96 runs in")
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

// The real simulator through the command: one trace scenario (its trace
// given by absolute path, the file outside the repository), 2 s, two
// seeds; the Markdown to stdout.
func TestTracesCommandSim(t *testing.T) {
	dir := t.TempDir()
	trace, err := filepath.Abs(filepath.Join("..", "..", "traces", "TMobile-LTE-short.up"))
	require.NoError(t, err)
	pair := strings.TrimSuffix(trace, ".up") + ".down"
	writeScenario(t, dir, "trace-x-fifo.json", `{"name": "trace-x-fifo", "duration": "60s", "mss": 1400,
	  "forward": {"trace": "`+trace+`", "trace_start": "random", "delay": "20ms", "queue": {"limit": 200}},
	  "reverse": {"trace": "`+pair+`", "trace_start": "random", "delay": "20ms", "queue": {"limit": 200}},
	  "flows": [{"name": "bulk", "kind": "bulk"}]}`)
	var stdout, stderr bytes.Buffer
	err = tracesCommand([]string{"--scenarios", dir, "--seeds", "1,2", "--cc", "owd,cubic", "--duration", "2s",
		"--out", dir, "--md", "-"}, &stdout, &stderr, sim.Run)
	require.NoError(t, err, stderr.String())
	require.Contains(t, stdout.String(), "### TMobile-LTE-short.up (ACKs: TMobile-LTE-short.down)")
	require.Contains(t, stdout.String(), "| fifo | cubic | ")
	requirePNG(t, filepath.Join(dir, "traces-tmobile-lte-short-up.png"))
}
