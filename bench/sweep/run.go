package sweep

import (
	"cmp"
	"math"
	"slices"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/bench/summary"
)

// RunFunc runs one run of the sweep: s (a copy of the scenario with its
// update flows edited, on one seed), labelled label (the run's cc: "acp",
// "lazy", Label(rate)). progress, called with the run's own progress in
// [0, 1], moves the sweep's.
type RunFunc func(s *scenario.Scenario, label string, progress func(float64)) (*report.Run, error)

// Run sweeps s: its update flows under acp and lazy, then the fixed-rate
// grid, on every seed (bulk flows keep the scenario's own controllers).
// progress, if not nil, is told the sweep's progress in [0, 1]: it counts
// the coarse grid and the most the refinement rounds can add, so it may
// jump to the end. Run returns the summary and every run: per seed acp and
// lazy, then the fixed rates by rate, each over the seeds in order. An
// error of run is returned as it is.
func Run(s *scenario.Scenario, seeds []int64, run RunFunc, progress func(float64)) (*Summary, []*report.Run, error) {
	sum := &Summary{Scenario: s.Name, Seeds: seeds, CapacityHz: report.Round3(CapacityHz(s)),
		Elastic: hasElastic(s), CostBound: CostBound}
	coarse := coarseGrid(sum.CapacityHz)
	sw := &sweeper{s: s, seeds: seeds, run: run, progress: progress, fixed: map[float64][]*report.Run{},
		total: float64(len(seeds) * (2 + len(coarse) + 4*Rounds))}
	runs, err := sw.policies(sum)
	if err != nil {
		return nil, nil, err
	}
	if err := sw.try(coarse); err != nil {
		return nil, nil, err
	}
	for range Rounds {
		ps := sw.points(sum)
		add := refineAround(ps, argminAge(ps))
		if sum.Elastic {
			add = append(add, refineAround(ps, argminConstrained(ps, CostBound))...)
		}
		if len(add) == 0 {
			break
		}
		if err := sw.try(add); err != nil {
			return nil, nil, err
		}
	}
	sum.Points = sw.points(sum)
	sum.finish()
	for _, p := range sum.Points {
		runs = append(runs, sw.fixed[p.RateHz]...)
	}
	return sum, runs, nil
}

// sweeper runs the sweep of one scenario.
type sweeper struct {
	s           *scenario.Scenario
	seeds       []int64
	run         RunFunc
	progress    func(float64)
	done, total float64                   // runs finished, and the most there can be
	fixed       map[float64][]*report.Run // by rate, one run per seed
}

// one runs s with edit applied to its update flows, on seed.
func (sw *sweeper) one(edit func(*scenario.Flow), seed int64, label string) (*report.Run, error) {
	v, err := WithUpdates(sw.s, edit)
	if err != nil {
		return nil, &EditError{Scenario: sw.s.Name, Label: label, Err: err}
	}
	v.Seed = seed
	r, err := sw.run(v, label, func(f float64) {
		if sw.progress != nil {
			sw.progress((sw.done + f) / sw.total)
		}
	})
	sw.done++
	return r, err
}

// policies runs acp and lazy on every seed into sum.PerSeed, and returns
// their runs.
func (sw *sweeper) policies(sum *Summary) ([]*report.Run, error) {
	var runs []*report.Run
	sum.PerSeed = make([]Seed, len(sw.seeds))
	for k, seed := range sw.seeds {
		ps := &sum.PerSeed[k]
		ps.Seed = seed
		for _, pol := range []struct {
			name string
			res  *Result
		}{{"acp", &ps.ACP}, {"lazy", &ps.Lazy}} {
			r, err := sw.one(AsPolicy(pol.name), seed, pol.name)
			if err != nil {
				return nil, err
			}
			runs = append(runs, r)
			pol.res.AgeMs, pol.res.RateHz = UpdateAge(r)
			pol.res.ElasticBps = elasticGoodput(r)
		}
		ps.ACP.Cost = cost(ps.ACP.ElasticBps, ps.Lazy.ElasticBps)
	}
	return runs, nil
}

// try runs every rate not run yet on every seed.
func (sw *sweeper) try(rates []float64) error {
	for _, hz := range rates {
		if sw.fixed[hz] != nil {
			continue
		}
		for _, seed := range sw.seeds {
			r, err := sw.one(AsFixed(hz), seed, Label(hz))
			if err != nil {
				return err
			}
			sw.fixed[hz] = append(sw.fixed[hz], r)
		}
	}
	return nil
}

// points summarises every rate run so far, by rate.
func (sw *sweeper) points(sum *Summary) []Point {
	var ps []Point
	for hz, rs := range sw.fixed {
		ps = append(ps, sum.point(hz, rs))
	}
	slices.SortFunc(ps, func(a, b Point) int { return cmp.Compare(a.RateHz, b.RateHz) })
	return ps
}

// EditError is a sweep's variant of a scenario that is not valid: its
// update flows turned into fixed-rate or policy flows.
type EditError struct {
	Scenario, Label string
	Err             error
}

func (e *EditError) Error() string {
	return "--acp-sweep " + e.Scenario + ", " + e.Label + ": " + e.Err.Error()
}

func (e *EditError) Unwrap() error { return e.Err }

// point summarises one fixed rate's runs (one per seed, in Seeds order).
func (sum *Summary) point(hz float64, rs []*report.Run) Point {
	p := Point{RateHz: hz, AgesMs: make([]float64, len(rs))}
	var ages, costs []float64
	for k, r := range rs {
		p.AgesMs[k], _ = UpdateAge(r)
		if Measured(p.AgesMs[k]) {
			ages = append(ages, p.AgesMs[k])
		}
		if sum.Elastic {
			c := cost(elasticGoodput(r), sum.PerSeed[k].Lazy.ElasticBps)
			p.Costs = append(p.Costs, c)
			costs = append(costs, c)
		}
	}
	a := summary.Of(ages)
	p.MeanAgeMs, p.SDAgeMs = report.Round3(a.Mean), report.Round3(a.SD)
	p.MeanCost = math.Round(summary.Of(costs).Mean*1e4) / 1e4
	return p
}

// finish reads both oracles off the points, over the seeds and per seed,
// and the distributions and ratios.
func (sum *Summary) finish() {
	pts := sum.Points
	rate := func(i int) float64 { return pts[i].RateHz }
	feasible := func(i int) bool { return !sum.Elastic || pts[i].MeanCost <= sum.CostBound }
	if best := argminAge(pts); best >= 0 {
		sum.OracleRateHz, sum.OracleAgeMs, sum.NoiseMs = pts[best].RateHz, pts[best].MeanAgeMs, pts[best].SDAgeMs
		sum.OracleRange = oracleRange(pts, best, func(int) bool { return true })
	}
	if best := argmin(len(pts), rate, func(i int) float64 { return pts[i].MeanAgeMs }, feasible); best >= 0 {
		sum.ConstrainedRateHz, sum.ConstrainedAgeMs = pts[best].RateHz, pts[best].MeanAgeMs
		sum.ConstrainedRange = oracleRange(pts, best, feasible)
	}
	for k := range sum.PerSeed {
		sum.finishSeed(k)
	}
	sum.ACP = sum.dist(func(p *Seed) Result { return p.ACP })
	sum.Lazy = sum.dist(func(p *Seed) Result { return p.Lazy })
	sum.Oracle = sum.dist(func(p *Seed) Result { return p.Oracle })
	sum.Constrained = sum.dist(func(p *Seed) Result { return p.Constrained })
}

// finishSeed reads both oracles of seed k off the points, and acp's
// ratios to them and to lazy.
func (sum *Summary) finishSeed(k int) {
	pts := sum.Points
	ps := &sum.PerSeed[k]
	rate := func(i int) float64 { return pts[i].RateHz }
	age := func(i int) float64 { return pts[i].AgesMs[k] }
	pick := func(i int) Result {
		if i < 0 {
			return Result{}
		}
		r := Result{AgeMs: pts[i].AgesMs[k], RateHz: pts[i].RateHz}
		if sum.Elastic {
			r.Cost = pts[i].Costs[k]
			r.ElasticBps = ps.Lazy.ElasticBps * (1 - r.Cost)
		}
		return r
	}
	ps.Oracle = pick(argmin(len(pts), rate, age, func(int) bool { return true }))
	ps.Constrained = pick(argmin(len(pts), rate, age, func(i int) bool {
		return !sum.Elastic || pts[i].Costs[k] <= sum.CostBound
	}))
	ps.ACPOverOracle = ratio(ps.ACP.AgeMs, ps.Oracle.AgeMs)
	ps.ACPOverConstrained = ratio(ps.ACP.AgeMs, ps.Constrained.AgeMs)
	ps.ACPOverLazy = ratio(ps.ACP.AgeMs, ps.Lazy.AgeMs)
	sum.WorstOverOracle = max(sum.WorstOverOracle, ps.ACPOverOracle)
	sum.WorstOverConstrained = max(sum.WorstOverConstrained, ps.ACPOverConstrained)
	sum.WorstOverLazy = max(sum.WorstOverLazy, ps.ACPOverLazy)
}

// dist is the distribution over the seeds of the result get picks.
func (sum *Summary) dist(get func(*Seed) Result) AgeDist {
	var ages, costs []float64
	for k := range sum.PerSeed {
		r := get(&sum.PerSeed[k])
		if Measured(r.AgeMs) {
			ages = append(ages, r.AgeMs)
		}
		costs = append(costs, r.Cost)
	}
	a, c := summary.Of(ages), summary.Of(costs)
	d := AgeDist{MeanMs: report.Round3(a.Mean), WorstMs: a.Max, BestMs: a.Min,
		MeanCost: math.Round(c.Mean*1e4) / 1e4, WorstCost: c.Max}
	if a.Min > 0 {
		d.MaxOverMin = report.Round3(a.Max / a.Min)
	}
	return d
}
