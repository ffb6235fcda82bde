package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/bench/sim"
	"github.com/fresh-udp/fresh/cc"

	// Controllers registered outside cc, so --cc can be checked by name.
	_ "github.com/fresh-udp/fresh/acp"
	_ "github.com/fresh-udp/fresh/owd"
)

const simUsage = `usage: freshbench sim [flags] SCENARIO.json...

Runs each scenario in the virtual-time simulator, once per controller of --cc
(scenarios in argument order, then controllers in --cc order), and prints a
summary table per scenario. Flags may come before or after the files.

Flags:
  --cc LIST          comma-separated controllers for every unpinned bulk flow,
                     e.g. owd,cubic,reno,htcp,rttdelay; one run per name.
                     Default: one run with the controllers the file names
                     (labelled with the first bulk flow's cc, or "-").
  --seed N           random seed for every run (default: the file's "seed")
  --seeds LIST       paired runs: every scenario under every controller with
                     each seed of LIST ("1-20", "1,3,7-9"; the same seeds for
                     every controller), and per scenario a summary table of
                     mean ± SD over the seeds instead of the per-run tables;
                     with --acp-sweep, the sweep runs every seed too (paired
                     oracles); not with --seed or --plot
  -v, --verbose      with --seeds, also print the per-run tables
  --duration D       simulated duration, a Go duration such as 30s or 2m
                     (default: the file's "duration"); must be positive
  --json FILE        write all runs as one indented JSON array ("-": stdout,
                     and the tables go to stderr)
  --plot DIR         write PNG plots into DIR (created if missing)
  --acp-sweep        for scenarios with update flows (acp, lazy, fixed), also
                     sweep fixed update rates on every seed to find the
                     oracles (the best fixed rate, and the best that costs
                     the bulk flows at most 10 % of their goodput beside
                     lazy) and compare acp and lazy with them; the sweep's
                     runs are added to --json
  --sweep-json FILE  write the sweep summaries as a JSON array ("-": stdout);
                     needs --acp-sweep
  -h, --help         print this help

Exit status: 0 ok, 2 usage error (bad flag or scenario file), 1 run failure.
`

// simConfig is the parsed command line of "freshbench sim".
type simConfig struct {
	CCs       []string      // nil: each scenario's own controllers
	Seed      int64         // used if SeedSet
	SeedSet   bool          // --seed was given
	Seeds     []int64       // --seeds: paired runs, one per seed; nil if not given
	Runs      int           // emu --runs: repeats of every run (0: once)
	Verbose   bool          // -v: per-run tables beside the summary
	Duration  time.Duration // 0: each scenario's own
	JSON      string        // --json file, "-" for stdout, "" for none
	SweepJSON string        // --sweep-json file
	PlotDir   string        // --plot directory, "" for none
	ACPSweep  bool
	Relay     bool     // emu: --relay (the userspace relay emulator)
	TUN       bool     // emu: --tun (the TUN router between two namespaces)
	Scenarios []string // scenario files, in argument order
}

// parseSimArgs parses the flags and scenario files of "freshbench sim".
// Flags and files may be interleaved; "--" ends the flags. It returns
// flag.ErrHelp for -h and a *usageError for anything wrong.
func parseSimArgs(args []string) (*simConfig, error) { return parseRunArgs("sim", args) }

// parseRunArgs parses the command line of "freshbench sim" or "freshbench
// emu" (cmd): the same flags, but --relay only in emu and --acp-sweep,
// --sweep-json only in sim.
func parseRunArgs(cmd string, args []string) (*simConfig, error) {
	cfg := &simConfig{}
	var ccList, seedList string
	prefix := "freshbench " + cmd
	fs := flag.NewFlagSet(prefix, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by the caller, usage by simUsage
	fs.StringVar(&ccList, "cc", "", "")
	fs.Int64Var(&cfg.Seed, "seed", 0, "")
	fs.StringVar(&seedList, "seeds", "", "")
	fs.BoolVar(&cfg.Verbose, "verbose", false, "")
	fs.BoolVar(&cfg.Verbose, "v", false, "")
	fs.DurationVar(&cfg.Duration, "duration", 0, "")
	fs.StringVar(&cfg.JSON, "json", "", "")
	fs.StringVar(&cfg.SweepJSON, "sweep-json", "", "")
	fs.StringVar(&cfg.PlotDir, "plot", "", "")
	fs.BoolVar(&cfg.ACPSweep, "acp-sweep", false, "")
	if cmd == "emu" {
		fs.BoolVar(&cfg.Relay, "relay", false, "")
		fs.BoolVar(&cfg.TUN, "tun", false, "")
		fs.IntVar(&cfg.Runs, "runs", 0, "")
	}

	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usagef("%s: %v", prefix, err)
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			cfg.Scenarios = append(cfg.Scenarios, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		cfg.Scenarios = append(cfg.Scenarios, rest[0])
		args = rest[1:]
	}

	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "seed":
			cfg.SeedSet = true
		case "duration":
			if cfg.Duration <= 0 {
				cfg.Duration = -1 // checked below
			}
		}
	})
	if cfg.Duration < 0 {
		return nil, usagef("%s: --duration must be positive", prefix)
	}
	if ccList != "" || flagGiven(fs, "cc") {
		ccs, err := parseCCList(prefix, ccList)
		if err != nil {
			return nil, err
		}
		cfg.CCs = ccs
	}
	if flagGiven(fs, "seeds") {
		if cfg.SeedSet {
			return nil, usagef("%s: --seed and --seeds are mutually exclusive: --seed N for one seed, --seeds LIST for paired runs", prefix)
		}
		seeds, err := parseSeedList(prefix, seedList)
		if err != nil {
			return nil, err
		}
		cfg.Seeds = seeds
	}
	if flagGiven(fs, "runs") && cfg.Runs < 1 {
		return nil, usagef("%s: --runs must be at least 1", prefix)
	}
	if cfg.multi() && cfg.PlotDir != "" {
		return nil, usagef("%s: --plot draws one run: not with --seeds or --runs", prefix)
	}
	if cmd != "sim" && (cfg.ACPSweep || cfg.SweepJSON != "") {
		return nil, usagef("%s: --acp-sweep and --sweep-json are sim-only (a sweep is dozens of runs)", prefix)
	}
	if cfg.SweepJSON != "" && !cfg.ACPSweep {
		return nil, usagef("%s: --sweep-json needs --acp-sweep", prefix)
	}
	if cfg.JSON == "-" && cfg.SweepJSON == "-" {
		return nil, usagef("%s: --json and --sweep-json cannot both be - (stdout)", prefix)
	}
	if len(cfg.Scenarios) == 0 {
		return nil, usagef("%s: no scenario file given", prefix)
	}
	return cfg, nil
}

// multi reports whether every run is repeated (--seeds or --runs above
// 1), so the command prints mean ± SD instead of one table row per run.
func (cfg *simConfig) multi() bool { return cfg.Seeds != nil || cfg.Runs > 1 }

func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// parseCCList splits a --cc list and checks every name against the cc
// registry.
func parseCCList(prefix, list string) ([]string, error) {
	known := cc.Names()
	var out []string
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimSpace(name)
		switch {
		case name == "":
			return nil, usagef("%s: --cc %q: empty controller name", prefix, list)
		case !slices.Contains(known, name):
			return nil, usagef("%s: --cc: unknown controller %q (known: %s)", prefix, name, strings.Join(known, ","))
		case slices.Contains(out, name):
			return nil, usagef("%s: --cc: %q given twice", prefix, name)
		}
		out = append(out, name)
	}
	return out, nil
}

// loadScenarios reads every scenario file and applies --seed and
// --duration. Errors are usage errors naming the file.
func loadScenarios(cfg *simConfig) ([]*scenario.Scenario, error) { return loadScenariosFor("sim", cfg) }

// loadScenariosFor is loadScenarios for command cmd (in its messages).
func loadScenariosFor(cmd string, cfg *simConfig) ([]*scenario.Scenario, error) {
	prefix := "freshbench " + cmd
	var out []*scenario.Scenario
	for _, path := range cfg.Scenarios {
		s, err := scenario.Load(path)
		if err != nil {
			return nil, usagef("%s: %v", prefix, err)
		}
		if cfg.SeedSet {
			s.Seed = cfg.Seed
		}
		if cfg.Duration > 0 {
			s.Duration = scenario.Duration(cfg.Duration)
			if err := s.Validate(); err != nil {
				return nil, usagef("%s: %s with --duration %v: %v", prefix, path, cfg.Duration, err)
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// simFunc runs one simulation; sim.Run, or a fake in tests.
type simFunc func(*scenario.Scenario, sim.Options) (*report.Run, error)

// simCommand runs the scenarios of one "freshbench sim" invocation.
type simCommand struct {
	name     string // "sim" or "emu": the command, in messages
	cfg      *simConfig
	sim      simFunc
	table    io.Writer // the summary tables: stdout, or stderr if stdout carries JSON
	stdout   io.Writer
	stderr   io.Writer
	progress bool // show progress on stderr (see progressBar)
}

// runSimCommand is "freshbench sim": it returns the exit code.
func runSimCommand(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseSimArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, simUsage)
		return exitOK
	}
	if err == nil {
		var scs []*scenario.Scenario
		if scs, err = loadScenarios(cfg); err == nil {
			c := newSimCommand(cfg, sim.Run, stdout, stderr)
			c.progress = true // a bar on a terminal, a line every few seconds elsewhere
			err = c.run(scs)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		if exitCode(err) == exitUsage {
			fmt.Fprintln(stderr, `run "freshbench sim -h" for usage`)
		}
	}
	return exitCode(err)
}

func newSimCommand(cfg *simConfig, run simFunc, stdout, stderr io.Writer) *simCommand {
	c := &simCommand{name: "sim", cfg: cfg, sim: run, table: stdout, stdout: stdout, stderr: stderr}
	if cfg.JSON == "-" || cfg.SweepJSON == "-" {
		c.table = stderr
	}
	return c
}

// run runs every scenario under every controller, prints the tables, then
// writes the JSON files; plots are written per scenario as it finishes.
func (c *simCommand) run(scs []*scenario.Scenario) error {
	if c.cfg.PlotDir != "" {
		if err := os.MkdirAll(c.cfg.PlotDir, 0o755); err != nil {
			return fmt.Errorf("freshbench %s: --plot: %w", c.name, err)
		}
	}
	var all []*report.Run
	var sweeps []*sweepSummary
	for _, s := range scs {
		runs, err := c.runScenario(s)
		if err != nil {
			return err
		}
		if err := c.writeTables(s, runs); err != nil {
			return err
		}
		all = append(all, runs...)
		if c.cfg.PlotDir != "" {
			wrote, err := writePlots(c.cfg.PlotDir, s, runs)
			if err != nil {
				return fmt.Errorf("freshbench %s: plots of %s: %w", c.name, s.Name, err)
			}
			if len(wrote) == 0 {
				fmt.Fprintf(c.stderr, "freshbench %s: --plot: nothing to plot for %s\n", c.name, s.Name)
			}
			for _, w := range wrote {
				fmt.Fprintf(c.stderr, "freshbench %s: wrote %s\n", c.name, w)
			}
		}
		for _, r := range runs { // plotted: free the traces
			for i := range r.Flows {
				r.Flows[i].Series, r.Flows[i].OWDSamples = nil, nil
			}
			r.CapacityBps = nil
		}
		if c.cfg.ACPSweep && hasUpdates(s) {
			sum, sruns, err := c.runSweep(s)
			if err != nil {
				return err
			}
			if err := writeSweepTable(c.table, []*sweepSummary{sum}); err != nil {
				return err
			}
			if c.cfg.PlotDir != "" {
				if err := writeSweepPlot(c.cfg.PlotDir, sum); err != nil {
					return fmt.Errorf("freshbench %s: sweep plot of %s: %w", c.name, s.Name, err)
				}
				fmt.Fprintf(c.stderr, "freshbench %s: wrote %s\n", c.name, filepath.Join(c.cfg.PlotDir, fileName(sum.Scenario)+"-sweep.png"))
			}
			all = append(all, sruns...)
			sweeps = append(sweeps, sum)
		}
	}
	if c.cfg.JSON != "" {
		if err := c.writeJSON(c.cfg.JSON, all); err != nil {
			return err
		}
	}
	if c.cfg.SweepJSON != "" {
		if sweeps == nil {
			sweeps = []*sweepSummary{} // "[]", not "null"
		}
		if err := c.writeJSON(c.cfg.SweepJSON, sweeps); err != nil {
			return err
		}
	}
	return nil
}

// writeTables prints the runs of s: one table row per run, or with
// --seeds or --runs the summary per controller (and the per-run table
// only with --verbose).
func (c *simCommand) writeTables(s *scenario.Scenario, runs []*report.Run) error {
	if !c.cfg.multi() || c.cfg.Verbose {
		if err := writeRunTable(c.table, runs); err != nil {
			return err
		}
	}
	if !c.cfg.multi() {
		return nil
	}
	var sums []ccSummary
	for _, g := range groupByCC(runs) {
		sums = append(sums, summarizeRuns(s, g[0].CC, g))
	}
	return writeSummaryTable(c.table, sums)
}

// groupByCC splits runs by their cc label, in order of first appearance.
func groupByCC(runs []*report.Run) [][]*report.Run {
	var out [][]*report.Run
	at := map[string]int{}
	for _, r := range runs {
		i, ok := at[r.CC]
		if !ok {
			i = len(out)
			at[r.CC] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], r)
	}
	return out
}

// runScenario runs s once per --cc controller, or once as written; with
// --seeds once per controller and seed (controllers outer, so every
// controller gets the same seeds), and with --runs that many times each.
func (c *simCommand) runScenario(s *scenario.Scenario) ([]*report.Run, error) {
	type variant struct{ name, label string }
	variants := []variant{{"", defaultLabel(s)}}
	if c.cfg.CCs != nil {
		variants = variants[:0]
		for _, name := range c.cfg.CCs {
			variants = append(variants, variant{name, name})
		}
	}
	seeded := []*scenario.Scenario{s}
	if c.cfg.Seeds != nil {
		seeded = seeded[:0]
		for _, seed := range c.cfg.Seeds {
			v := *s // the runs share the flows slice; nothing writes to it
			v.Seed = seed
			seeded = append(seeded, &v)
		}
	}
	var runs []*report.Run
	for _, v := range variants {
		for _, sv := range seeded {
			for range max(c.cfg.Runs, 1) {
				r, err := c.runOne(sv, v.name, v.label, nil)
				if err != nil {
					return nil, err
				}
				runs = append(runs, r)
			}
		}
	}
	return runs, nil
}

// defaultLabel is the cc label of a run without --cc: the first bulk
// flow's controller, else the first iperf3 flow's as "kernel-<cc>" (emu
// --tun), or "-".
func defaultLabel(s *scenario.Scenario) string {
	for _, f := range s.Flows {
		if f.Kind == scenario.KindBulk {
			return f.CC
		}
	}
	for _, f := range s.Flows {
		if f.Kind == scenario.KindIperf3 {
			return "kernel-" + f.CC
		}
	}
	return "-"
}

// runOne runs s with controller name ("" = as written), labels the result
// with label, and draws a progress bar. bar, if not nil, is a bar shared by
// several runs (the sweep), and the run only moves it.
func (c *simCommand) runOne(s *scenario.Scenario, name, label string, bar func(float64)) (run *report.Run, err error) {
	opts := sim.Options{CC: name, Trace: c.cfg.PlotDir != "" && bar == nil}
	var pb *progressBar
	if bar == nil {
		title := s.Name + " " + label
		if c.cfg.Seeds != nil {
			title += fmt.Sprintf(" seed %d", s.Seed)
		}
		pb = newProgressBar(c.stderr, c.progress, title)
		defer pb.Done()
		bar = pb.Set
	}
	opts.Progress = func(done, total time.Duration) {
		if total > 0 {
			bar(float64(done) / float64(total))
		}
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("freshbench %s: %s, cc %s: %s panicked: %v\n%s", c.name, s.Name, label, c.engine(), p, debug.Stack())
		}
	}()
	start := time.Now()
	run, err = c.sim(s, opts)
	wall := time.Since(start)
	if err != nil {
		return nil, fmt.Errorf("freshbench %s: %s, cc %s: %w", c.name, s.Name, label, err)
	}
	run.CC = label
	if run.WallS == 0 {
		run.WallS = wall.Seconds()
	}
	return run, nil
}

// engine names what runs the scenarios, for messages.
func (c *simCommand) engine() string {
	if c.name == "emu" {
		return "emulator"
	}
	return "simulator"
}

// writeJSON writes v indented to path ("-": stdout). The same runs give the
// same bytes: report.Run keeps wall-clock times out of its JSON.
func (c *simCommand) writeJSON(path string, v any) error {
	b, err := marshalStable(v)
	if err != nil {
		return fmt.Errorf("freshbench %s: %s: %w", c.name, path, err)
	}
	if path == "-" {
		_, err = c.stdout.Write(b)
	} else {
		err = os.WriteFile(path, b, 0o644)
	}
	if err != nil {
		return fmt.Errorf("freshbench %s: %w", c.name, err)
	}
	return nil
}

// marshalStable is the JSON encoding of every output file: two-space
// indent, a final newline, map keys sorted (encoding/json does that).
func marshalStable(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
