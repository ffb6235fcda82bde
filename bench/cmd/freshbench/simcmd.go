package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/fresh-udp/fresh/bench/emudriver"
	"github.com/fresh-udp/fresh/bench/runner"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/bench/seeds"
	"github.com/fresh-udp/fresh/bench/sim"
	"github.com/fresh-udp/fresh/cc"

	// Controllers registered outside cc, so --cc can be checked by name.
	_ "github.com/fresh-udp/fresh/acp"
	_ "github.com/fresh-udp/fresh/bench/variants"
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

// simConfig is the parsed command line of "freshbench sim" (and emu):
// what runs and where its results go (runner.Config), and how the
// scenario files are read.
type simConfig struct {
	runner.Config
	Seed      int64         // used if SeedSet
	SeedSet   bool          // --seed was given
	Duration  time.Duration // 0: each scenario's own
	Relay     bool          // emu: --relay (the userspace relay emulator)
	TUN       bool          // emu: --tun (the TUN router between two namespaces)
	Scenarios []string      // scenario files, in argument order
}

// parseSimArgs parses the flags and scenario files of "freshbench sim".
// Flags and files may be interleaved; "--" ends the flags. It returns
// flag.ErrHelp for -h and a usage error for anything wrong.
func parseSimArgs(args []string) (*simConfig, error) { return parseRunArgs("sim", args) }

// runLists are the list flags of sim and emu, as given.
type runLists struct{ cc, seeds string }

// parseRunArgs parses the command line of "freshbench sim" or "freshbench
// emu" (cmd): the same flags, but --relay, --tun and --runs only in emu
// and --acp-sweep, --sweep-json only in sim.
func parseRunArgs(cmd string, args []string) (*simConfig, error) {
	cfg := &simConfig{}
	var lists runLists
	prefix := "freshbench " + cmd
	fs := runFlags(cmd, cfg, &lists)
	if err := parseInterleaved(fs, args, &cfg.Scenarios); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usagef("%s: %v", prefix, err)
	}
	if err := cfg.check(fs, cmd, lists); err != nil {
		return nil, err
	}
	return cfg, nil
}

// runFlags is the flag set of sim or emu (cmd), into cfg and lists.
func runFlags(cmd string, cfg *simConfig, lists *runLists) *flag.FlagSet {
	fs := newFlagSet("freshbench " + cmd)
	fs.StringVar(&lists.cc, "cc", "", "")
	fs.Int64Var(&cfg.Seed, "seed", 0, "")
	fs.StringVar(&lists.seeds, "seeds", "", "")
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
	return fs
}

// newFlagSet is a flag set that reports nothing itself: the command
// prints its errors, and its usage for -h.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseFlags parses args with fs: flag.ErrHelp for -h, a usage error
// naming the command (prefix) for a bad flag, followed by usage where
// given (results and peers print their usage rather than point to it).
func parseFlags(fs *flag.FlagSet, args []string, prefix string, usage ...string) error {
	err := fs.Parse(args)
	switch {
	case err == nil || errors.Is(err, flag.ErrHelp):
		return err
	case len(usage) > 0:
		return withUsage(usage[0], "%s: %v", prefix, err)
	}
	return usagef("%s: %v", prefix, err)
}

// parseInterleaved parses args with fs, flags and files in any order,
// appending the files to files; "--" ends the flags.
func parseInterleaved(fs *flag.FlagSet, args []string, files *[]string) error {
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return err
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			*files = append(*files, rest...)
			return nil
		}
		if len(rest) == 0 {
			return nil
		}
		*files = append(*files, rest[0])
		args = rest[1:]
	}
	return nil
}

// check reads the lists and refuses what does not go together.
func (cfg *simConfig) check(fs *flag.FlagSet, cmd string, lists runLists) error {
	prefix := "freshbench " + cmd
	cfg.SeedSet = flagGiven(fs, "seed")
	if flagGiven(fs, "duration") && cfg.Duration <= 0 {
		return usagef("%s: --duration must be positive", prefix)
	}
	if lists.cc != "" || flagGiven(fs, "cc") {
		ccs, err := parseCCList(prefix, lists.cc)
		if err != nil {
			return err
		}
		cfg.CCs = ccs
	}
	if flagGiven(fs, "seeds") {
		if cfg.SeedSet {
			return usagef("%s: --seed and --seeds are mutually exclusive: --seed N for one seed, --seeds LIST for paired runs", prefix)
		}
		list, err := parseSeeds(prefix, lists.seeds)
		if err != nil {
			return err
		}
		cfg.Seeds = list
	}
	switch {
	case flagGiven(fs, "runs") && cfg.Runs < 1:
		return usagef("%s: --runs must be at least 1", prefix)
	case cfg.Multi() && cfg.PlotDir != "":
		return usagef("%s: --plot draws one run: not with --seeds or --runs", prefix)
	case cmd != "sim" && (cfg.ACPSweep || cfg.SweepJSON != ""):
		return usagef("%s: --acp-sweep and --sweep-json are sim-only (a sweep is dozens of runs)", prefix)
	case cfg.SweepJSON != "" && !cfg.ACPSweep:
		return usagef("%s: --sweep-json needs --acp-sweep", prefix)
	case cfg.JSON == "-" && cfg.SweepJSON == "-":
		return usagef("%s: --json and --sweep-json cannot both be - (stdout)", prefix)
	case len(cfg.Scenarios) == 0:
		return usagef("%s: no scenario file given", prefix)
	}
	return nil
}

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

// parseSeeds reads a --seeds list (bench/seeds); a bad one is a usage
// error.
func parseSeeds(prefix, list string) ([]int64, error) {
	out, err := seeds.Parse(list)
	if err != nil {
		return nil, usagef("%s: --seeds %q: %v", prefix, list, err)
	}
	return out, nil
}

// loadScenarios reads every scenario file and applies --seed and
// --duration. Errors are usage errors naming the file and command cmd.
func loadScenarios(cmd string, cfg *simConfig) ([]*scenario.Scenario, error) {
	var seed *int64
	if cfg.SeedSet {
		seed = &cfg.Seed
	}
	var out []*scenario.Scenario
	for _, path := range cfg.Scenarios {
		s, err := runner.Load(path, seed, cfg.Duration)
		if err != nil {
			return nil, fmt.Errorf("freshbench %s: %w", cmd, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// simCommand is "freshbench sim".
func simCommand(args []string, stdout, stderr io.Writer) error {
	cfg, err := parseSimArgs(args)
	if err != nil {
		return err
	}
	scs, err := loadScenarios("sim", cfg)
	if err != nil {
		return err
	}
	r := runner.New("sim", cfg.Config, sim.Run, stdout, stderr)
	r.ShowProgress()
	return r.Run(scs)
}

const emuUsage = `usage: freshbench emu --relay|--tun [flags] SCENARIO.json...

Runs each scenario in real time through one emulated bottleneck (the
scenario's forward and reverse paths, changes applied at their times), once
per controller of --cc, and prints the same table and writes the same JSON
and plots as sim. A 100 s scenario takes 100 s. Flags may come before or
after the files; Ctrl-C (or SIGTERM) stops the run in progress and the
command, after tearing the emulator down.

Flags:
  --relay            real fresh endpoints over loopback UDP through the
                     userspace relay (bench/emu.Relay; driver "emu"): no root
  --tun              every flow between two network namespaces through the
                     TUN router (bench/emu.TUN; driver "emu-tun"): kernel TCP
                     (iperf3 flows), telemetry flows, and every flow's
                     per-packet delay measured at the router. Root only
  --cc LIST          comma-separated controllers for every unpinned bulk flow,
                     e.g. owd,cubic; one run per name. Default: one run with
                     the controllers the file names
  --seed N           random seed of the links (loss, jitter) (default: the
                     file's "seed")
  --seeds LIST       paired runs, one per seed of LIST ("1-5", "1,3"), as in
                     sim; not with --seed or --plot
  --runs N           run every scenario, controller (and seed) N times: in
                     real time the seed fixes the links, not the scheduling.
                     With N > 1 (or --seeds) a summary table per scenario
                     gives mean ± SD over the runs of each controller: the
                     goodput of the flows under test, their share of the
                     forward goodput (fresh's bulk flows beside iperf3's
                     kernel TCP when every bulk flow is pinned), Jain,
                     utilisation, p95 queueing and OWD; not with --plot
  -v, --verbose      with --seeds or --runs, also print the per-run tables
  --duration D       run time, a Go duration such as 30s (default: the
                     file's "duration"); must be positive
  --json FILE        write all runs as one indented JSON array ("-": stdout,
                     and the tables go to stderr)
  --plot DIR         write PNG plots into DIR (created if missing)
  -h, --help         print this help

Exactly one of --relay and --tun. Not in emu: --acp-sweep (sim only);
clock_offset, clock_skew_ppm and clock_sync "none" are refused, and iperf3
and telemetry flows under --relay (see bench/README.md).

Exit status: 0 ok, 2 usage error (bad flag or scenario file, or a scenario
the emulator cannot run), 1 run failure (such as no root or TUN for --tun)
or interrupted.
`

// emuCommand is "freshbench emu": Ctrl-C (or SIGTERM) stops the run in
// progress and the command.
func emuCommand(args []string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runEmu(ctx, args, stdout, stderr, emudriver.Run)
}

// runEmu is emuCommand with emu (emudriver.Run, or a test's fake).
func runEmu(ctx context.Context, args []string, stdout, stderr io.Writer, emu runner.EmuFunc) error {
	cfg, err := parseRunArgs("emu", args)
	if err != nil {
		return err
	}
	if cfg.Relay == cfg.TUN {
		return usagef("freshbench emu: give one of --relay (userspace UDP relay, no root) and --tun (TUN router between two network namespaces, root only)")
	}
	scs, err := loadScenarios("emu", cfg)
	if err != nil {
		return err
	}
	// Before the first run takes its real time: every scenario the
	// emulator cannot run under any of the --cc controllers.
	for i, s := range scs {
		if err := runner.CheckEmu(s, cfg.CCs, cfg.TUN); err != nil {
			return usagef("freshbench emu: %s: %v", cfg.Scenarios[i], err)
		}
	}
	r := runner.New("emu", cfg.Config, runner.Emu(ctx, emu, cfg.TUN), stdout, stderr)
	r.ShowProgress()
	return r.Run(scs)
}
