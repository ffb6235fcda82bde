package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/bench/sim"
)

func TestParseSimArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want simConfig
	}{
		{"files only", []string{"a.json", "b.json"}, simConfig{Scenarios: []string{"a.json", "b.json"}}},
		{"all flags", []string{"--cc", "owd,cubic, reno", "--seed", "42", "--duration=30s", "--json", "out.json",
			"--plot", "plots", "--acp-sweep", "--sweep-json", "sweep.json", "a.json"},
			simConfig{CCs: []string{"owd", "cubic", "reno"}, Seed: 42, SeedSet: true, Duration: 30 * time.Second,
				JSON: "out.json", PlotDir: "plots", ACPSweep: true, SweepJSON: "sweep.json", Scenarios: []string{"a.json"}}},
		{"flags after files", []string{"a.json", "-cc", "htcp", "b.json", "--seed", "0"},
			simConfig{CCs: []string{"htcp"}, SeedSet: true, Scenarios: []string{"a.json", "b.json"}}},
		{"double dash", []string{"--json", "-", "--", "--weird.json"},
			simConfig{JSON: "-", Scenarios: []string{"--weird.json"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseSimArgs(tc.args)
			require.NoError(t, err)
			require.Equal(t, tc.want, *got)
		})
	}
}

func TestParseSimArgsErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in the message
	}{
		{[]string{}, "no scenario file given"},
		{[]string{"--cc", "owd,nope", "a.json"}, `unknown controller "nope"`},
		{[]string{"--cc", "owd,,cubic", "a.json"}, "empty controller name"},
		{[]string{"--cc", "", "a.json"}, "empty controller name"},
		{[]string{"--cc", "owd,owd", "a.json"}, `"owd" given twice`},
		{[]string{"--duration", "0s", "a.json"}, "--duration must be positive"},
		{[]string{"--duration", "-5s", "a.json"}, "--duration must be positive"},
		{[]string{"--duration", "fast", "a.json"}, "-duration"},
		{[]string{"--seed", "x", "a.json"}, "-seed"},
		{[]string{"--sweep-json", "s.json", "a.json"}, "--sweep-json needs --acp-sweep"},
		{[]string{"--acp-sweep", "--json", "-", "--sweep-json", "-", "a.json"}, "cannot both be -"},
		{[]string{"a.json", "--frob"}, "-frob"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := parseSimArgs(tc.args)
			require.Error(t, err)
			require.Equal(t, exitUsage, exitCode(err))
			require.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := parseSimArgs([]string{"a.json", "-h"})
	require.ErrorIs(t, err, flag.ErrHelp)
}

// TestUsageNamesEveryFlag keeps simUsage in step with the flag set.
func TestUsageNamesEveryFlag(t *testing.T) {
	for _, name := range []string{"cc", "seed", "duration", "json", "plot", "acp-sweep", "sweep-json"} {
		require.Contains(t, simUsage, "--"+name+" ")
		_, err := parseSimArgs([]string{"--" + name + "=1", "a.json"})
		if err != nil {
			require.NotContains(t, err.Error(), "not defined", name)
		}
	}
}

func TestLoadScenariosOverrides(t *testing.T) {
	dir := t.TempDir()
	p := writeScenario(t, dir, "s.json", testScenario)
	scs, err := loadScenarios(&simConfig{Scenarios: []string{p}, Seed: 99, SeedSet: true, Duration: 15 * time.Second})
	require.NoError(t, err)
	require.Len(t, scs, 1)
	require.Equal(t, int64(99), scs[0].Seed)
	require.Equal(t, 15*time.Second, scs[0].Duration.D())

	// The change at 10s and a flow start at 2s do not fit in 1s.
	_, err = loadScenarios(&simConfig{Scenarios: []string{p}, Duration: time.Second})
	require.Equal(t, exitUsage, exitCode(err))
	require.Contains(t, err.Error(), p)
	require.Contains(t, err.Error(), "--duration")

	bad := writeScenario(t, dir, "bad.json", `{"name": "x", "duration": "1s", "typo": 1}`)
	_, err = loadScenarios(&simConfig{Scenarios: []string{p, bad}})
	require.Equal(t, exitUsage, exitCode(err))
	require.Contains(t, err.Error(), bad)
}

// runFake runs "freshbench sim args" with the fake simulator.
func runFake(t *testing.T, run simFunc, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cfg, err := parseSimArgs(args)
	require.NoError(t, err)
	scs, err := loadScenarios(cfg)
	require.NoError(t, err)
	var out, errOut bytes.Buffer
	err = newSimCommand(cfg, run, &out, &errOut).run(scs)
	return out.String(), errOut.String(), err
}

func TestSimOrderAndLabels(t *testing.T) {
	dir := t.TempDir()
	a := writeScenario(t, dir, "a.json", testScenario)
	b := writeScenario(t, dir, "b.json", strings.Replace(testScenario, "dumbbell-test", "second", 1))
	jsonPath := filepath.Join(dir, "out.json")

	_, _, err := runFake(t, fakeSim, "--cc", "owd,reno", "--json", jsonPath, a, b)
	require.NoError(t, err)
	var runs []report.Run
	b1, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b1, &runs))
	var got []string
	for _, r := range runs {
		got = append(got, r.Scenario+"/"+r.CC+"/"+r.Flows[0].CC+"/"+r.Flows[1].CC)
	}
	// The pinned competitor keeps reno.
	require.Equal(t, []string{"dumbbell-test/owd/owd/reno", "dumbbell-test/reno/reno/reno",
		"second/owd/owd/reno", "second/reno/reno/reno"}, got)

	// Without --cc: the file's controllers, labelled by the first bulk flow.
	_, _, err = runFake(t, fakeSim, "--json", jsonPath, a)
	require.NoError(t, err)
	b1, err = os.ReadFile(jsonPath)
	require.NoError(t, err)
	runs = nil
	require.NoError(t, json.Unmarshal(b1, &runs))
	require.Len(t, runs, 1)
	require.Equal(t, "cubic", runs[0].CC)

	noBulk := loadTestScenario(t)
	noBulk.Flows = noBulk.Flows[2:]
	require.Equal(t, "-", defaultLabel(noBulk))
	noBulk.Flows = append(noBulk.Flows, scenario.Flow{Kind: scenario.KindIperf3, CC: "bbr"})
	require.Equal(t, "kernel-bbr", defaultLabel(noBulk), "emu --tun: the kernel's controller")
}

// TestJSONStable: the same inputs give a byte-identical file, "-" writes
// the same bytes to stdout and moves the tables to stderr.
func TestJSONStable(t *testing.T) {
	dir := t.TempDir()
	p := writeScenario(t, dir, "s.json", testScenario)
	var files [][]byte
	for i := range 2 {
		out := filepath.Join(dir, "run"+string(rune('0'+i))+".json")
		_, _, err := runFake(t, fakeSim, "--cc", "owd,cubic", "--acp-sweep", "--json", out, p)
		require.NoError(t, err)
		b, err := os.ReadFile(out)
		require.NoError(t, err)
		files = append(files, b)
	}
	require.Equal(t, files[0], files[1])
	require.True(t, bytes.HasSuffix(files[0], []byte("}\n]\n")))
	require.NotContains(t, string(files[0]), "WallS")

	stdout, stderr, err := runFake(t, fakeSim, "--cc", "owd,cubic", "--acp-sweep", "--json", "-", p)
	require.NoError(t, err)
	require.Equal(t, string(files[0]), stdout)
	require.Contains(t, stderr, "SCENARIO")

	// marshalStable sorts map keys.
	r1 := &report.Run{Flows: []report.Flow{{SignalShare: map[string]float64{"z": 1, "a": 2, "m": 3}}}}
	b, err := marshalStable([]*report.Run{r1})
	require.NoError(t, err)
	require.Less(t, strings.Index(string(b), `"a"`), strings.Index(string(b), `"z"`))
}

func TestSimFailures(t *testing.T) {
	p := writeScenario(t, t.TempDir(), "s.json", testScenario)
	_, _, err := runFake(t, func(*scenario.Scenario, sim.Options) (*report.Run, error) {
		return nil, errors.New("boom")
	}, p)
	require.Equal(t, exitFailure, exitCode(err))
	require.Contains(t, err.Error(), "dumbbell-test, cc cubic: boom")

	_, _, err = runFake(t, func(*scenario.Scenario, sim.Options) (*report.Run, error) {
		panic("not implemented yet")
	}, p)
	require.Equal(t, exitFailure, exitCode(err))
	require.Contains(t, err.Error(), "simulator panicked: not implemented yet")
}

func TestSimTableAndSpeed(t *testing.T) {
	p := writeScenario(t, t.TempDir(), "s.json", testScenario)
	stdout, stderr, err := runFake(t, fakeSim, "--cc", "owd", p)
	require.NoError(t, err)
	require.Empty(t, stderr) // not a terminal: no progress bar
	require.Contains(t, stdout, "dumbbell-test  owd  bulk")
	require.Contains(t, stdout, "simulated 20 s in ")
	require.Contains(t, stdout, "× real time)")
}
