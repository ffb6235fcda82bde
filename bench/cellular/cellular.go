// Package cellular is the Pantheon-style summary of the cellular-trace
// scenarios ("freshbench traces", and the "Cellular traces" section of
// RESULTS.md): every trace-*.json scenario of a directory — one bulk flow
// over a path replaying a measured cellular link (bench/traces), under
// FIFO and CoDel — under every controller over paired seeds, then per
// trace a throughput–delay figure (Pantheon's: p95 one-way delay on a
// logarithmic, inverted x axis, throughput up; Yan et al., "Pantheon: the
// training ground for Internet congestion-control research", USENIX ATC
// 2018) and a table of throughput and p95 delay, their means and worst
// seeds, and the link's utilisation.
package cellular

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"time"

	"github.com/fresh-udp/fresh/bench/internal/usage"
	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/runner"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/bench/sim"
	"github.com/fresh-udp/fresh/bench/summary"
	"github.com/fresh-udp/fresh/cc"
)

// DefaultSeeds is the default seed list: Pantheon-style summaries want
// ten windows of each trace at least.
const DefaultSeeds = "1-10"

// DefaultCCs are the controllers of the summary: fresh's owd and the
// loss-based baselines, with bbr when a package registered it.
func DefaultCCs() []string {
	ccs := []string{"owd", "cubic", "reno"}
	if slices.Contains(cc.Names(), "bbr") {
		ccs = append(ccs, "bbr")
	}
	return ccs
}

// Config is one summary's inputs.
type Config struct {
	Dir      string // scenario directory
	Seeds    []int64
	CCs      []string
	Duration time.Duration // 0: the scenarios'
	Sim      runner.SimFunc
	// Log gets a line per scenario as it finishes, as freshbench traces
	// prints it; nil: quiet.
	Log io.Writer
}

// cell is one controller on one scenario, over the seeds.
type cell struct {
	CC string
	// Throughput is the flows under test's goodput (bit/s), OWD95 their
	// mean p95 one-way delay (ms), Util the forward link's utilisation,
	// one per seed, in seed order.
	Throughput, OWD95, Util []float64
	Seeds                   []int64
}

func (c *cell) mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(max(len(xs), 1))
}

// worst returns the worst value of xs (the lowest when low, else the
// highest) and its seed.
func (c *cell) worst(xs []float64, low bool) (float64, int64) {
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
	cells []*cell
}

// group is a trace file's scenarios (FIFO, CoDel).
type group struct {
	trace, reverse string // the forward trace's file name, the reverse's
	scenarios      []*traceScenario
}

// Summary is a whole summary: every run, grouped by trace.
type Summary struct {
	cfg    Config
	groups []*group
	runs   []*report.Run // every run, in order
	wall   time.Duration
}

// Runs is every run of the summary: by trace, queue, controller and seed.
func (res *Summary) Runs() []*report.Run { return res.runs }

// Wall is how long the runs took.
func (res *Summary) Wall() time.Duration { return res.wall }

// load reads dir/trace-*.json, grouped by forward trace, the groups in
// file-name order, FIFO before CoDel. A missing or unfit scenario is a
// usage error.
func load(dir string, d time.Duration) ([]*group, error) {
	files, err := filepath.Glob(filepath.Join(dir, "trace-*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, usage.Errorf("no trace-*.json in %s (--scenarios)", dir)
	}
	byTrace := map[string]*group{}
	var order []string
	for _, f := range files {
		s, err := loadOne(f, d)
		if err != nil {
			return nil, err
		}
		key := filepath.Base(s.Forward.Trace)
		g := byTrace[key]
		if g == nil {
			g = &group{trace: key, reverse: filepath.Base(s.Reverse.Trace)}
			byTrace[key] = g
			order = append(order, key)
		}
		g.scenarios = append(g.scenarios, &traceScenario{s: s, queue: s.Forward.Queue.Discipline})
	}
	slices.Sort(order)
	var groups []*group
	for _, k := range order {
		g := byTrace[k]
		slices.SortStableFunc(g.scenarios, func(a, b *traceScenario) int { return queueRank(a.queue) - queueRank(b.queue) })
		groups = append(groups, g)
	}
	return groups, nil
}

// loadOne reads one trace scenario, cut to d if d > 0.
func loadOne(f string, d time.Duration) (*scenario.Scenario, error) {
	s, err := runner.Load(f, nil, 0)
	if err != nil {
		return nil, err
	}
	if s.Forward.Trace == "" {
		return nil, usage.Errorf("%s: the forward path is not a trace", f)
	}
	for _, fl := range s.Flows {
		if fl.EmuTUNOnly() {
			return nil, usage.Errorf("%s: flow %q is %s, which runs only in the TUN router; name TUN scenarios tun-*.json", f, fl.Name, fl.Kind)
		}
	}
	if err := runner.Shorten(s, f, d); err != nil {
		return nil, err
	}
	return s, nil
}

// queueRank orders disciplines in tables: drop-tail first.
func queueRank(q string) int {
	return slices.Index([]string{"fifo", "codel", "fq_codel", "wmm", "cake"}, q)
}

// Run runs every trace scenario of cfg.Dir under every controller and
// seed. The scenarios' errors are usage errors (bench/internal/usage).
func Run(cfg Config) (*Summary, error) {
	groups, err := load(cfg.Dir, cfg.Duration)
	if err != nil {
		return nil, err
	}
	res := &Summary{cfg: cfg, groups: groups}
	start := time.Now()
	for _, g := range groups {
		for _, ts := range g.scenarios {
			t0 := time.Now()
			for _, name := range cfg.CCs {
				c, err := res.runCell(ts.s, name)
				if err != nil {
					return nil, err
				}
				ts.cells = append(ts.cells, c)
			}
			if cfg.Log != nil {
				fmt.Fprintf(cfg.Log, "freshbench traces: %s: %d runs in %.1f s\n", ts.s.Name, len(cfg.CCs)*len(cfg.Seeds), time.Since(t0).Seconds())
			}
		}
	}
	res.wall = time.Since(start)
	return res, nil
}

// runCell runs s under controller name on every seed.
func (res *Summary) runCell(s *scenario.Scenario, name string) (*cell, error) {
	c := &cell{CC: name}
	test, _ := summary.FlowsUnderTest(s)
	for _, seed := range res.cfg.Seeds {
		v := *s
		v.Seed = seed
		r, err := res.cfg.Sim(&v, sim.Options{CC: name})
		if err != nil {
			return nil, fmt.Errorf("%s under %s, seed %d: %w", v.Name, name, seed, err)
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
		c.Throughput = append(c.Throughput, gp)
		c.OWD95 = append(c.OWD95, owd/float64(max(n, 1)))
		c.Util = append(c.Util, r.Utilization.Forward)
		c.Seeds = append(c.Seeds, seed)
		res.runs = append(res.runs, r)
	}
	return c, nil
}
