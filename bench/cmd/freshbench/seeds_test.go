package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/emudriver"
	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/bench/sim"
)

func TestParseSeedList(t *testing.T) {
	for list, want := range map[string][]int64{
		"1-20":       {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20},
		"1,3,7-9":    {1, 3, 7, 8, 9},
		" 5 , 0":     {5, 0},
		"4-4":        {4},
		"10-12,2,30": {10, 11, 12, 2, 30},
	} {
		got, err := parseSeedList("freshbench sim", list)
		require.NoError(t, err, list)
		require.Equal(t, want, got, list)
	}
	for list, want := range map[string]string{
		"":        "empty element",
		"1,,2":    "empty element",
		"1,":      "empty element",
		"x":       `"x" is not a seed`,
		"-3":      `"-3" is not a seed`,
		"1-x":     `"1-x" is not a range`,
		"1-2-3":   `"1-2-3" is not a range`,
		"5-3":     `range "5-3" runs backwards`,
		"1-3,2":   "seed 2 given twice",
		"0-20000": "more than 10000 seeds",
	} {
		_, err := parseSeedList("freshbench sim", list)
		require.Error(t, err, list)
		require.Equal(t, exitUsage, exitCode(err), list)
		require.Contains(t, err.Error(), want, list)
		require.Contains(t, err.Error(), "--seeds", list)
	}
}

func TestParseSeedsFlags(t *testing.T) {
	cfg, err := parseSimArgs([]string{"a.json", "--seeds", "1-3", "-v", "--cc", "owd,cubic"})
	require.NoError(t, err)
	require.Equal(t, simConfig{CCs: []string{"owd", "cubic"}, Seeds: []int64{1, 2, 3}, Verbose: true, Scenarios: []string{"a.json"}}, *cfg)
	require.True(t, cfg.multi())

	for _, tc := range []struct {
		cmd  string
		args []string
		want string
	}{
		{"sim", []string{"--seed", "1", "--seeds", "1-2", "a.json"}, "--seed and --seeds are mutually exclusive"},
		{"sim", []string{"--seeds", "1-2", "--seed", "0", "a.json"}, "--seed and --seeds are mutually exclusive"},
		{"sim", []string{"--seeds", "2-1", "a.json"}, "runs backwards"},
		{"sim", []string{"--seeds", "1-2", "--plot", "d", "a.json"}, "--plot draws one run"},
		{"sim", []string{"--runs", "3", "a.json"}, "-runs"}, // emu only
		{"emu", []string{"--tun", "--runs", "0", "a.json"}, "--runs must be at least 1"},
		{"emu", []string{"--tun", "--runs", "2", "--plot", "d", "a.json"}, "--plot draws one run"},
	} {
		t.Run(tc.cmd+" "+strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := parseRunArgs(tc.cmd, tc.args)
			require.Error(t, err)
			require.Equal(t, exitUsage, exitCode(err))
			require.Contains(t, err.Error(), tc.want)
		})
	}
	cfg, err = parseRunArgs("sim", []string{"--seeds", "1-2", "--acp-sweep", "a.json"})
	require.NoError(t, err, "the sweep runs every seed: paired oracles")
	require.Equal(t, []int64{1, 2}, cfg.Seeds)
	require.True(t, cfg.ACPSweep)
	cfg, err = parseRunArgs("emu", []string{"--tun", "--runs", "5", "a.json"})
	require.NoError(t, err)
	require.Equal(t, 5, cfg.Runs)
	require.True(t, cfg.multi())
	cfg, err = parseRunArgs("emu", []string{"--tun", "--runs", "1", "a.json"})
	require.NoError(t, err)
	require.False(t, cfg.multi(), "one run: the per-run table as before")

	for _, name := range []string{"seeds", "verbose"} {
		require.Contains(t, simUsage, "--"+name+" ")
		require.Contains(t, emuUsage, "--"+name+" ")
	}
	require.Contains(t, emuUsage, "--runs ")
}

// TestSimSeedsPaired runs the real simulator over two seeds: every
// controller gets the same two seeds, the JSON carries every run with its
// seed, and the summary replaces the per-run table unless --verbose.
func TestSimSeedsPaired(t *testing.T) {
	dir := t.TempDir()
	p := writeScenario(t, dir, "s.json", testScenario)
	jsonPath := filepath.Join(dir, "out.json")
	ccs := []string{"owd", "cubic", "reno"}
	stdout, _, err := runFake(t, sim.Run, "--seeds", "3,8", "--cc", strings.Join(ccs, ","), "--duration", "12s", "--json", jsonPath, p)
	require.NoError(t, err)

	b, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	var runs []report.Run
	require.NoError(t, json.Unmarshal(b, &runs))
	require.Len(t, runs, 2*len(ccs))
	var got []string
	for _, r := range runs {
		got = append(got, r.CC+"/"+string(rune('0'+r.Seed)))
	}
	require.Equal(t, []string{"owd/3", "owd/8", "cubic/3", "cubic/8", "reno/3", "reno/8"}, got)
	require.NotEqual(t, runs[0].Flows[0].Bytes, runs[1].Flows[0].Bytes, "the seed reaches the simulator")

	require.NotContains(t, stdout, "FLOW", "no per-run table without --verbose")
	require.Contains(t, stdout, "SHARE min–max")
	for _, cc := range ccs {
		require.Regexp(t, `dumbbell-test\s+`+cc+`\s+2\s+`, stdout)
	}

	// The same seeds give the same runs: the file is the same bytes.
	stdout, _, err = runFake(t, sim.Run, "--seeds", "3,8", "--cc", strings.Join(ccs, ","), "--duration", "12s", "-v", "--json", jsonPath+"2", p)
	require.NoError(t, err)
	b2, err := os.ReadFile(jsonPath + "2")
	require.NoError(t, err)
	require.Equal(t, b, b2)
	require.Contains(t, stdout, "FLOW", "--verbose adds the per-run table")
	require.Contains(t, stdout, "SHARE min–max")
}

// TestEmuRuns: --runs repeats each controller's run with the file's seed,
// and the summary's share is fresh's beside kernel TCP when every bulk flow
// is pinned.
func TestEmuRuns(t *testing.T) {
	dir := t.TempDir()
	scen := writeScenario(t, dir, "s.json", testScenario)
	var opts []emudriver.Options
	var stdout, stderr bytes.Buffer
	code := runEmu(context.Background(), []string{"--relay", "--runs", "3", "--cc", "owd,cubic", "--duration", "12s", "--json", "-", scen},
		&stdout, &stderr, fakeEmu(&opts))
	require.Equal(t, exitOK, code, stderr.String())
	require.Len(t, opts, 6)
	var runs []report.Run
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &runs))
	require.Len(t, runs, 6)
	for i, r := range runs {
		require.Equal(t, int64(7), r.Seed)
		require.Equal(t, []string{"owd", "cubic"}[i/3], r.CC)
	}
	require.Regexp(t, `dumbbell-test\s+owd\s+3\s+`, stderr.String())
}

func TestSummarize(t *testing.T) {
	m := summarize([]float64{4, 1, 3, 2})
	require.Equal(t, 4, m.N)
	require.Equal(t, 2.5, m.Mean)
	require.InDelta(t, math.Sqrt(5.0/3), m.SD, 1e-6, "sample SD: Σ(x−2.5)² = 5 over n−1 = 3 (kept to six decimals)")
	require.Equal(t, 1.0, m.Min)
	require.Equal(t, 4.0, m.Max)
	require.Equal(t, meanSD{N: 1, Mean: 7, Min: 7, Max: 7}, summarize([]float64{7}))
	require.Equal(t, meanSD{}, summarize(nil))
}

// TestSummarizeRunsHandCase checks every column on two hand-made runs of
// the test scenario: flows "bulk" (unpinned, under test), "competitor"
// (pinned bulk), a reverse cbr flow and an update flow, which compete for
// nothing in the share.
func TestSummarizeRunsHandCase(t *testing.T) {
	s := loadTestScenario(t)
	mk := func(test, comp, q95, owd95, jain, util float64) *report.Run {
		return &report.Run{CC: "owd", Jain: jain, Utilization: report.Utilization{Forward: util}, Flows: []report.Flow{
			{Name: "bulk", Kind: "bulk", GoodputBps: test, QueueMs: report.Stats{P95: q95}, OWDms: report.Stats{P95: owd95}},
			{Name: "competitor", Kind: "bulk", GoodputBps: comp, QueueMs: report.Stats{P95: 999}, OWDms: report.Stats{P95: 999}},
			{Name: "udp-rev", Kind: "cbr", GoodputBps: 1e6},
			{Name: "updates", Kind: "acp", GoodputBps: 1e6},
		}}
	}
	sum := summarizeRuns(s, "owd", []*report.Run{mk(100e3, 300e3, 10, 60, 0.8, 0.9), mk(300e3, 300e3, 30, 80, 1.0, 1.0)})
	require.Equal(t, "dumbbell-test", sum.Scenario)
	require.Equal(t, 2, sum.Runs)
	require.InDelta(t, 200e3, sum.GoodputBps.Mean, 1e-6)
	require.InDelta(t, math.Sqrt(2)*100e3, sum.GoodputBps.SD, 1e-6)
	require.InDelta(t, (0.25+0.5)/2, sum.Share.Mean, 1e-12, "100/(100+300), 300/(300+300)")
	require.Equal(t, 0.25, sum.Share.Min)
	require.Equal(t, 0.5, sum.Share.Max)
	require.InDelta(t, 0.9, sum.Jain.Mean, 1e-12)
	require.InDelta(t, 0.95, sum.Utilization.Mean, 1e-12)
	require.InDelta(t, 20, sum.QueueP95Ms.Mean, 1e-12, "the pinned competitor's queueing is not the test flow's")
	require.InDelta(t, 70, sum.OWDP95Ms.Mean, 1e-12)

	var out bytes.Buffer
	require.NoError(t, writeSummaryTable(&out, []ccSummary{sum}))
	require.Contains(t, out.String(), "200 ± 141 kbit/s")
	require.Contains(t, out.String(), "37.5 ± 17.7%")
	require.Contains(t, out.String(), "25.0–50.0%")
	require.Contains(t, out.String(), "20.0 ± 14.1")

	// Every bulk flow pinned, beside kernel TCP (the emu --tun case):
	// fresh's flow is under test, iperf3 competes.
	tun := &scenario.Scenario{Flows: []scenario.Flow{{Name: "owd", Kind: "bulk", Pin: true}, {Name: "kernel-cubic", Kind: "iperf3"}, {Name: "rev", Kind: "iperf3", Reverse: true}}}
	r := &report.Run{Flows: []report.Flow{{Name: "owd", GoodputBps: 0.4e6}, {Name: "kernel-cubic", GoodputBps: 9.6e6}, {Name: "rev", GoodputBps: 5e6}}}
	sum = summarizeRuns(tun, "kernel-cubic", []*report.Run{r})
	require.InDelta(t, 0.04, sum.Share.Mean, 1e-12)
	require.InDelta(t, 0.4e6, sum.GoodputBps.Mean, 1e-6)
	test, among := flowsUnderTest(tun)
	require.Equal(t, goodputShare(r, byName("owd"), among), goodputShare(r, test, among))
}
