package cellular

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/internal/benchtest"
	"github.com/fresh-udp/fresh/bench/internal/usage"
	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/bench/sim"
)

var committed = filepath.Join("..", "scenarios")

// The summary over the committed trace scenarios, with the fake
// simulator: a figure per trace, a table per trace with a row per queue
// and controller, the worst seed named, every run kept in order.
func TestSummary(t *testing.T) {
	var log bytes.Buffer
	res, err := Run(Config{Dir: committed, Seeds: []int64{1, 2, 3}, CCs: []string{"owd", "cubic"}, Sim: benchtest.Sim, Log: &log})
	require.NoError(t, err)
	require.Len(t, res.groups, 8, "four traces, both directions")
	for _, g := range res.groups {
		require.Equal(t, "fifo", g.scenarios[0].queue, "drop-tail first")
		require.Equal(t, "codel", g.scenarios[1].queue)
	}
	require.Contains(t, log.String(), "freshbench traces: trace-tmobile-lte-short-up-fifo: 6 runs in ")

	out := t.TempDir()
	wrote, err := res.WriteFigures(out)
	require.NoError(t, err)
	require.Len(t, wrote, 8)
	for _, trace := range []string{"att-lte-driving-2016", "tmobile-lte-short", "tmobile-umts-driving", "verizon-evdo-driving"} {
		for _, dir := range []string{"up", "down"} {
			benchtest.RequirePNG(t, filepath.Join(out, "traces-"+trace+"-"+dir+".png"))
		}
	}

	var b strings.Builder
	res.WriteMarkdown(&b, "##", func(file string) string { return "results/" + file })
	md := b.String()
	require.Contains(t, md, "## Cellular traces")
	require.Contains(t, md, "### TMobile-LTE-short.up (ACKs: TMobile-LTE-short.down)")
	require.Contains(t, md, "![TMobile-LTE-short.up: throughput against p95 one-way delay](results/traces-tmobile-lte-short-up.png)")
	require.Contains(t, md, "`go run ./bench/cmd/freshbench traces --seeds 1-3 --cc owd,cubic`")
	require.Contains(t, md, "Every controller runs the same 3 seeds")
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

	runs := res.Runs()
	require.Len(t, runs, 16*2*3)
	require.Equal(t, "owd", runs[0].CC)
	require.Equal(t, int64(1), runs[0].Seed)
	require.Equal(t, int64(3), runs[2].Seed)
	require.Equal(t, "cubic", runs[3].CC)
}

// What is not a cellular-trace scenario is a usage error naming the file.
func TestLoadErrors(t *testing.T) {
	_, err := Run(Config{Dir: t.TempDir(), Sim: benchtest.Sim})
	require.True(t, usage.Is(err))
	require.ErrorContains(t, err, "no trace-*.json in ")

	dir := t.TempDir()
	benchtest.WriteFile(t, dir, "trace-fixed.json", benchtest.Scenario)
	_, err = Run(Config{Dir: dir, Sim: benchtest.Sim})
	require.True(t, usage.Is(err))
	require.ErrorContains(t, err, "trace-fixed.json: the forward path is not a trace")

	trace, err := filepath.Abs(filepath.Join("..", "traces", "TMobile-LTE-short.up"))
	require.NoError(t, err)
	dir = t.TempDir()
	benchtest.WriteFile(t, dir, "trace-x.json", `{"name": "x", "duration": "10s",
	  "forward": {"trace": "`+trace+`"}, "reverse": {"rate": "1Mbps"},
	  "flows": [{"name": "bulk", "kind": "bulk", "start": "5s"}]}`)
	_, err = Run(Config{Dir: dir, Duration: 2 * time.Second, Sim: benchtest.Sim})
	require.True(t, usage.Is(err))
	require.ErrorContains(t, err, "trace-x.json with --duration 2s: ")
}

// A failed run names the scenario, the controller and the seed.
func TestRunError(t *testing.T) {
	_, err := Run(Config{Dir: committed, Seeds: []int64{4}, CCs: []string{"owd"},
		Sim: func(*scenario.Scenario, sim.Options) (*report.Run, error) { return nil, errors.New("boom") }})
	require.EqualError(t, err, "trace-att-lte-driving-2016-down-fifo under owd, seed 4: boom")
	require.False(t, usage.Is(err))
}

// The real simulator: one trace scenario (its trace given by absolute
// path, the file outside the repository), 2 s, two seeds.
func TestRunSim(t *testing.T) {
	dir := t.TempDir()
	trace, err := filepath.Abs(filepath.Join("..", "traces", "TMobile-LTE-short.up"))
	require.NoError(t, err)
	pair := strings.TrimSuffix(trace, ".up") + ".down"
	benchtest.WriteFile(t, dir, "trace-x-fifo.json", `{"name": "trace-x-fifo", "duration": "60s", "mss": 1400,
	  "forward": {"trace": "`+trace+`", "trace_start": "random", "delay": "20ms", "queue": {"limit": 200}},
	  "reverse": {"trace": "`+pair+`", "trace_start": "random", "delay": "20ms", "queue": {"limit": 200}},
	  "flows": [{"name": "bulk", "kind": "bulk"}]}`)
	res, err := Run(Config{Dir: dir, Seeds: []int64{1, 2}, CCs: []string{"owd", "cubic"}, Duration: 2 * time.Second, Sim: sim.Run})
	require.NoError(t, err)
	var b strings.Builder
	res.WriteMarkdown(&b, "##", func(f string) string { return f })
	require.Contains(t, b.String(), "### TMobile-LTE-short.up (ACKs: TMobile-LTE-short.down)")
	require.Contains(t, b.String(), "| fifo | cubic | ")
	for _, r := range res.Runs() {
		require.Equal(t, 2.0, r.DurationS)
		require.Positive(t, r.Flows[0].Bytes, "%s seed %d", r.CC, r.Seed)
	}
	_, err = res.WriteFigures(dir)
	require.NoError(t, err)
	benchtest.RequirePNG(t, filepath.Join(dir, "traces-tmobile-lte-short-up.png"))
}

func TestMedian(t *testing.T) {
	require.True(t, math.IsNaN(median(nil)))
	require.Equal(t, 2.0, median([]float64{3, 1, 2}))
	require.Equal(t, 2.5, median([]float64{4, 1, 3, 2}))
}

func TestWorst(t *testing.T) {
	c := &cell{Seeds: []int64{1, 2, 3}}
	v, seed := c.worst([]float64{5, 3, 9}, true)
	require.Equal(t, 3.0, v)
	require.Equal(t, int64(2), seed)
	v, seed = c.worst([]float64{5, 3, 9}, false)
	require.Equal(t, 9.0, v)
	require.Equal(t, int64(3), seed)
	v, seed = (&cell{}).worst(nil, true)
	require.Zero(t, v)
	require.Zero(t, seed)
}

// Write puts the figures, the Markdown (linking them relative to it) and
// the JSON where it is told, or the Markdown on stdout.
func TestWrite(t *testing.T) {
	res, err := Run(Config{Dir: committed, Seeds: []int64{1}, CCs: []string{"owd"}, Sim: benchtest.Sim})
	require.NoError(t, err)
	dir := t.TempDir()
	figs, md, js := filepath.Join(dir, "figs"), filepath.Join(dir, "md", "traces.md"), filepath.Join(dir, "runs.json")
	require.NoError(t, os.Mkdir(filepath.Dir(md), 0o755))
	var stdout bytes.Buffer
	wrote, err := res.Write(figs, md, js, &stdout)
	require.NoError(t, err)
	require.Len(t, wrote, 8+2)
	require.Equal(t, []string{md, js}, wrote[8:])
	require.Empty(t, stdout.String())
	b, err := os.ReadFile(md)
	require.NoError(t, err)
	require.Contains(t, string(b), "](../figs/traces-tmobile-lte-short-up.png)")
	b, err = os.ReadFile(js)
	require.NoError(t, err)
	var runs []report.Run
	require.NoError(t, json.Unmarshal(b, &runs))
	require.Len(t, runs, 16)

	wrote, err = res.Write(figs, "-", "", &stdout)
	require.NoError(t, err)
	require.Len(t, wrote, 8, "the figures only")
	require.Contains(t, stdout.String(), "]("+figs+"/traces-tmobile-lte-short-up.png)")
}
