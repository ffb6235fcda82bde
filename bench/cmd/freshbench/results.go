package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/fresh-udp/fresh/bench/resultsmd"
)

// "freshbench results" regenerates bench/RESULTS.md (bench/resultsmd).

const resultsUsage = `usage: freshbench results [--scenarios DIR] [--out FILE] [--plots DIR] [--tun]
       freshbench results [--scenarios DIR] --gaps-baseline FILE
       freshbench results [--scenarios DIR] --untuned-baseline FILE

Runs the paper's experiments and the ACP sweeps in the simulator and writes
the report with the paper's numbers beside ours (bench/RESULTS.md).

Flags:
  --scenarios DIR  where the scenario files are (default bench/scenarios)
  --out FILE       the Markdown report (default bench/RESULTS.md; "-": stdout)
  --plots DIR      where its PNG plots go (default bench/results)
  --tun            also run the kernel-TCP, AQM, ACP-priority and Nagle
                   experiments through the TUN router (root; about 40
                   minutes of real time) and rewrite DIR/tun.md, which the
                   report appends
  --gaps-baseline FILE
                   only measure the "Controller research: the gaps" rows and
                   write them to FILE as JSON: the "before" the section shows
                   (bench/results/gaps-baseline.json); writes no report
  --untuned-baseline FILE
                   the same for owd's rows of "Controllers on paths nobody
                   tuned for" (bench/results/untuned-baseline.json)
  -h, --help       print this help
`

// resultsCommand is "freshbench results": it writes the baseline asked
// for, or the report and its figures.
func resultsCommand(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("results")
	cfg := resultsmd.Config{Log: stderr}
	var gapsBaseline, untunedBaseline string // write that baseline, nothing else
	fs.StringVar(&cfg.Scenarios, "scenarios", filepath.Join("bench", "scenarios"), "")
	fs.StringVar(&cfg.Out, "out", filepath.Join("bench", "RESULTS.md"), "")
	fs.StringVar(&cfg.Plots, "plots", filepath.Join("bench", "results"), "")
	fs.BoolVar(&cfg.TUN, "tun", false, "")
	fs.StringVar(&gapsBaseline, "gaps-baseline", "", "")
	fs.StringVar(&untunedBaseline, "untuned-baseline", "", "")
	if err := parseFlags(fs, args, "freshbench results", resultsUsage); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return withUsage(resultsUsage, "freshbench results: unexpected argument %q", fs.Arg(0))
	}
	rep := resultsmd.New(cfg)
	path, write := gapsBaseline, rep.WriteGapsBaseline
	if path == "" {
		path, write = untunedBaseline, rep.WriteUntunedBaseline
	}
	if path != "" {
		if err := write(path); err != nil {
			return fmt.Errorf("freshbench results: %w", err)
		}
		fmt.Fprintf(stderr, "wrote %s\n", path)
		return nil
	}
	if err := rep.Generate(); err != nil {
		return fmt.Errorf("freshbench results: %w", err)
	}
	if cfg.Out == "-" {
		if _, err := stdout.Write(rep.Markdown()); err != nil {
			return errSilent
		}
		return nil
	}
	if err := os.WriteFile(cfg.Out, rep.Markdown(), 0o644); err != nil {
		return fmt.Errorf("freshbench results: %w", err)
	}
	fmt.Fprintf(stderr, "wrote %s and plots in %s\n", cfg.Out, cfg.Plots)
	return nil
}
