package main

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/internal/benchtest"
	"github.com/fresh-udp/fresh/bench/runner"
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
			simConfig{Config: runner.Config{CCs: []string{"owd", "cubic", "reno"}, JSON: "out.json", PlotDir: "plots", ACPSweep: true, SweepJSON: "sweep.json"},
				Seed: 42, SeedSet: true, Duration: 30 * time.Second, Scenarios: []string{"a.json"}}},
		{"flags after files", []string{"a.json", "-cc", "htcp", "b.json", "--seed", "0"},
			simConfig{Config: runner.Config{CCs: []string{"htcp"}}, SeedSet: true, Scenarios: []string{"a.json", "b.json"}}},
		{"double dash", []string{"--json", "-", "--", "--weird.json"},
			simConfig{Config: runner.Config{JSON: "-"}, Scenarios: []string{"--weird.json"}}},
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
	p := benchtest.WriteFile(t, dir, "s.json", benchtest.Scenario)
	scs, err := loadScenarios("sim", &simConfig{Scenarios: []string{p}, Seed: 99, SeedSet: true, Duration: 15 * time.Second})
	require.NoError(t, err)
	require.Len(t, scs, 1)
	require.Equal(t, int64(99), scs[0].Seed)
	require.Equal(t, 15*time.Second, scs[0].Duration.D())

	// The change at 10s and a flow start at 2s do not fit in 1s.
	_, err = loadScenarios("sim", &simConfig{Scenarios: []string{p}, Duration: time.Second})
	require.Equal(t, exitUsage, exitCode(err))
	require.Contains(t, err.Error(), p)
	require.Contains(t, err.Error(), "--duration")

	bad := benchtest.WriteFile(t, dir, "bad.json", `{"name": "x", "duration": "1s", "typo": 1}`)
	_, err = loadScenarios("sim", &simConfig{Scenarios: []string{p, bad}})
	require.Equal(t, exitUsage, exitCode(err))
	require.Contains(t, err.Error(), bad)
}

func TestParseSeedsFlags(t *testing.T) {
	cfg, err := parseSimArgs([]string{"a.json", "--seeds", "1-3", "-v", "--cc", "owd,cubic"})
	require.NoError(t, err)
	require.Equal(t, simConfig{Config: runner.Config{CCs: []string{"owd", "cubic"}, Seeds: []int64{1, 2, 3}, Verbose: true}, Scenarios: []string{"a.json"}}, *cfg)
	require.True(t, cfg.Multi())

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
	require.True(t, cfg.Multi())
	cfg, err = parseRunArgs("emu", []string{"--tun", "--runs", "1", "a.json"})
	require.NoError(t, err)
	require.False(t, cfg.Multi(), "one run: the per-run table as before")

	for _, name := range []string{"seeds", "verbose"} {
		require.Contains(t, simUsage, "--"+name+" ")
		require.Contains(t, emuUsage, "--"+name+" ")
	}
	require.Contains(t, emuUsage, "--runs ")
}

// A bad --seeds list is a usage error naming the flag and the list.
func TestParseSeeds(t *testing.T) {
	got, err := parseSeeds("freshbench sim", "1,3,7-9")
	require.NoError(t, err)
	require.Equal(t, []int64{1, 3, 7, 8, 9}, got)
	_, err = parseSeeds("freshbench sim", "5-3")
	require.Equal(t, exitUsage, exitCode(err))
	require.EqualError(t, err, `freshbench sim: --seeds "5-3": range "5-3" runs backwards`)
}
