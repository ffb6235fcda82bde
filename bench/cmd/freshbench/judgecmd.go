package main

import (
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/fresh-udp/fresh/bench/internal/progress"
	"github.com/fresh-udp/fresh/bench/judge"
	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/seeds"
)

const judgeUsage = `usage: freshbench judge [flags]

Draws scenarios at random from named families (bench/judge: the families
and the ranges of their parameters are in bench/README.md), runs every draw
in the simulator under every controller of --cc (the same draw for each:
the controller replaces the flows under test, the cross traffic stays as
drawn), and prints per family the pass rate of each criterion and a
Pantheon-style leaderboard (median goodput, p95 one-way delay and power
per controller, over every draw and per trace).

Develop on seeds 1-100 (the default); report on held-out seeds 1001-1100.

Flags:
  --families LIST  comma-separated families (default: all of
                   alone,fillers,ownkind,aqm,jitter,loss,narrowack,acp)
  --seeds LIST     one draw per family and seed ("1-100", "1001-1100",
                   "1,3,7-9"; default 1-100)
  --draws N        use only the first N seeds of --seeds (0: all)
  --cc LIST        controllers to judge (default owd,rttdelay,copa,bbr,cubic;
                   every name must be registered)
  --scale X        multiply every family's duration (default 1: 30-40 s of
                   virtual time per draw)
  --parallel N     runs at once (default GOMAXPROCS)
  --acp-oracle N   also run every acp draw with its sources at N fixed
                   update rates (0.5 Hz to the path's capacity, geometric)
                   under every controller, for the constrained oracle the
                   age criterion compares ACP with (default 0: no oracle;
                   8 rates make the acp family about 11× dearer)
  --json FILE      write the whole report, every draw's scenario and
                   outcomes included, as JSON ("-": stdout, and the
                   tables go to stderr)
  --md             print the tables as Markdown (for RESULTS.md) instead
  -h, --help       print this help

Exit status: 0 ok, 2 usage error, 1 run failure.
`

// judgeConfig is the parsed command line of "freshbench judge".
type judgeConfig struct {
	cfg      judge.Config
	JSON     string
	Markdown bool
}

func parseJudgeArgs(args []string) (*judgeConfig, error) {
	const prefix = "freshbench judge"
	jc := &judgeConfig{}
	var families, seedList, ccList string
	var draws int
	fs := newFlagSet(prefix)
	fs.StringVar(&families, "families", strings.Join(judge.Families, ","), "")
	fs.StringVar(&seedList, "seeds", "1-100", "")
	fs.IntVar(&draws, "draws", 0, "")
	fs.StringVar(&ccList, "cc", strings.Join(judge.DefaultCCs, ","), "")
	fs.Float64Var(&jc.cfg.Scale, "scale", 1, "")
	fs.IntVar(&jc.cfg.Parallel, "parallel", runtime.GOMAXPROCS(0), "")
	fs.IntVar(&jc.cfg.OracleRates, "acp-oracle", 0, "")
	fs.StringVar(&jc.JSON, "json", "", "")
	fs.BoolVar(&jc.Markdown, "md", false, "")
	if err := parseFlags(fs, args, prefix); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, usagef("%s: unexpected argument %q (the judge draws its own scenarios)", prefix, fs.Arg(0))
	}
	list, err := parseSeeds(prefix, seedList)
	if err != nil {
		return nil, err
	}
	switch {
	case draws < 0:
		return nil, usagef("%s: --draws %d: want 0 (every seed) or more", prefix, draws)
	case draws > len(list):
		return nil, usagef("%s: --draws %d: --seeds %q has only %d seeds", prefix, draws, seedList, len(list))
	case draws > 0:
		list = list[:draws]
	}
	switch {
	case !(jc.cfg.Scale > 0):
		return nil, usagef("%s: --scale must be positive", prefix)
	case jc.cfg.OracleRates < 0 || jc.cfg.OracleRates > 100:
		return nil, usagef("%s: --acp-oracle %d: want 0 (no oracle) to 100 rates", prefix, jc.cfg.OracleRates)
	case jc.cfg.Parallel < 1:
		return nil, usagef("%s: --parallel must be at least 1", prefix)
	}
	jc.cfg.Seeds = list
	jc.cfg.Families = splitList(families)
	if err := judge.CheckFamilies(jc.cfg.Families); err != nil {
		return nil, usagef("%s: --families: %v", prefix, err)
	}
	jc.cfg.CCs = splitList(ccList)
	if err := judge.CheckCCs(jc.cfg.CCs); err != nil {
		return nil, usagef("%s: --cc: %v (drop it from --cc, or register it)", prefix, err)
	}
	return jc, nil
}

func splitList(s string) []string {
	var out []string
	for x := range strings.SplitSeq(s, ",") {
		out = append(out, strings.TrimSpace(x))
	}
	return out
}

// judgeCommand is "freshbench judge": it judges, with a progress bar,
// and writes the tables and the JSON.
func judgeCommand(args []string, stdout, stderr io.Writer) error {
	jc, err := parseJudgeArgs(args)
	if err != nil {
		return err
	}
	pb := progress.New(stderr, true, "judge")
	jc.cfg.Progress = func(done, total int) { pb.Set(float64(done) / float64(total)) }
	rep, err := judge.Judge(jc.cfg)
	pb.Done()
	if err != nil {
		return fmt.Errorf("freshbench judge: %w", err)
	}
	tables := stdout
	if jc.JSON == "-" {
		tables = stderr
	}
	if jc.Markdown {
		err = judge.WriteMarkdown(tables, rep, seeds.Label(jc.cfg.Seeds))
	} else {
		err = judge.WriteText(tables, rep, true)
	}
	if err != nil {
		return fmt.Errorf("freshbench judge: %w", err)
	}
	if jc.JSON != "" {
		if err := report.WriteJSON(jc.JSON, rep, stdout); err != nil {
			return fmt.Errorf("freshbench judge: --json: %w", err)
		}
	}
	return nil
}
