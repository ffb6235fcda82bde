package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/internal/benchtest"
	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/sweep"
)

// TestEndToEnd runs the real simulator through the command line twice:
// exit 0, the same JSON bytes, the plots and the sweep written.
func TestEndToEnd(t *testing.T) {
	dir := t.TempDir()
	scen := benchtest.WriteFile(t, dir, "s.json", benchtest.Scenario)
	var files [][]byte
	for i, sub := range []string{"a", "b"} {
		out := filepath.Join(dir, sub)
		require.NoError(t, os.Mkdir(out, 0o755))
		args := []string{"sim", "--cc", "owd,cubic", "--duration", "10s", "--json", filepath.Join(out, "runs.json"),
			"--acp-sweep", "--sweep-json", filepath.Join(out, "sweep.json"), scen}
		if i == 0 {
			args = append(args, "--plot", filepath.Join(out, "plots"))
		}
		var stdout, stderr bytes.Buffer
		require.Equal(t, exitOK, run(args, &stdout, &stderr), stderr.String())
		if i == 0 { // --plot names every file it wrote, and nothing else is said
			for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
				// A slow machine (the race detector) may also print a
				// progress line for a run that takes over 2 s.
				require.Regexp(t, `^(freshbench sim: wrote .*/plots/dumbbell-test-[a-z-]+\.png|.* \[[=> ]+\] +\d+%)$`, line)
			}
			require.Contains(t, stderr.String(), "dumbbell-test-summary.png")
			require.Contains(t, stderr.String(), "dumbbell-test-sweep.png")
		} else {
			require.NotContains(t, stderr.String(), "wrote", "no --plot, no files")
		}
		require.Contains(t, stdout.String(), "worst / CONSTRAINED")
		b, err := os.ReadFile(filepath.Join(out, "runs.json"))
		require.NoError(t, err)
		files = append(files, b)
	}
	require.Equal(t, files[0], files[1], "the same inputs give the same JSON, traced or not")

	var runs []report.Run
	require.NoError(t, json.Unmarshal(files[0], &runs))
	require.Greater(t, len(runs), 2+2+sweep.Coarse)
	require.Equal(t, "owd", runs[0].CC)
	require.Equal(t, "cubic", runs[1].CC)
	require.Equal(t, "acp", runs[2].CC)
	require.Equal(t, "lazy", runs[3].CC)
	require.Equal(t, 10.0, runs[0].DurationS)
	require.Equal(t, int64(7), runs[0].Seed)

	var sums []sweep.Summary
	b, err := os.ReadFile(filepath.Join(dir, "a", "sweep.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &sums))
	require.Len(t, sums, 1)
	require.Positive(t, sums[0].OracleRateHz)
	require.Positive(t, sums[0].OracleAgeMs)
	require.Positive(t, sums[0].ConstrainedAgeMs)
	require.Len(t, sums[0].PerSeed, 1)
	require.Equal(t, int64(7), sums[0].PerSeed[0].Seed)

	for _, name := range []string{"dumbbell-test-throughput.png", "dumbbell-test-owd.png", "dumbbell-test-cwnd.png",
		"dumbbell-test-age.png", "dumbbell-test-cdf.png", "dumbbell-test-summary.png", "dumbbell-test-sweep.png"} {
		benchtest.RequirePNG(t, filepath.Join(dir, "a", "plots", name))
	}
}
