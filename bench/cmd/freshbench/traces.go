package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/fresh-udp/fresh/bench/cellular"
	"github.com/fresh-udp/fresh/bench/runner"
)

// "freshbench traces" is the Pantheon-style summary of the cellular-trace
// scenarios (bench/cellular).

const tracesUsage = `usage: freshbench traces [--seeds LIST] [--cc LIST] [--scenarios DIR] [--out DIR] [--md FILE] [--json FILE] [--duration D]

Runs every cellular-trace scenario (trace-*.json) under every controller of
--cc over the seeds of --seeds in the simulator, and writes the summary: per
trace a throughput against p95 one-way delay figure (one point per
controller: its mean over the seeds, with each seed's point faint; the
delay axis logarithmic and inverted, as Pantheon draws it; FIFO and CoDel
side by side on shared axes) and a Markdown table.

Flags:
  --seeds LIST     the seeds, as in sim (default 1-10): every controller runs
                   every seed, so each sees the same trace windows
  --cc LIST        the controllers (default owd,cubic,reno, and bbr when it is
                   registered)
  --scenarios DIR  where the trace-*.json files are (default bench/scenarios)
  --out DIR        where the figures go, traces-<trace>.png (default
                   bench/results)
  --md FILE        the Markdown section (default DIR/traces.md; "-": stdout)
  --json FILE      also write every run as one JSON array ("-": stdout)
  --duration D     simulated time of every run (default: the files', 60 s)
  -h, --help       print this help

Exit status: 0 ok, 2 usage error, 1 a run or an output failed.
`

// tracesFlags is the parsed command line of "freshbench traces".
type tracesFlags struct {
	cfg           cellular.Config
	out, md, json string // figures' directory, Markdown and JSON files
}

// tracesCommand is "freshbench traces", running with run (sim.Run, or a
// test's fake).
func tracesCommand(args []string, stdout, stderr io.Writer, run runner.SimFunc) error {
	f, err := parseTracesArgs(args)
	if err != nil {
		return err
	}
	f.cfg.Sim, f.cfg.Log = run, stderr
	res, err := cellular.Run(f.cfg)
	if err != nil {
		return fmt.Errorf("freshbench traces: %w", err)
	}
	wrote, err := res.Write(f.out, f.md, f.json, stdout)
	if err != nil {
		return fmt.Errorf("freshbench traces: %w", err)
	}
	for _, w := range wrote {
		fmt.Fprintf(stderr, "freshbench traces: wrote %s\n", w)
	}
	fmt.Fprintf(stderr, "freshbench traces: %d runs in %.1f s\n", len(res.Runs()), res.Wall().Seconds())
	return nil
}

func parseTracesArgs(args []string) (*tracesFlags, error) {
	const prefix = "freshbench traces"
	fs := newFlagSet("traces")
	var seedList, ccList string
	f := &tracesFlags{}
	fs.StringVar(&seedList, "seeds", cellular.DefaultSeeds, "")
	fs.StringVar(&ccList, "cc", "", "")
	fs.StringVar(&f.cfg.Dir, "scenarios", filepath.Join("bench", "scenarios"), "")
	fs.StringVar(&f.out, "out", filepath.Join("bench", "results"), "")
	fs.StringVar(&f.md, "md", "", "")
	fs.StringVar(&f.json, "json", "", "")
	fs.DurationVar(&f.cfg.Duration, "duration", 0, "")
	if err := parseFlags(fs, args, prefix); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, usagef("%s: unexpected argument %q (the scenarios come from --scenarios)", prefix, fs.Arg(0))
	case flagGiven(fs, "duration") && f.cfg.Duration <= 0:
		return nil, usagef("%s: --duration must be positive", prefix)
	case f.md == "-" && f.json == "-":
		return nil, usagef("%s: --md and --json cannot both be - (stdout)", prefix)
	}
	var err error
	if f.cfg.Seeds, err = parseSeeds(prefix, seedList); err != nil {
		return nil, err
	}
	f.cfg.CCs = cellular.DefaultCCs()
	if ccList != "" || flagGiven(fs, "cc") {
		if f.cfg.CCs, err = parseCCList(prefix, ccList); err != nil {
			return nil, err
		}
	}
	return f, nil
}
