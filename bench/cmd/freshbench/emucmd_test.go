package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/emudriver"
	"github.com/fresh-udp/fresh/bench/internal/benchtest"
	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/runner"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/bench/sim"
	"github.com/fresh-udp/fresh/internal/realtime"
)

// fakeEmu stands in for emudriver.Run: the fake simulator's result,
// relabelled as the emulator's, and it records what it was given.
func fakeEmu(got *[]emudriver.Options) runner.EmuFunc {
	return func(_ context.Context, s *scenario.Scenario, o emudriver.Options) (*report.Run, error) {
		*got = append(*got, o)
		r, err := benchtest.Sim(s, sim.Options{CC: o.CC, Trace: o.Trace})
		if err == nil {
			r.Driver = "emu"
			r.WallS = r.DurationS + 0.3
		}
		return r, err
	}
}

// emuWith runs "freshbench emu args" with emu instead of the emulator, as
// main runs it, and returns the exit code.
func emuWith(args []string, stdout, stderr *bytes.Buffer, emu runner.EmuFunc) int {
	return commands["emu"].finish("emu", runEmu(context.Background(), args, stdout, stderr, emu), stdout, stderr)
}

// TestEmuCommandWithFake: the emu command drives the shared table, JSON
// and plot code with the emulator's options, and labels the speed as
// real time.
func TestEmuCommandWithFake(t *testing.T) {
	dir := t.TempDir()
	scen := benchtest.WriteFile(t, dir, "s.json", benchtest.Scenario)
	var opts []emudriver.Options
	var stdout, stderr bytes.Buffer
	code := emuWith([]string{"--relay", "--cc", "owd,cubic", "--duration", "12s", "--json", "-", scen},
		&stdout, &stderr, fakeEmu(&opts))
	require.Equal(t, exitOK, code, stderr.String())
	require.Len(t, opts, 2)
	require.Equal(t, "owd", opts[0].CC)
	require.Equal(t, "cubic", opts[1].CC)
	require.False(t, opts[0].Trace, "traced only with --plot")
	require.Contains(t, stderr.String(), "emulated 12 s in 12.30 s (real time)", "the table goes to stderr with --json -")
	var runs []map[string]any
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &runs))
	require.Len(t, runs, 2)
	require.Equal(t, "emu", runs[0]["driver"])

}

func TestEmuCommandUsage(t *testing.T) {
	dir := t.TempDir()
	scen := benchtest.WriteFile(t, dir, "s.json", benchtest.Scenario)
	// The server side has one update policy: reverse flows must share it.
	mixed := benchtest.WriteFile(t, dir, "mixed.json", `{"name": "f", "duration": "5s",
	  "forward": {"rate": "1Mbps"}, "reverse": {"rate": "1Mbps"},
	  "flows": [{"kind": "bulk"}, {"name": "a", "kind": "fixed", "update_rate": 10, "reverse": true},
	            {"name": "b", "kind": "lazy", "reverse": true}]}`)
	iperf := benchtest.WriteFile(t, dir, "iperf.json", `{"name": "i", "duration": "5s",
	  "forward": {"rate": "1Mbps"}, "reverse": {"rate": "1Mbps"}, "flows": [{"kind": "iperf3"}]}`)
	badCC := benchtest.WriteFile(t, dir, "vegas.json", `{"name": "v", "duration": "5s",
	  "forward": {"rate": "1Mbps"}, "reverse": {"rate": "1Mbps"}, "flows": [{"kind": "iperf3", "cc": "vegas"}]}`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{scen}, "give one of --relay"},
		{[]string{"--relay", "--tun", scen}, "give one of --relay"},
		{[]string{"--relay", iperf, scen}, "run them through the TUN router (freshbench emu --tun"},
		{[]string{"--tun", badCC}, `iperf3 cc "vegas"`},
		{[]string{"--relay", "--acp-sweep", scen}, "sim-only"},
		{[]string{"--relay", "--cc", "nope", scen}, `freshbench emu: --cc: unknown controller "nope"`},
		{[]string{"--relay"}, "freshbench emu: no scenario file given"},
		{[]string{"--relay", scen, mixed}, "reverse update flows with different policies"},
	} {
		var opts []emudriver.Options
		var stdout, stderr bytes.Buffer
		code := emuWith(tc.args, &stdout, &stderr, fakeEmu(&opts))
		require.Equal(t, exitUsage, code, tc.args)
		require.Contains(t, stderr.String(), tc.want)
		require.Empty(t, opts, "nothing ran: %v", tc.args)
	}
	var stdout, stderr bytes.Buffer
	require.Equal(t, exitOK, run([]string{"emu", "-h"}, &stdout, &stderr))
	require.Contains(t, stdout.String(), "freshbench emu --relay|--tun")
}

// TestEmuEndToEnd runs the real emulator through the command line: a 2 s
// scenario with a bulk flow and a reverse cbr flow.
func TestEmuEndToEnd(t *testing.T) {
	dir := t.TempDir()
	scen := benchtest.WriteFile(t, dir, "s.json", `{"name": "emu-e2e", "duration": "2s", "seed": 1,
	  "forward": {"rate": "5Mbps", "delay": "10ms", "queue": {"limit": 100}},
	  "reverse": {"rate": "5Mbps", "delay": "10ms", "queue": {"limit": 100}},
	  "flows": [{"name": "bulk", "kind": "bulk"}, {"name": "rev", "kind": "cbr", "rate": "500kbps", "reverse": true}]}`)
	out := filepath.Join(dir, "runs.json")
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := run([]string{"emu", "--relay", "--cc", "cubic", "--json", out, scen}, &stdout, &stderr)
	require.Equal(t, exitOK, code, stderr.String())
	require.Less(t, time.Since(start), 30*time.Second, "no hang")
	require.Contains(t, stdout.String(), "emulated 2 s in")
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	var runs []report.Run
	require.NoError(t, json.Unmarshal(b, &runs))
	require.Len(t, runs, 1)
	r := runs[0]
	require.Equal(t, "emu", r.Driver)
	require.Equal(t, "cubic", r.CC)
	require.Len(t, r.Flows, 2)
	require.Greater(t, r.Flows[0].GoodputBps, 0.0)
	// The cbr sender runs on real timers: a busy host makes it late, never
	// early, so only the upper bound holds on every machine; half its rate
	// is the long real-time suite's floor.
	require.Positive(t, r.Flows[1].GoodputBps, "the reverse cbr flow crosses the reverse link")
	realtime.Check(t, r.Flows[1].GoodputBps > 250e3, "reverse cbr goodput %.0f bit/s > half its 500 kbit/s", r.Flows[1].GoodputBps)
	require.Less(t, r.Flows[1].GoodputBps, 1.1*500e3)
	require.Greater(t, r.Flows[1].OWDms.P50, 10.0)
}

// TestEmuRuns: --runs repeats each controller's run with the file's seed,
// and the summary's share is fresh's beside kernel TCP when every bulk flow
// is pinned.
func TestEmuRuns(t *testing.T) {
	dir := t.TempDir()
	scen := benchtest.WriteFile(t, dir, "s.json", benchtest.Scenario)
	var opts []emudriver.Options
	var stdout, stderr bytes.Buffer
	code := emuWith([]string{"--relay", "--runs", "3", "--cc", "owd,cubic", "--duration", "12s", "--json", "-", scen},
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
