package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/bench/sim"
	"github.com/fresh-udp/fresh/cc"
)

// "freshbench traces" is the Pantheon-style summary of the cellular-trace
// scenarios (bench/scenarios/trace-*.json): every scenario under every
// controller over paired seeds in the simulator, then per trace a
// throughput–delay figure (Pantheon's: p95 one-way delay on a logarithmic,
// inverted x axis, throughput up) and a table of throughput and p95 delay,
// their means and worst seeds, and the link's utilisation.

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

// tracesConfig is one summary's inputs.
type tracesConfig struct {
	Dir      string // scenario directory
	Out      string // figures
	Seeds    []int64
	CCs      []string
	Duration time.Duration // 0: the scenarios'
	Sim      simFunc
	Log      io.Writer // a line per scenario as it finishes; nil: quiet
}

// tracesDefaultCCs are the controllers of the summary: fresh's owd and
// the loss-based baselines, with bbr when a package registered it.
func tracesDefaultCCs() []string {
	ccs := []string{"owd", "cubic", "reno"}
	if slices.Contains(cc.Names(), "bbr") {
		ccs = append(ccs, "bbr")
	}
	return ccs
}

// traceSeeds is the default seed list: Pantheon-style summaries want ten
// windows of each trace at least.
const traceSeeds = "1-10"

// traceCell is one controller on one scenario, over the seeds.
type traceCell struct {
	CC string
	// Throughput is the flows under test's goodput (bit/s), OWD95 their
	// mean p95 one-way delay (ms), Util the forward link's utilisation,
	// one per seed, in seed order.
	Throughput, OWD95, Util []float64
	Seeds                   []int64
}

func (c *traceCell) mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(max(len(xs), 1))
}

// worst returns the worst value of xs (the lowest when low, else the
// highest) and its seed.
func (c *traceCell) worst(xs []float64, low bool) (float64, int64) {
	best := 0
	for i, x := range xs {
		if (low && x < xs[best]) || (!low && x > xs[best]) {
			best = i
		}
	}
	if len(xs) == 0 {
		return 0, 0
	}
	return xs[best], c.Seeds[best]
}

// traceScenario is one scenario's cells, one per controller.
type traceScenario struct {
	s     *scenario.Scenario
	queue string // the forward queue discipline
	cells []*traceCell
}

// traceGroup is a trace file's scenarios (FIFO, CoDel).
type traceGroup struct {
	trace, reverse string // the forward trace's file name, the reverse's
	scenarios      []*traceScenario
}

// tracesResult is a whole summary.
type tracesResult struct {
	cfg    tracesConfig
	groups []*traceGroup
	runs   []*report.Run // every run, in order
	wall   time.Duration
}

// loadTraceScenarios reads DIR/trace-*.json, grouped by forward trace, the
// groups in file-name order, FIFO before CoDel.
func loadTraceScenarios(dir string, d time.Duration) ([]*traceGroup, error) {
	files, err := filepath.Glob(filepath.Join(dir, "trace-*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, usagef("freshbench traces: no trace-*.json in %s (--scenarios)", dir)
	}
	byTrace := map[string]*traceGroup{}
	var order []string
	for _, f := range files {
		s, err := scenario.Load(f)
		if err != nil {
			return nil, usagef("freshbench traces: %v", err)
		}
		if s.Forward.Trace == "" {
			return nil, usagef("freshbench traces: %s: the forward path is not a trace", f)
		}
		for _, fl := range s.Flows {
			if fl.EmuTUNOnly() {
				return nil, usagef("freshbench traces: %s: flow %q is %s, which runs only in the TUN router; name TUN scenarios tun-*.json", f, fl.Name, fl.Kind)
			}
		}
		if d > 0 {
			s.Duration = scenario.Duration(d)
			if err := s.Validate(); err != nil {
				return nil, usagef("freshbench traces: %s with --duration %v: %v", f, d, err)
			}
		}
		key := filepath.Base(s.Forward.Trace)
		g := byTrace[key]
		if g == nil {
			g = &traceGroup{trace: key, reverse: filepath.Base(s.Reverse.Trace)}
			byTrace[key] = g
			order = append(order, key)
		}
		g.scenarios = append(g.scenarios, &traceScenario{s: s, queue: s.Forward.Queue.Discipline})
	}
	slices.Sort(order)
	var groups []*traceGroup
	for _, k := range order {
		g := byTrace[k]
		slices.SortStableFunc(g.scenarios, func(a, b *traceScenario) int { return queueRank(a.queue) - queueRank(b.queue) })
		groups = append(groups, g)
	}
	return groups, nil
}

// queueRank orders disciplines in tables: drop-tail first.
func queueRank(q string) int {
	return slices.Index([]string{"fifo", "codel", "fq_codel", "wmm", "cake"}, q)
}

// runTraces runs every scenario under every controller and seed.
func runTraces(cfg tracesConfig) (*tracesResult, error) {
	groups, err := loadTraceScenarios(cfg.Dir, cfg.Duration)
	if err != nil {
		return nil, err
	}
	res := &tracesResult{cfg: cfg, groups: groups}
	start := time.Now()
	for _, g := range groups {
		for _, ts := range g.scenarios {
			t0 := time.Now()
			for _, name := range cfg.CCs {
				cell := &traceCell{CC: name}
				test, _ := flowsUnderTest(ts.s)
				for _, seed := range cfg.Seeds {
					s := *ts.s
					s.Seed = seed
					r, err := cfg.Sim(&s, sim.Options{CC: name})
					if err != nil {
						return nil, fmt.Errorf("freshbench traces: %s under %s, seed %d: %w", s.Name, name, seed, err)
					}
					r.CC = name
					var gp, owd float64
					n := 0
					for i, f := range r.Flows {
						if test(i, f) {
							gp += f.GoodputBps
							owd += f.OWDms.P95
							n++
						}
					}
					cell.Throughput = append(cell.Throughput, gp)
					cell.OWD95 = append(cell.OWD95, owd/float64(max(n, 1)))
					cell.Util = append(cell.Util, r.Utilization.Forward)
					cell.Seeds = append(cell.Seeds, seed)
					res.runs = append(res.runs, r)
				}
				ts.cells = append(ts.cells, cell)
			}
			if cfg.Log != nil {
				fmt.Fprintf(cfg.Log, "freshbench traces: %s: %d runs in %.1f s\n", ts.s.Name, len(cfg.CCs)*len(cfg.Seeds), time.Since(t0).Seconds())
			}
		}
	}
	res.wall = time.Since(start)
	return res, nil
}

// figureName is the PNG of a trace's figure.
func (g *traceGroup) figureName() string {
	return "traces-" + fileName(strings.ToLower(strings.ReplaceAll(g.trace, ".", "-"))) + ".png"
}

// writeFigures draws one figure per trace into dir and returns the paths.
func (res *tracesResult) writeFigures(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var wrote []string
	for _, g := range res.groups {
		f, err := res.figure(g)
		if err != nil {
			return wrote, err
		}
		path := filepath.Join(dir, g.figureName())
		if err := f.save(path); err != nil {
			return wrote, err
		}
		wrote = append(wrote, path)
	}
	return wrote, nil
}

// figure is a trace's throughput–delay figure: a panel per queue
// discipline, side by side on shared axes.
func (res *tracesResult) figure(g *traceGroup) (*figure, error) {
	s0 := g.scenarios[0].s
	rtt := s0.Forward.Delay.D() + s0.Reverse.Delay.D()
	f := &figure{
		title: fmt.Sprintf("%s: throughput vs. p95 one-way delay (better: up and right)", g.trace),
		subtitle: fmt.Sprintf("%s/%s, RTT %d ms; each controller's mean over %d seeds (large, labelled) and each seed (small)",
			s0.Forward.DescribeCapacity(), filepath.Ext(g.reverse), rtt.Milliseconds(), len(res.cfg.Seeds)),
		cols: len(g.scenarios),
	}
	type panelMarks struct{ marks, small []pantheonMark }
	var pm []panelMarks
	xlo, xhi, yhi := math.Inf(1), 0.0, 0.0
	for _, ts := range g.scenarios {
		var m panelMarks
		for i, c := range ts.cells {
			m.marks = append(m.marks, pantheonMark{label: c.CC, index: i, x: c.mean(c.OWD95), y: c.mean(c.Throughput) / 1e6})
			for k := range c.Seeds {
				m.small = append(m.small, pantheonMark{label: c.CC, index: i, x: c.OWD95[k], y: c.Throughput[k] / 1e6})
			}
		}
		lo, hi, _, top := markRange(m.marks, m.small)
		xlo, xhi, yhi = min(xlo, lo), max(xhi, hi), max(yhi, top)
		pm = append(pm, m)
	}
	for i, ts := range g.scenarios {
		p := panelPlot(fmt.Sprintf("%s, %d packets", ts.queue, ts.s.Forward.Queue.Limit), "p95 one-way delay [ms]", "throughput [Mbit/s]")
		if i > 0 {
			p.Y.Label.Text = ""
		}
		if _, err := addPantheonMarks(p, pm[i].marks, pm[i].small); err != nil {
			return nil, err
		}
		if i > 0 {
			p.Legend = plot.NewLegend() // the same controllers as the first panel's
		}
		setPantheonAxes(p, xlo, xhi, yhi)
		f.panels = append(f.panels, p)
	}
	return f, nil
}

// writeMarkdown writes the summary's section; figure(name) is how the
// section links a figure file (relative to the Markdown file).
func (res *tracesResult) writeMarkdown(w io.Writer, heading string, figure func(string) string) {
	cfg := res.cfg
	fmt.Fprintf(w, "%s Cellular traces\n\n", heading)
	fmt.Fprintf(w, "One bulk flow over a path replaying a cellular link trace, the data direction one file and the\n")
	fmt.Fprintf(w, "ACK direction its pair, 20 ms of propagation each way, a 200-packet buffer at both ends (drop-tail,\n")
	fmt.Fprintf(w, "as base stations keep, or CoDel with RFC 8289's defaults), 60 s from a random point of the trace\n")
	fmt.Fprintf(w, "(`bench/scenarios/trace-*.json`). The traces were recorded with the Saturator tool of Winstein,\n")
	fmt.Fprintf(w, "Sivaraman and Balakrishnan (\"Stochastic Forecasts Achieve High Throughput and Low Delay over\n")
	fmt.Fprintf(w, "Cellular Networks\", NSDI 2013) and are distributed with the Mahimahi emulator (Netravali et al.,\n")
	fmt.Fprintf(w, "\"Mahimahi: Accurate Record-and-Replay for HTTP\", ATC 2015), whose mm-link semantics `bench/netem`\n")
	fmt.Fprintf(w, "replays (`bench/traces/README.md`). Every controller runs the same %d seeds, so each sees the same\n", len(cfg.Seeds))
	fmt.Fprintf(w, "%d windows of every trace. Throughput is the bulk flow's goodput; p95 OWD its 95th-percentile\n", len(cfg.Seeds))
	fmt.Fprintf(w, "one-way delay; utilisation the share of the forward link's delivery-opportunity bytes that carried\n")
	fmt.Fprintf(w, "data. \"Worst\" is the lowest throughput and the highest p95 OWD of any seed, with that seed.\n")
	fmt.Fprintf(w, "Reproduce with `go run ./bench/cmd/freshbench traces --seeds %s --cc %s`.\n\n", seedLabel(cfg.Seeds), strings.Join(cfg.CCs, ","))

	res.writeOverview(w)
	for _, g := range res.groups {
		fmt.Fprintf(w, "%s# %s (ACKs: %s)\n\n", heading, g.trace, g.reverse)
		fmt.Fprintf(w, "![%s: throughput against p95 one-way delay](%s)\n\n", g.trace, figure(g.figureName()))
		fmt.Fprintf(w, "| queue | cc | throughput mean [Mbit/s] | worst seed | p95 OWD mean [ms] | worst seed | utilisation |\n")
		fmt.Fprintf(w, "|---|---|---:|---:|---:|---:|---:|\n")
		for _, ts := range g.scenarios {
			for _, c := range ts.cells {
				tw, ts0 := c.worst(c.Throughput, true)
				ow, os0 := c.worst(c.OWD95, false)
				fmt.Fprintf(w, "| %s | %s | %.2f | %.2f (seed %d) | %.1f | %.1f (seed %d) | %.1f %% |\n",
					ts.queue, c.CC, c.mean(c.Throughput)/1e6, tw/1e6, ts0, c.mean(c.OWD95), ow, os0, 100*c.mean(c.Util))
			}
		}
		fmt.Fprintln(w)
	}
}

// writeOverview is the table over all traces: per queue and controller,
// the median over the traces of its throughput relative to the best
// controller's on that scenario, and of its p95 delay relative to the
// lowest.
func (res *tracesResult) writeOverview(w io.Writer) {
	type key struct{ queue, cc string }
	rel := map[key][2][]float64{}
	var queues []string
	for _, g := range res.groups {
		for _, ts := range g.scenarios {
			if !slices.Contains(queues, ts.queue) {
				queues = append(queues, ts.queue)
			}
			bestT, bestD := 0.0, math.Inf(1)
			for _, c := range ts.cells {
				bestT, bestD = max(bestT, c.mean(c.Throughput)), min(bestD, c.mean(c.OWD95))
			}
			for _, c := range ts.cells {
				k := key{ts.queue, c.CC}
				v := rel[k]
				if bestT > 0 {
					v[0] = append(v[0], c.mean(c.Throughput)/bestT)
				}
				if bestD > 0 && !math.IsInf(bestD, 1) {
					v[1] = append(v[1], c.mean(c.OWD95)/bestD)
				}
				rel[k] = v
			}
		}
	}
	fmt.Fprintf(w, "Over the %d traces, the median of each controller's mean throughput as a share of the best\n", len(res.groups))
	fmt.Fprintf(w, "controller's on the same scenario, and of its mean p95 OWD as a multiple of the lowest:\n\n")
	fmt.Fprintf(w, "| queue | cc | throughput / best | p95 OWD / lowest |\n|---|---|---:|---:|\n")
	for _, q := range queues {
		for _, name := range res.cfg.CCs {
			v := rel[key{q, name}]
			fmt.Fprintf(w, "| %s | %s | %.2f | %.2f× |\n", q, name, median(v[0]), median(v[1]))
		}
	}
	fmt.Fprintln(w)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// seedLabel writes a seed list back as the shortest LIST: "1-10", "1,3,7-9".
func seedLabel(seeds []int64) string {
	var parts []string
	for i := 0; i < len(seeds); {
		j := i
		for j+1 < len(seeds) && seeds[j+1] == seeds[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", seeds[i], seeds[j]))
		} else {
			parts = append(parts, fmt.Sprint(seeds[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// runTracesCommand is "freshbench traces".
func runTracesCommand(args []string, stdout, stderr io.Writer) int {
	err := tracesCommand(args, stdout, stderr, sim.Run)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, tracesUsage)
		return exitOK
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		if exitCode(err) == exitUsage {
			fmt.Fprintln(stderr, `run "freshbench traces -h" for usage`)
		}
	}
	return exitCode(err)
}

func tracesCommand(args []string, stdout, stderr io.Writer, run simFunc) error {
	fs := flag.NewFlagSet("traces", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var seedList, ccList, md, jsonOut string
	cfg := tracesConfig{Sim: run, Log: stderr}
	fs.StringVar(&seedList, "seeds", traceSeeds, "")
	fs.StringVar(&ccList, "cc", "", "")
	fs.StringVar(&cfg.Dir, "scenarios", filepath.Join("bench", "scenarios"), "")
	fs.StringVar(&cfg.Out, "out", filepath.Join("bench", "results"), "")
	fs.StringVar(&md, "md", "", "")
	fs.StringVar(&jsonOut, "json", "", "")
	fs.DurationVar(&cfg.Duration, "duration", 0, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usagef("freshbench traces: %v", err)
	}
	if fs.NArg() > 0 {
		return usagef("freshbench traces: unexpected argument %q (the scenarios come from --scenarios)", fs.Arg(0))
	}
	if flagGiven(fs, "duration") && cfg.Duration <= 0 {
		return usagef("freshbench traces: --duration must be positive")
	}
	if md == "-" && jsonOut == "-" {
		return usagef("freshbench traces: --md and --json cannot both be - (stdout)")
	}
	var err error
	if cfg.Seeds, err = parseSeedList("freshbench traces", seedList); err != nil {
		return err
	}
	cfg.CCs = tracesDefaultCCs()
	if ccList != "" || flagGiven(fs, "cc") {
		if cfg.CCs, err = parseCCList("freshbench traces", ccList); err != nil {
			return err
		}
	}
	if md == "" {
		md = filepath.Join(cfg.Out, "traces.md")
	}
	res, err := runTraces(cfg)
	if err != nil {
		return err
	}
	wrote, err := res.writeFigures(cfg.Out)
	if err != nil {
		return fmt.Errorf("freshbench traces: %w", err)
	}
	var buf bytes.Buffer
	res.writeMarkdown(&buf, "##", func(file string) string {
		if md == "-" {
			return filepath.ToSlash(filepath.Join(cfg.Out, file))
		}
		r, err := filepath.Rel(filepath.Dir(md), filepath.Join(cfg.Out, file))
		if err != nil {
			return filepath.ToSlash(filepath.Join(cfg.Out, file))
		}
		return filepath.ToSlash(r)
	})
	if md == "-" {
		_, err = stdout.Write(buf.Bytes())
	} else {
		err = os.WriteFile(md, buf.Bytes(), 0o644)
		wrote = append(wrote, md)
	}
	if err != nil {
		return fmt.Errorf("freshbench traces: %w", err)
	}
	if jsonOut != "" {
		b, err := marshalStable(res.runs)
		if err != nil {
			return fmt.Errorf("freshbench traces: %w", err)
		}
		if jsonOut == "-" {
			_, err = stdout.Write(b)
		} else {
			err = os.WriteFile(jsonOut, b, 0o644)
			wrote = append(wrote, jsonOut)
		}
		if err != nil {
			return fmt.Errorf("freshbench traces: %w", err)
		}
	}
	for _, w := range wrote {
		fmt.Fprintf(stderr, "freshbench traces: wrote %s\n", w)
	}
	fmt.Fprintf(stderr, "freshbench traces: %d runs in %.1f s\n", len(res.runs), res.wall.Seconds())
	return nil
}

// cellularTraces writes the "Cellular traces" section of RESULTS.md: the
// summary with its defaults (seeds 1-10, tracesDefaultCCs), figures in the
// report's plot directory.
func (c *resultsCommand) cellularTraces(rel func(string) string) error {
	seeds, err := parseSeedList("freshbench results", traceSeeds)
	if err != nil {
		return err
	}
	res, err := runTraces(tracesConfig{Dir: c.dir, Out: c.plots, Seeds: seeds, CCs: tracesDefaultCCs(), Sim: sim.Run, Log: c.stderr})
	if err != nil {
		return err
	}
	if _, err := res.writeFigures(c.plots); err != nil {
		return err
	}
	res.writeMarkdown(&c.md, "##", rel)
	return nil
}
