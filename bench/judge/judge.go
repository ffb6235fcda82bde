package judge

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/bench/sim"
	"github.com/fresh-udp/fresh/cc"
)

// DefaultCCs are the controllers judged by default: owd and the
// delay-based and loss-based peers it must beat (copa once it is
// registered).
var DefaultCCs = []string{"owd", "rttdelay", "copa", "bbr", "cubic"}

// RunFunc runs one scenario: sim.Run, or a fake in tests.
type RunFunc func(*scenario.Scenario, sim.Options) (*report.Run, error)

// Config is one judging.
type Config struct {
	Families []string // default Families
	Seeds    []int64  // one draw per family and seed
	CCs      []string // controllers, checked by CheckCCs
	Scale    float64  // Options.Scale
	// Parallel is how many runs go at once (default GOMAXPROCS).
	Parallel int
	Run      RunFunc // default sim.Run
	// OracleRates, if above 0, also runs every acp draw with its sources
	// at that many fixed update rates (OracleGrid) under every
	// controller, to find the constrained oracle (ACPOutcome.OracleAgeMs)
	// the age_vs_oracle criterion needs. 0: no oracle, the criterion does
	// not apply.
	OracleRates int
	// Progress, if set, is called after every run with the runs done and
	// their total, from one goroutine at a time.
	Progress func(done, total int)
}

// ErrConfig wraps a bad Config (an operator's mistake: the message names
// the flag's value).
var ErrConfig = errors.New("judge")

// CheckCCs checks every name against the cc registry.
func CheckCCs(names []string) error {
	if len(names) == 0 {
		return fmt.Errorf("%w: no controller to judge", ErrConfig)
	}
	known := cc.Names()
	for i, n := range names {
		if !slices.Contains(known, n) {
			return fmt.Errorf("%w: unknown controller %q (registered: %s)", ErrConfig, n, strings.Join(known, ","))
		}
		if slices.Contains(names[:i], n) {
			return fmt.Errorf("%w: controller %q given twice", ErrConfig, n)
		}
	}
	return nil
}

// CheckFamilies checks every name against Families.
func CheckFamilies(names []string) error {
	if len(names) == 0 {
		return fmt.Errorf("%w: no family to draw from", ErrConfig)
	}
	for i, n := range names {
		if !slices.Contains(Families, n) {
			return fmt.Errorf("%w: unknown family %q (known: %s)", ErrConfig, n, strings.Join(Families, ","))
		}
		if slices.Contains(names[:i], n) {
			return fmt.Errorf("%w: family %q given twice", ErrConfig, n)
		}
	}
	return nil
}

// DrawResult is one draw judged under every controller.
type DrawResult struct {
	Draw     *Draw     `json:"draw"`
	Outcomes []Outcome `json:"outcomes"` // in Config.CCs order
}

// Report is a judging's result.
type Report struct {
	CCs      []string       `json:"ccs"`
	Seeds    []int64        `json:"seeds"`
	Scale    float64        `json:"scale"`
	Families []FamilyReport `json:"families"`
}

// FamilyReport is one family's verdicts and leaderboard.
type FamilyReport struct {
	Family      string           `json:"family"`
	Draws       int              `json:"draws"`
	Criteria    []CriterionRow   `json:"criteria"`
	Leaderboard []LeaderboardRow `json:"leaderboard"`
	Results     []DrawResult     `json:"results"`
	// Cost is the family's CPU and wall time (not in the JSON: it varies
	// from run to run).
	Cost Cost `json:"-"`
}

// Cost is what judging one family took.
type Cost struct {
	CPU, Wall time.Duration
	Runs      int
}

// CriterionRow is one criterion's pass rate per controller.
type CriterionRow struct {
	Criterion
	PerCC []PassRate `json:"per_cc"`
}

// PassRate is one controller's record on one criterion.
type PassRate struct {
	CC     string  `json:"cc"`
	Pass   int     `json:"pass"`
	N      int     `json:"n"` // draws it applied to
	Median float64 `json:"median"`
	Worst  float64 `json:"worst"`
}

// Rate is Pass ÷ N (0 without a draw).
func (p PassRate) Rate() float64 {
	if p.N == 0 {
		return 0
	}
	return float64(p.Pass) / float64(p.N)
}

// Met reports whether the controller met the criterion's target.
func (r CriterionRow) Met(p PassRate) bool { return p.N > 0 && p.Rate() >= r.Need }

// LeaderboardRow is one controller's median point in one group of a
// family's draws (every draw, or those replaying one trace).
type LeaderboardRow struct {
	Group      string  `json:"group"` // "all" or a trace file name
	CC         string  `json:"cc"`
	N          int     `json:"n"`
	GoodputBps float64 `json:"goodput_bps"` // median
	OWDP95Ms   float64 `json:"owd_p95_ms"`  // median
	Power      float64 `json:"power"`       // median, Mbit/s per s
}

// job is one run: draw i under controller cc, its ACP sources as drawn
// (variant 0), lazy (variantLazy) or at the fixed rate of oracle grid
// point k (variantFixed + k).
type job struct {
	draw    int
	cc      int
	variant int
}

const (
	variantLazy  = 1
	variantFixed = 2
)

// variants is how many runs each draw of fam takes per controller.
func variants(cfg Config, fam string) int {
	if fam != ACP {
		return 1
	}
	return 2 + max(cfg.OracleRates, 0)
}

// Judge draws cfg.Seeds from every family, runs each draw under every
// controller and judges them. Families run one after another (so each
// family's cost is its own); the runs of a family run cfg.Parallel at
// once.
func Judge(cfg Config) (*Report, error) {
	if cfg.Families == nil {
		cfg.Families = Families
	}
	if err := CheckFamilies(cfg.Families); err != nil {
		return nil, err
	}
	if err := CheckCCs(cfg.CCs); err != nil {
		return nil, err
	}
	if len(cfg.Seeds) == 0 {
		return nil, fmt.Errorf("%w: no seed", ErrConfig)
	}
	if cfg.Run == nil {
		cfg.Run = sim.Run
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = runtime.GOMAXPROCS(0)
	}
	if cfg.Scale <= 0 {
		cfg.Scale = 1
	}
	rep := &Report{CCs: cfg.CCs, Seeds: cfg.Seeds, Scale: cfg.Scale}
	total := 0
	for _, f := range cfg.Families {
		total += len(cfg.Seeds) * len(cfg.CCs) * variants(cfg, f)
	}
	done := 0
	for _, fam := range cfg.Families {
		fr, err := judgeFamily(cfg, fam, func() {
			done++
			if cfg.Progress != nil {
				cfg.Progress(done, total)
			}
		})
		if err != nil {
			return nil, err
		}
		rep.Families = append(rep.Families, *fr)
	}
	return rep, nil
}

func judgeFamily(cfg Config, fam string, tick func()) (*FamilyReport, error) {
	cpu0, wall0 := cpuTime(), time.Now()
	draws := make([]*Draw, len(cfg.Seeds))
	for i, seed := range cfg.Seeds {
		d, err := Generate(fam, seed, Options{Scale: cfg.Scale})
		if err != nil {
			return nil, err
		}
		draws[i] = d
	}
	var jobs []job
	for i := range draws {
		for c := range cfg.CCs {
			for v := range variants(cfg, fam) {
				jobs = append(jobs, job{draw: i, cc: c, variant: v})
			}
		}
	}
	runs := make(map[job]*report.Run, len(jobs))
	var mu sync.Mutex
	var firstErr error
	next := make(chan job)
	var wg sync.WaitGroup
	for range min(cfg.Parallel, len(jobs)) {
		wg.Go(func() {
			for j := range next {
				r, err := runJob(cfg, draws[j.draw], cfg.CCs[j.cc], j.variant)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if r != nil {
					slimRun(r)
					runs[j] = r
				}
				tick()
				mu.Unlock()
			}
		})
	}
	for _, j := range jobs {
		mu.Lock()
		stop := firstErr != nil
		mu.Unlock()
		if stop {
			break
		}
		next <- j
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	fr := &FamilyReport{Family: fam, Draws: len(draws)}
	for i, d := range draws {
		dr := DrawResult{Draw: d}
		for c := range cfg.CCs {
			o := Measure(d, runs[job{i, c, 0}], runs[job{i, c, variantLazy}])
			if o.ACP != nil && cfg.OracleRates > 0 {
				grid := OracleGrid(d.Scenario, cfg.OracleRates)
				fixed := make([]*report.Run, len(grid))
				for k := range grid {
					fixed[k] = runs[job{i, c, variantFixed + k}]
				}
				o.ACP.OracleAgeMs, o.ACP.OracleRateHz = ConstrainedOracle(o.ACP.LazyElasticBps, grid, fixed)
			}
			dr.Outcomes = append(dr.Outcomes, o)
		}
		fr.Results = append(fr.Results, dr)
	}
	fr.Criteria = tally(fam, cfg.CCs, fr.Results)
	fr.Leaderboard = leaderboard(cfg.CCs, fr.Results)
	fr.Cost = Cost{CPU: cpuTime() - cpu0, Wall: time.Since(wall0), Runs: len(jobs)}
	return fr, nil
}

// runJob runs draw d under controller name, its ACP sources replaced by
// lazy ones (variantLazy: the reference of the acp criteria) or by fixed
// ones at an oracle grid point's rate.
func runJob(cfg Config, d *Draw, name string, variant int) (r *report.Run, err error) {
	s := d.Scenario
	if variant != 0 {
		var rate float64
		if variant >= variantFixed {
			rate = OracleGrid(s, cfg.OracleRates)[variant-variantFixed]
		}
		c := *s
		c.Flows = slices.Clone(s.Flows)
		for i := range c.Flows {
			f := &c.Flows[i]
			switch {
			case f.Kind != scenario.KindACP:
			case variant == variantLazy:
				f.Kind, f.CC = scenario.KindLazy, "lazy"
			default:
				f.Kind, f.CC, f.UpdateRate = scenario.KindFixed, "", rate
			}
		}
		s = &c
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("judge: %s seed %d, cc %s: the simulator panicked: %v", d.Family, d.Seed, name, p)
		}
	}()
	r, err = cfg.Run(s, sim.Options{CC: name, Trace: needsSeries(d.Family), SampleInterval: 100 * time.Millisecond})
	if err != nil {
		return nil, fmt.Errorf("judge: %s seed %d, cc %s: %w", d.Family, d.Seed, name, err)
	}
	r.CC = name
	return r, nil
}

// slimRun drops what the criteria never read once a run is done: the
// per-packet delays and the capacity series (the goodput series stay,
// windowShare reads them).
func slimRun(r *report.Run) {
	r.CapacityBps = nil
	for i := range r.Flows {
		r.Flows[i].OWDSamples = nil
		if se := r.Flows[i].Series; se != nil {
			r.Flows[i].Series = &report.Series{T: se.T, GoodputBps: se.GoodputBps}
		}
	}
}

// tally computes every criterion's pass rate per controller.
func tally(fam string, ccs []string, results []DrawResult) []CriterionRow {
	var rows []CriterionRow
	for _, c := range CriteriaOf(fam) {
		row := CriterionRow{Criterion: c}
		for ci, name := range ccs {
			p := PassRate{CC: name}
			var vals []float64
			for _, dr := range results {
				v, pass, ok := c.Eval(dr.Outcomes[ci], dr.Outcomes)
				if !ok {
					continue
				}
				p.N++
				if pass {
					p.Pass++
				}
				vals = append(vals, v)
			}
			if len(vals) > 0 {
				p.Median = round4(median(vals))
				p.Worst = round4(slices.Max(vals))
				if c.Higher {
					p.Worst = round4(slices.Min(vals))
				}
			}
			row.PerCC = append(row.PerCC, p)
		}
		rows = append(rows, row)
	}
	return rows
}

// leaderboard is the Pantheon-style summary: each controller's median
// goodput, p95 one-way delay and power over every draw, and over the
// draws of each trace.
func leaderboard(ccs []string, results []DrawResult) []LeaderboardRow {
	groups := []string{"all"}
	for _, dr := range results {
		if t := dr.Draw.Trace; t != "" && !slices.Contains(groups, t) {
			groups = append(groups, t)
		}
	}
	sort.Strings(groups[1:])
	var rows []LeaderboardRow
	for _, g := range groups {
		for ci, name := range ccs {
			var gp, owd, pw []float64
			for _, dr := range results {
				if g != "all" && dr.Draw.Trace != g {
					continue
				}
				o := dr.Outcomes[ci]
				gp, owd, pw = append(gp, o.GoodputBps), append(owd, o.OWDP95Ms), append(pw, o.Power)
			}
			rows = append(rows, LeaderboardRow{Group: g, CC: name, N: len(gp),
				GoodputBps: round4(median(gp)), OWDP95Ms: round4(median(owd)), Power: round4(median(pw))})
		}
	}
	return rows
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// round4 keeps four decimals: the JSON stays readable and identical
// across runs.
func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
