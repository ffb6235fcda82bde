package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/fresh-udp/fresh/bench/emudriver"
	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/bench/sim"
)

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

// runEmuCommand is "freshbench emu": it returns the exit code.
func runEmuCommand(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runEmu(ctx, args, stdout, stderr, emudriver.Run)
}

// emuFunc runs one emulation; emudriver.Run, or a fake in tests.
type emuFunc func(context.Context, *scenario.Scenario, emudriver.Options) (*report.Run, error)

func runEmu(ctx context.Context, args []string, stdout, stderr io.Writer, emu emuFunc) int {
	cfg, err := parseRunArgs("emu", args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, emuUsage)
		return exitOK
	}
	if err == nil && cfg.Relay == cfg.TUN {
		err = usagef("freshbench emu: give one of --relay (userspace UDP relay, no root) and --tun (TUN router between two network namespaces, root only)")
	}
	if err == nil {
		var scs []*scenario.Scenario
		if scs, err = loadScenariosFor("emu", cfg); err == nil {
			err = checkEmu(cfg, scs)
		}
		if err == nil {
			c := newSimCommand(cfg, emuAsSim(ctx, emu, cfg.TUN), stdout, stderr)
			c.name = "emu"
			c.progress = true // a bar on a terminal, a line every few seconds elsewhere
			err = c.run(scs)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		if exitCode(err) == exitUsage {
			fmt.Fprintln(stderr, `run "freshbench emu -h" for usage`)
		}
	}
	return exitCode(err)
}

// checkEmu refuses, before the first run takes its real time, every
// scenario the emulator cannot run under any of the --cc controllers.
func checkEmu(cfg *simConfig, scs []*scenario.Scenario) error {
	for i, s := range scs {
		variants := []*scenario.Scenario{s}
		for _, name := range cfg.CCs {
			variants = append(variants, s.WithCC(name))
		}
		for _, v := range variants {
			check := emudriver.Check
			if cfg.TUN {
				check = emudriver.CheckTUN
			}
			if err := check(v); err != nil {
				return usagef("freshbench emu: %s: %v", cfg.Scenarios[i], err)
			}
		}
	}
	return nil
}

// emuAsSim adapts an emulation to the simCommand's run function: the same
// options, and ctx for cancellation.
func emuAsSim(ctx context.Context, emu emuFunc, tun bool) simFunc {
	return func(s *scenario.Scenario, o sim.Options) (*report.Run, error) {
		return emu(ctx, s, emudriver.Options{CC: o.CC, Trace: o.Trace, SampleInterval: o.SampleInterval, Progress: o.Progress, TUN: tun})
	}
}
