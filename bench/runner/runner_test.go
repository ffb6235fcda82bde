package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/emudriver"
	"github.com/fresh-udp/fresh/bench/internal/benchtest"
	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/bench/sim"
	"github.com/fresh-udp/fresh/bench/sweep"
)

// load reads scenario files as the command line names them.
func load(t *testing.T, paths ...string) []*scenario.Scenario {
	t.Helper()
	var scs []*scenario.Scenario
	for _, p := range paths {
		s, err := scenario.Load(p)
		require.NoError(t, err)
		scs = append(scs, s)
	}
	return scs
}

// runWith runs the scenario files under cfg with run, and returns what
// was printed.
func runWith(t *testing.T, run SimFunc, cfg Config, paths ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = New("sim", cfg, run, &out, &errOut).Run(load(t, paths...))
	return out.String(), errOut.String(), err
}

func readRuns(t *testing.T, path string) []report.Run {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var runs []report.Run
	require.NoError(t, json.Unmarshal(b, &runs))
	return runs
}

func TestOrderAndLabels(t *testing.T) {
	dir := t.TempDir()
	a := benchtest.WriteFile(t, dir, "a.json", benchtest.Scenario)
	b := benchtest.WriteFile(t, dir, "b.json", strings.Replace(benchtest.Scenario, "dumbbell-test", "second", 1))
	jsonPath := filepath.Join(dir, "out.json")

	_, _, err := runWith(t, benchtest.Sim, Config{CCs: []string{"owd", "reno"}, JSON: jsonPath}, a, b)
	require.NoError(t, err)
	var got []string
	for _, r := range readRuns(t, jsonPath) {
		got = append(got, r.Scenario+"/"+r.CC+"/"+r.Flows[0].CC+"/"+r.Flows[1].CC)
	}
	// The pinned competitor keeps reno.
	require.Equal(t, []string{"dumbbell-test/owd/owd/reno", "dumbbell-test/reno/reno/reno",
		"second/owd/owd/reno", "second/reno/reno/reno"}, got)

	// Without a list: the file's controllers, labelled by the first bulk flow.
	_, _, err = runWith(t, benchtest.Sim, Config{JSON: jsonPath}, a)
	require.NoError(t, err)
	runs := readRuns(t, jsonPath)
	require.Len(t, runs, 1)
	require.Equal(t, "cubic", runs[0].CC)

	noBulk := benchtest.LoadScenario(t)
	noBulk.Flows = noBulk.Flows[2:]
	require.Equal(t, "-", DefaultLabel(noBulk))
	noBulk.Flows = append(noBulk.Flows, scenario.Flow{Kind: scenario.KindIperf3, CC: "bbr"})
	require.Equal(t, "kernel-bbr", DefaultLabel(noBulk), "emu --tun: the kernel's controller")
}

// The same inputs give a byte-identical file, "-" writes the same bytes
// to stdout and moves the tables to stderr.
func TestJSONStable(t *testing.T) {
	dir := t.TempDir()
	p := benchtest.WriteFile(t, dir, "s.json", benchtest.Scenario)
	var files [][]byte
	for i := range 2 {
		out := filepath.Join(dir, "run"+string(rune('0'+i))+".json")
		_, _, err := runWith(t, benchtest.Sim, Config{CCs: []string{"owd", "cubic"}, ACPSweep: true, JSON: out}, p)
		require.NoError(t, err)
		b, err := os.ReadFile(out)
		require.NoError(t, err)
		files = append(files, b)
	}
	require.Equal(t, files[0], files[1])
	require.True(t, bytes.HasSuffix(files[0], []byte("}\n]\n")))
	require.NotContains(t, string(files[0]), "WallS")

	stdout, stderr, err := runWith(t, benchtest.Sim, Config{CCs: []string{"owd", "cubic"}, ACPSweep: true, JSON: "-"}, p)
	require.NoError(t, err)
	require.Equal(t, string(files[0]), stdout)
	require.Contains(t, stderr, "SCENARIO")
	require.Contains(t, stderr, "worst / CONSTRAINED", "the sweep's table too")

	// The sweep summaries: a JSON array even when nothing was swept.
	sweepPath := filepath.Join(dir, "sweep.json")
	noUpdates := benchtest.WriteFile(t, dir, "n.json", strings.Replace(benchtest.Scenario,
		`,
    {"name": "updates", "kind": "acp", "size": 1024, "dscp": "CS7"}`, "", 1))
	_, _, err = runWith(t, benchtest.Sim, Config{ACPSweep: true, SweepJSON: sweepPath}, noUpdates)
	require.NoError(t, err)
	b, err := os.ReadFile(sweepPath)
	require.NoError(t, err)
	require.Equal(t, "[]\n", string(b))
}

func TestFailures(t *testing.T) {
	p := benchtest.WriteFile(t, t.TempDir(), "s.json", benchtest.Scenario)
	_, _, err := runWith(t, func(*scenario.Scenario, sim.Options) (*report.Run, error) {
		return nil, errors.New("boom")
	}, Config{}, p)
	require.EqualError(t, err, "freshbench sim: dumbbell-test, cc cubic: boom")

	_, _, err = runWith(t, func(*scenario.Scenario, sim.Options) (*report.Run, error) {
		panic("not implemented yet")
	}, Config{}, p)
	require.ErrorContains(t, err, "freshbench sim: dumbbell-test, cc cubic: simulator panicked: not implemented yet")

	var out, errOut bytes.Buffer
	err = New("emu", Config{}, func(*scenario.Scenario, sim.Options) (*report.Run, error) {
		panic("no TUN")
	}, &out, &errOut).Run(load(t, p))
	require.ErrorContains(t, err, "freshbench emu: dumbbell-test, cc cubic: emulator panicked: no TUN")
}

func TestTableAndSpeed(t *testing.T) {
	p := benchtest.WriteFile(t, t.TempDir(), "s.json", benchtest.Scenario)
	stdout, stderr, err := runWith(t, benchtest.Sim, Config{CCs: []string{"owd"}}, p)
	require.NoError(t, err)
	require.Empty(t, stderr) // no progress bar unless asked for
	require.Contains(t, stdout, "dumbbell-test  owd  bulk")
	require.Contains(t, stdout, "simulated 20 s in ")
	require.Contains(t, stdout, "× real time)")
}

// With a plot directory: every figure of the scenario and the sweep's,
// each named on stderr; the runs are traced, the sweep's are not.
func TestPlotsAndSweep(t *testing.T) {
	dir := t.TempDir()
	p := benchtest.WriteFile(t, dir, "s.json", benchtest.Scenario)
	plotDir := filepath.Join(dir, "plots")
	var traced []bool
	fake := func(s *scenario.Scenario, o sim.Options) (*report.Run, error) {
		traced = append(traced, o.Trace)
		return benchtest.Sim(s, o)
	}
	_, stderr, err := runWith(t, fake, Config{CCs: []string{"owd", "cubic"}, PlotDir: plotDir, ACPSweep: true}, p)
	require.NoError(t, err)
	for _, kind := range []string{"throughput", "owd", "cwnd", "age", "cdf", "summary", "sweep"} {
		path := filepath.Join(plotDir, "dumbbell-test-"+kind+".png")
		require.Contains(t, stderr, "freshbench sim: wrote "+path+"\n")
		benchtest.RequirePNG(t, path)
	}
	require.Equal(t, []bool{true, true}, traced[:2], "the controllers' runs")
	require.Greater(t, len(traced), 2+sweep.Coarse)
	for _, tr := range traced[2:] {
		require.False(t, tr, "sweep runs are not traced")
	}
}

// The sweep runs on the configuration's seeds, or the scenario's own.
func TestSweepSeeds(t *testing.T) {
	s := benchtest.LoadScenario(t)
	sum, runs, err := New("sim", Config{Seeds: []int64{3, 4}}, benchtest.Sim, &bytes.Buffer{}, &bytes.Buffer{}).Sweep(s)
	require.NoError(t, err)
	require.Equal(t, []int64{3, 4}, sum.Seeds)
	require.Equal(t, "acp", runs[0].CC)
	require.Equal(t, int64(4), runs[2].Seed)
	sum, _, err = New("sim", Config{}, benchtest.Sim, &bytes.Buffer{}, &bytes.Buffer{}).Sweep(s)
	require.NoError(t, err)
	require.Equal(t, []int64{7}, sum.Seeds)

	s.Duration = scenario.Duration(-1)
	_, _, err = New("sim", Config{}, benchtest.Sim, &bytes.Buffer{}, &bytes.Buffer{}).Sweep(s)
	require.ErrorContains(t, err, "freshbench sim: --acp-sweep dumbbell-test, acp: ")
}

// TestSeedsPaired runs the real simulator over two seeds: every
// controller gets the same two seeds, the JSON carries every run with its
// seed, and the summary replaces the per-run table unless Verbose.
func TestSeedsPaired(t *testing.T) {
	dir := t.TempDir()
	s := benchtest.LoadScenario(t)
	s.Duration = scenario.Duration(12 * time.Second)
	jsonPath := filepath.Join(dir, "out.json")
	ccs := []string{"owd", "cubic", "reno"}
	var out bytes.Buffer
	require.NoError(t, New("sim", Config{CCs: ccs, Seeds: []int64{3, 8}, JSON: jsonPath}, sim.Run, &out, &bytes.Buffer{}).Run([]*scenario.Scenario{s}))
	stdout := out.String()

	b, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	runs := readRuns(t, jsonPath)
	require.Len(t, runs, 2*len(ccs))
	var got []string
	for _, r := range runs {
		got = append(got, r.CC+"/"+string(rune('0'+r.Seed)))
	}
	require.Equal(t, []string{"owd/3", "owd/8", "cubic/3", "cubic/8", "reno/3", "reno/8"}, got)
	require.NotEqual(t, runs[0].Flows[0].Bytes, runs[1].Flows[0].Bytes, "the seed reaches the simulator")

	require.NotContains(t, stdout, "FLOW", "no per-run table without Verbose")
	require.Contains(t, stdout, "SHARE min–max")
	for _, cc := range ccs {
		require.Regexp(t, `dumbbell-test\s+`+cc+`\s+2\s+`, stdout)
	}

	// The same seeds give the same runs: the file is the same bytes.
	out.Reset()
	require.NoError(t, New("sim", Config{CCs: ccs, Seeds: []int64{3, 8}, Verbose: true, JSON: jsonPath + "2"}, sim.Run, &out, &bytes.Buffer{}).Run([]*scenario.Scenario{s}))
	b2, err := os.ReadFile(jsonPath + "2")
	require.NoError(t, err)
	require.Equal(t, b, b2)
	require.Contains(t, out.String(), "FLOW", "Verbose adds the per-run table")
	require.Contains(t, out.String(), "SHARE min–max")
}

// Runs repeats each controller's run with the file's seed.
func TestRepeatedRuns(t *testing.T) {
	p := benchtest.WriteFile(t, t.TempDir(), "s.json", benchtest.Scenario)
	cfg := Config{CCs: []string{"owd", "cubic"}, Runs: 3}
	require.True(t, cfg.Multi())
	stdout, _, err := runWith(t, benchtest.Sim, cfg, p)
	require.NoError(t, err)
	require.Regexp(t, `dumbbell-test\s+owd\s+3\s+`, stdout)
	require.False(t, (&Config{Runs: 1}).Multi(), "one run: the per-run table")
}

// The options reach the emulator as the runner sets them.
func TestEmu(t *testing.T) {
	var got []emudriver.Options
	emu := func(_ context.Context, s *scenario.Scenario, o emudriver.Options) (*report.Run, error) {
		got = append(got, o)
		return benchtest.Sim(s, sim.Options{CC: o.CC})
	}
	progress := func(time.Duration, time.Duration) {}
	_, err := Emu(context.Background(), emu, true)(benchtest.LoadScenario(t), sim.Options{CC: "reno", Trace: true, SampleInterval: time.Second, Progress: progress})
	require.NoError(t, err)
	o := got[0]
	require.Equal(t, "reno", o.CC)
	require.True(t, o.Trace)
	require.Equal(t, time.Second, o.SampleInterval)
	require.NotNil(t, o.Progress)
	require.True(t, o.TUN)
}
