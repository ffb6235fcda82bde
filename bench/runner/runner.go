// Package runner runs scenarios for "freshbench sim" and "freshbench
// emu": every scenario under every controller of a list (and every seed
// of a paired list, or several times over in real time), labelled,
// timed and with a progress bar; then prints the iperf3-like tables
// (bench/table), writes the figures (bench/plots), the ACP sweep of
// scenarios with update flows (bench/sweep) and the result JSON. The
// same code drives the virtual-time simulator (bench/sim) and the
// real-time emulator (bench/emudriver, through Emu).
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/fresh-udp/fresh/bench/emudriver"
	"github.com/fresh-udp/fresh/bench/internal/progress"
	"github.com/fresh-udp/fresh/bench/internal/usage"
	"github.com/fresh-udp/fresh/bench/plots"
	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/bench/sim"
	"github.com/fresh-udp/fresh/bench/summary"
	"github.com/fresh-udp/fresh/bench/sweep"
	"github.com/fresh-udp/fresh/bench/table"
)

// SimFunc runs one scenario: sim.Run, an emulation (Emu), or a fake in
// tests.
type SimFunc func(*scenario.Scenario, sim.Options) (*report.Run, error)

// EmuFunc runs one emulation: emudriver.Run, or a fake in tests.
type EmuFunc func(context.Context, *scenario.Scenario, emudriver.Options) (*report.Run, error)

// Emu adapts an emulation to a SimFunc: the same options, ctx for
// cancellation, and the TUN router rather than the relay if tun.
func Emu(ctx context.Context, emu EmuFunc, tun bool) SimFunc {
	return func(s *scenario.Scenario, o sim.Options) (*report.Run, error) {
		return emu(ctx, s, emudriver.Options{CC: o.CC, Trace: o.Trace, SampleInterval: o.SampleInterval, Progress: o.Progress, TUN: tun})
	}
}

// Config is what runs, and where its results go.
type Config struct {
	CCs       []string // nil: each scenario's own controllers
	Seeds     []int64  // paired runs, one per seed; nil: the scenario's seed
	Runs      int      // repeats of every run (0: once)
	Verbose   bool     // per-run tables beside the summary
	JSON      string   // the runs' JSON file, "-" for stdout, "" for none
	SweepJSON string   // the sweep summaries' JSON file
	PlotDir   string   // where the figures go, "" for none
	ACPSweep  bool     // sweep the scenarios with update flows
}

// Multi reports whether every run is repeated (Seeds, or Runs above 1),
// so the tables give mean ± SD instead of one row per run.
func (cfg *Config) Multi() bool { return cfg.Seeds != nil || cfg.Runs > 1 }

// Runner runs the scenarios of one command line.
type Runner struct {
	name     string // "sim" or "emu": the command, in messages
	cfg      Config
	sim      SimFunc
	table    io.Writer // the summary tables: stdout, or stderr if stdout carries JSON
	stdout   io.Writer
	stderr   io.Writer
	progress bool // show progress on stderr (see progress.Bar)
}

// New is a Runner of command name ("sim" or "emu", in its messages) that
// runs with sim and prints to stdout, or to stderr where stdout carries
// JSON. It draws no progress bar unless told to (ShowProgress).
func New(name string, cfg Config, sim SimFunc, stdout, stderr io.Writer) *Runner {
	r := &Runner{name: name, cfg: cfg, sim: sim, table: stdout, stdout: stdout, stderr: stderr}
	if cfg.JSON == "-" || cfg.SweepJSON == "-" {
		r.table = stderr
	}
	return r
}

// ShowProgress draws a progress bar on stderr while a run takes long: a
// bar on a terminal, a line every few seconds elsewhere.
func (c *Runner) ShowProgress() { c.progress = true }

// Run runs every scenario under every controller, prints the tables,
// then writes the JSON files; plots are written per scenario as it
// finishes. The first failure stops it.
func (c *Runner) Run(scs []*scenario.Scenario) error {
	if c.cfg.PlotDir != "" {
		if err := os.MkdirAll(c.cfg.PlotDir, 0o755); err != nil {
			return fmt.Errorf("freshbench %s: --plot: %w", c.name, err)
		}
	}
	var all []*report.Run
	var sweeps []*sweep.Summary
	for _, s := range scs {
		runs, sum, err := c.scenario(s)
		if err != nil {
			return err
		}
		all = append(all, runs...)
		if sum != nil {
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
			sweeps = []*sweep.Summary{} // "[]", not "null"
		}
		if err := c.writeJSON(c.cfg.SweepJSON, sweeps); err != nil {
			return err
		}
	}
	return nil
}

// scenario runs s, prints its tables, writes its plots and, with
// ACPSweep, sweeps it; it returns every run and the sweep (nil if none).
func (c *Runner) scenario(s *scenario.Scenario) ([]*report.Run, *sweep.Summary, error) {
	runs, err := c.runScenario(s)
	if err != nil {
		return nil, nil, err
	}
	if err := c.writeTables(s, runs); err != nil {
		return nil, nil, err
	}
	if err := c.writePlots(s, runs); err != nil {
		return nil, nil, err
	}
	for _, r := range runs { // plotted: free the traces
		for i := range r.Flows {
			r.Flows[i].Series, r.Flows[i].OWDSamples = nil, nil
		}
		r.CapacityBps = nil
	}
	if !c.cfg.ACPSweep || !sweep.HasUpdates(s) {
		return runs, nil, nil
	}
	sum, sruns, err := c.sweep(s)
	if err != nil {
		return nil, nil, err
	}
	return append(runs, sruns...), sum, nil
}

// writePlots writes the figures of s's runs with --plot, and says which.
func (c *Runner) writePlots(s *scenario.Scenario, runs []*report.Run) error {
	if c.cfg.PlotDir == "" {
		return nil
	}
	wrote, err := plots.WriteScenario(c.cfg.PlotDir, s, runs)
	if err != nil {
		return fmt.Errorf("freshbench %s: plots of %s: %w", c.name, s.Name, err)
	}
	if len(wrote) == 0 {
		fmt.Fprintf(c.stderr, "freshbench %s: --plot: nothing to plot for %s\n", c.name, s.Name)
	}
	for _, w := range wrote {
		fmt.Fprintf(c.stderr, "freshbench %s: wrote %s\n", c.name, w)
	}
	return nil
}

// sweep sweeps s, prints its table and, with --plot, draws it.
func (c *Runner) sweep(s *scenario.Scenario) (*sweep.Summary, []*report.Run, error) {
	sum, runs, err := c.Sweep(s)
	if err != nil {
		return nil, nil, err
	}
	if err := table.Sweep(c.table, []*sweep.Summary{sum}); err != nil {
		return nil, nil, err
	}
	if c.cfg.PlotDir != "" {
		if err := plots.WriteSweep(c.cfg.PlotDir, sum); err != nil {
			return nil, nil, fmt.Errorf("freshbench %s: sweep plot of %s: %w", c.name, s.Name, err)
		}
		fmt.Fprintf(c.stderr, "freshbench %s: wrote %s\n", c.name, filepath.Join(c.cfg.PlotDir, plots.FileName(sum.Scenario)+"-sweep.png"))
	}
	return sum, runs, nil
}

// Sweep runs the ACP sweep of s (bench/sweep) on the seeds of the
// configuration, or the scenario's own, with one progress bar for the
// whole sweep; the runs are never traced.
func (c *Runner) Sweep(s *scenario.Scenario) (*sweep.Summary, []*report.Run, error) {
	seeds := c.cfg.Seeds
	if seeds == nil {
		seeds = []int64{s.Seed}
	}
	pb := progress.New(c.stderr, c.progress, "sweep "+s.Name)
	defer pb.Done()
	sum, runs, err := sweep.Run(s, seeds, func(v *scenario.Scenario, label string, bar func(float64)) (*report.Run, error) {
		return c.runOne(v, "", label, bar)
	}, pb.Set)
	if ee := (*sweep.EditError)(nil); errors.As(err, &ee) {
		err = fmt.Errorf("freshbench %s: %w", c.name, err)
	}
	return sum, runs, err
}

// writeTables prints the runs of s: one table row per run, or with
// Seeds or Runs the summary per controller (and the per-run table only
// with Verbose).
func (c *Runner) writeTables(s *scenario.Scenario, runs []*report.Run) error {
	if !c.cfg.Multi() || c.cfg.Verbose {
		if err := table.Runs(c.table, runs); err != nil {
			return err
		}
	}
	if !c.cfg.Multi() {
		return nil
	}
	var rows []summary.Row
	for _, g := range groupByCC(runs) {
		rows = append(rows, summary.Runs(s, g[0].CC, g))
	}
	return table.Summary(c.table, rows)
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

// runScenario runs s once per controller, or once as written; with Seeds
// once per controller and seed (controllers outer, so every controller
// gets the same seeds), and with Runs that many times each.
func (c *Runner) runScenario(s *scenario.Scenario) ([]*report.Run, error) {
	type variant struct{ name, label string }
	variants := []variant{{"", DefaultLabel(s)}}
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

// DefaultLabel is the cc label of a run without a controller list: the
// first bulk flow's controller, else the first iperf3 flow's as
// "kernel-<cc>" (emu --tun), or "-".
func DefaultLabel(s *scenario.Scenario) string {
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
func (c *Runner) runOne(s *scenario.Scenario, name, label string, bar func(float64)) (run *report.Run, err error) {
	opts := sim.Options{CC: name, Trace: c.cfg.PlotDir != "" && bar == nil}
	if bar == nil {
		title := s.Name + " " + label
		if c.cfg.Seeds != nil {
			title += fmt.Sprintf(" seed %d", s.Seed)
		}
		pb := progress.New(c.stderr, c.progress, title)
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
func (c *Runner) engine() string {
	if c.name == "emu" {
		return "emulator"
	}
	return "simulator"
}

// writeJSON writes v to path ("-": stdout) as report.Marshal does.
func (c *Runner) writeJSON(path string, v any) error {
	b, err := report.Marshal(v)
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

// Load reads the scenario file at path for a run: with seed, if not nil,
// in place of the file's, and cut to d if d > 0 (Shorten). Its errors are
// usage errors (bench/internal/usage) naming the file.
func Load(path string, seed *int64, d time.Duration) (*scenario.Scenario, error) {
	s, err := scenario.Load(path)
	if err != nil {
		return nil, usage.Errorf("%v", err)
	}
	if seed != nil {
		s.Seed = *seed
	}
	if err := Shorten(s, path, d); err != nil {
		return nil, err
	}
	return s, nil
}

// Shorten sets s's duration to d, if d > 0, and validates s again: a
// flow start or a path change after the new end is a usage error naming
// the file path.
func Shorten(s *scenario.Scenario, path string, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	s.Duration = scenario.Duration(d)
	if err := s.Validate(); err != nil {
		return usage.Errorf("%s with --duration %v: %v", path, d, err)
	}
	return nil
}

// CheckEmu refuses, before the first run takes its real time, a scenario
// the emulator (the TUN router if tun, else the relay) cannot run as
// written or under any controller of ccs.
func CheckEmu(s *scenario.Scenario, ccs []string, tun bool) error {
	check := emudriver.Check
	if tun {
		check = emudriver.CheckTUN
	}
	if err := check(s); err != nil {
		return err
	}
	for _, name := range ccs {
		if err := check(s.WithCC(name)); err != nil {
			return err
		}
	}
	return nil
}
