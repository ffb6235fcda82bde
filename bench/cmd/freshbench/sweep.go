package main

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
)

// The --acp-sweep oracles. A fixed update rate is run on every seed of the
// sweep (the scenario's own, or each of --seeds), on a geometric grid from
// sweepMinHz to the path's capacity in updates/s, refined where it matters.
// Two oracles are read off the grid, per seed (paired: the same seed as
// the acp and lazy runs they judge):
//
//   - the unconstrained oracle, the grid rate with the lowest mean age on
//     that seed;
//   - the constrained oracle, the grid rate with the lowest mean age among
//     those that cost the elastic flows (the bulk flows) at most costBound
//     of the goodput they get beside lazy on that seed. Without bulk flows
//     it is the unconstrained one.
//
// How fine a grid can be is set by the noise: a rate's mean age differs
// from seed to seed, so two rates closer in age than that SD cannot be told
// apart, and the "oracle rate" is then a range. The grid is refined (a
// geometric midpoint inserted) only between neighbours of an oracle whose
// mean ages over the seeds differ by more than the larger of their SDs;
// the flat region, every rate within that noise of the best mean, is
// reported as a range. Rates are rounded to sweepDigits significant digits
// so that a run's label ("fixed@12.5Hz") is its exact rate.
const (
	sweepMinHz   = 0.5 // Hz, lowest rate of the coarse grid
	sweepCoarse  = 24  // points of the coarse grid
	sweepRounds  = 4   // refinement rounds at most (each inserts ≤ 4 rates)
	sweepDigits  = 4   // significant digits of every swept rate
	sweepLabelAt = "fixed@"
	// costBound is the constrained oracle's budget: the elastic flows may
	// lose at most 10 % of the goodput they get beside lazy (one update
	// per RTT, the least an update flow that keeps the monitor informed
	// sends) on the same seed.
	costBound = 0.10
)

// sweepPoint is one fixed rate of the sweep over every seed.
type sweepPoint struct {
	RateHz float64 `json:"rate_hz"`
	// MeanAgeMs and SDAgeMs are the mean and sample SD over the seeds of
	// the run's mean age (seeds where no update arrived left out).
	MeanAgeMs float64 `json:"mean_age_ms"`
	SDAgeMs   float64 `json:"sd_age_ms"`
	// AgesMs is the run's mean age per seed, in the order of Seeds (0: no
	// update arrived).
	AgesMs []float64 `json:"ages_ms"`
	// Costs is per seed the elastic flows' goodput lost against lazy's run
	// of that seed, 1 − goodput / goodput beside lazy (negative: they got
	// more); MeanCost its mean. Absent without elastic flows.
	Costs    []float64 `json:"costs,omitempty"`
	MeanCost float64   `json:"mean_cost"`
}

// sweepResult is one policy's (or oracle's) outcome on one seed.
type sweepResult struct {
	AgeMs  float64 `json:"age_ms"`  // mean age, ms; 0 = not measured
	RateHz float64 `json:"rate_hz"` // achieved update rate (oracles: the fixed rate)
	// ElasticBps is the elastic flows' summed goodput in that run, Cost
	// its loss against lazy's run (0 without elastic flows).
	ElasticBps float64 `json:"elastic_bps"`
	Cost       float64 `json:"cost"`
}

// sweepSeed is every policy and both oracles on one seed.
type sweepSeed struct {
	Seed        int64       `json:"seed"`
	ACP         sweepResult `json:"acp"`
	Lazy        sweepResult `json:"lazy"`
	Oracle      sweepResult `json:"oracle"`
	Constrained sweepResult `json:"constrained"`
	// Ratios of mean ages on this seed (1 = as good as the oracle; below
	// 1 = better than lazy); 0 if either age is missing.
	ACPOverOracle      float64 `json:"acp_over_oracle"`
	ACPOverConstrained float64 `json:"acp_over_constrained"`
	ACPOverLazy        float64 `json:"acp_over_lazy"`
}

// ageDist summarises a policy's mean age over the seeds.
type ageDist struct {
	MeanMs  float64 `json:"mean_ms"`
	WorstMs float64 `json:"worst_ms"` // the highest per-seed mean age
	BestMs  float64 `json:"best_ms"`
	// MaxOverMin is WorstMs / BestMs: how much the outcome depends on the
	// draw (1 = not at all).
	MaxOverMin float64 `json:"max_over_min"`
	// MeanCost and WorstCost are the elastic flows' loss (see
	// sweepResult.Cost) over the seeds: mean and largest.
	MeanCost  float64 `json:"mean_cost"`
	WorstCost float64 `json:"worst_cost"`
}

// rateRange is the flat region of an oracle: the rates whose mean age over
// the seeds is within the noise of the best (see oracleRange).
type rateRange struct {
	LoHz float64 `json:"lo_hz"`
	HiHz float64 `json:"hi_hz"`
}

// sweepSummary is the --acp-sweep result of one scenario, written by
// --sweep-json. Ages are the mean over the scenario's update flows of each
// flow's mean age; 0 means not measured (no update delivered).
type sweepSummary struct {
	Scenario string  `json:"scenario"`
	Seeds    []int64 `json:"seeds"`
	// CapacityHz is the update flows' path rate / (update size × 8 bit).
	CapacityHz float64 `json:"capacity_hz"`
	// Elastic says whether the scenario has bulk flows (else the
	// constrained oracle is the unconstrained one and costs are 0).
	Elastic   bool    `json:"elastic"`
	CostBound float64 `json:"cost_bound"`
	// Points are every fixed rate run, by rate.
	Points []sweepPoint `json:"points"`
	// NoiseMs is the seed-to-seed SD of the mean age at OracleRateHz (the
	// resolution of the comparison; 0 with one seed).
	NoiseMs float64 `json:"noise_ms"`
	// OracleRateHz and OracleAgeMs: the rate with the lowest mean age over
	// the seeds, and that mean; OracleRange the rates within the noise of
	// it. ConstrainedRateHz, ConstrainedAgeMs and ConstrainedRange: the same
	// among the rates whose mean cost is within CostBound.
	OracleRateHz      float64   `json:"oracle_rate_hz"`
	OracleAgeMs       float64   `json:"oracle_age_ms"`
	OracleRange       rateRange `json:"oracle_range"`
	ConstrainedRateHz float64   `json:"constrained_rate_hz"`
	ConstrainedAgeMs  float64   `json:"constrained_age_ms"`
	ConstrainedRange  rateRange `json:"constrained_range"`
	// PerSeed holds every policy and both oracles seed by seed, in the
	// order of Seeds.
	PerSeed []sweepSeed `json:"per_seed"`
	// The distributions over the seeds of acp, lazy and the per-seed
	// oracles' mean ages.
	ACP         ageDist `json:"acp"`
	Lazy        ageDist `json:"lazy"`
	Oracle      ageDist `json:"oracle"`
	Constrained ageDist `json:"constrained"`
	// WorstOverConstrained is the largest per-seed acp / constrained
	// oracle age ratio, WorstOverOracle and WorstOverLazy the same against
	// the unconstrained oracle and lazy.
	WorstOverConstrained float64 `json:"worst_over_constrained"`
	WorstOverOracle      float64 `json:"worst_over_oracle"`
	WorstOverLazy        float64 `json:"worst_over_lazy"`
}

// hasUpdates reports whether s has an update flow (acp, lazy, fixed).
func hasUpdates(s *scenario.Scenario) bool {
	return slices.ContainsFunc(s.Flows, func(f scenario.Flow) bool { return f.IsUpdates() })
}

// hasElastic reports whether s has a bulk flow, whose goodput the
// constrained oracle protects.
func hasElastic(s *scenario.Scenario) bool {
	return slices.ContainsFunc(s.Flows, func(f scenario.Flow) bool { return f.Kind == scenario.KindBulk })
}

// capacityHz is how many updates per second the first update flow's path
// carries: its rate over the update size in bits.
func capacityHz(s *scenario.Scenario) float64 {
	for _, f := range s.Flows {
		if !f.IsUpdates() {
			continue
		}
		p := s.Forward
		if f.Reverse {
			p = s.Reverse
		}
		return float64(p.Rate) / float64(f.Size*8)
	}
	return 0
}

// roundSig rounds x to n significant digits.
func roundSig(x float64, n int) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	p := float64(n) - math.Ceil(math.Log10(math.Abs(x)))
	if p >= 0 {
		pow := math.Pow(10, p)
		return math.Round(x*pow) / pow
	}
	pow := math.Pow(10, -p)
	return math.Round(x/pow) * pow
}

// geomGrid is n rates spaced geometrically from lo to hi inclusive, rounded
// to sweepDigits significant digits, ascending, without duplicates.
func geomGrid(lo, hi float64, n int) []float64 {
	if n <= 1 || hi <= lo {
		return []float64{roundSig(lo, sweepDigits)}
	}
	ratio := math.Pow(hi/lo, 1/float64(n-1))
	out := make([]float64, 0, n)
	for i := range n {
		r := roundSig(lo*math.Pow(ratio, float64(i)), sweepDigits)
		if len(out) == 0 || r > out[len(out)-1] {
			out = append(out, r)
		}
	}
	return out
}

// coarseGrid is the first grid of a path with capacity updates/s. A path
// slower than sweepMinHz gets a grid over two decades below its capacity.
func coarseGrid(capacity float64) []float64 {
	lo := sweepMinHz
	if capacity <= lo {
		lo = capacity / 100
	}
	return geomGrid(lo, capacity, sweepCoarse)
}

// measured reports whether a mean age counts (0 and NaN: nothing arrived).
func measured(ageMs float64) bool { return ageMs > 0 && !math.IsNaN(ageMs) }

// argmin is the index of the lowest age among the points for which ok
// holds; ages not measured are skipped and a tie goes to the lowest rate
// (the least load for the same age). -1 if none counts. age and ok see the
// point's index.
func argmin(n int, rate, age func(int) float64, ok func(int) bool) int {
	best := -1
	for i := range n {
		a := age(i)
		if !measured(a) || !ok(i) {
			continue
		}
		if best < 0 || a < age(best) || (a == age(best) && rate(i) < rate(best)) {
			best = i
		}
	}
	return best
}

// argminAge is the point with the lowest mean age over the seeds (-1 if
// none was measured).
func argminAge(points []sweepPoint) int {
	return argmin(len(points), func(i int) float64 { return points[i].RateHz },
		func(i int) float64 { return points[i].MeanAgeMs }, func(int) bool { return true })
}

// argminConstrained is argminAge among the points whose mean cost is within
// bound.
func argminConstrained(points []sweepPoint, bound float64) int {
	return argmin(len(points), func(i int) float64 { return points[i].RateHz },
		func(i int) float64 { return points[i].MeanAgeMs }, func(i int) bool { return points[i].MeanCost <= bound })
}

// refineAround is the geometric midpoints to insert next to points[best]:
// between it and each neighbour whose mean age differs from its own by
// more than the noise (the larger of the two SDs), i.e. where the grid is
// still coarser than what the seeds can resolve. Midpoints equal to an end
// after rounding are left out.
func refineAround(points []sweepPoint, best int) []float64 {
	var out []float64
	if best < 0 {
		return nil
	}
	for _, j := range []int{best - 1, best + 1} {
		if j < 0 || j >= len(points) {
			continue
		}
		a, b := points[best], points[j]
		if measured(a.MeanAgeMs) && measured(b.MeanAgeMs) &&
			math.Abs(a.MeanAgeMs-b.MeanAgeMs) <= max(a.SDAgeMs, b.SDAgeMs) {
			continue // already as fine as the noise allows
		}
		mid := roundSig(math.Sqrt(a.RateHz*b.RateHz), sweepDigits)
		if mid != a.RateHz && mid != b.RateHz {
			out = append(out, mid)
		}
	}
	return out
}

// oracleRange is the flat region around points[best] among the points for
// which ok holds: the contiguous run of such points whose mean age is
// within the noise of the best (the larger of the two SDs).
func oracleRange(points []sweepPoint, best int, ok func(int) bool) rateRange {
	if best < 0 {
		return rateRange{}
	}
	flat := func(i int) bool {
		p, b := points[i], points[best]
		return ok(i) && measured(p.MeanAgeMs) && p.MeanAgeMs-b.MeanAgeMs <= max(p.SDAgeMs, b.SDAgeMs)
	}
	lo, hi := best, best
	for lo > 0 && flat(lo-1) {
		lo--
	}
	for hi < len(points)-1 && flat(hi+1) {
		hi++
	}
	return rateRange{LoHz: points[lo].RateHz, HiHz: points[hi].RateHz}
}

// withUpdates returns a copy of s in which edit has changed every update
// flow, validated again (which fills the defaults of the new kind).
func withUpdates(s *scenario.Scenario, edit func(*scenario.Flow)) (*scenario.Scenario, error) {
	c := *s
	c.Flows = slices.Clone(s.Flows)
	for i := range c.Flows {
		if c.Flows[i].IsUpdates() {
			edit(&c.Flows[i])
		}
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// asFixed turns an update flow into a fixed-rate one.
func asFixed(hz float64) func(*scenario.Flow) {
	return func(f *scenario.Flow) {
		f.Kind, f.CC, f.UpdateRate, f.Pin = scenario.KindFixed, "", hz, false
	}
}

// asPolicy turns an update flow into an acp flow under policy (acp, lazy).
// A periodic source (update_rate on an acp or lazy flow) stays periodic; a
// fixed flow's rate is its policy's, not a source's, and is dropped.
func asPolicy(policy string) func(*scenario.Flow) {
	return func(f *scenario.Flow) {
		if f.Kind == scenario.KindFixed {
			f.UpdateRate = 0
		}
		f.Kind, f.CC = scenario.KindACP, policy
	}
}

// updateAge is the mean over r's update flows of their mean age (ms) and
// of their achieved update rate (Hz); 0 if none was measured.
func updateAge(r *report.Run) (ageMs, rateHz float64) {
	var n, nr int
	for _, f := range r.Flows {
		if f.AgeMs != nil && measured(f.AgeMs.Mean) {
			ageMs += f.AgeMs.Mean
			n++
		}
		if f.RateHz != nil {
			rateHz += *f.RateHz
			nr++
		}
	}
	if n > 0 {
		ageMs = report.Round3(ageMs / float64(n))
	}
	if nr > 0 {
		rateHz = report.Round3(rateHz / float64(nr))
	}
	return ageMs, rateHz
}

// elasticGoodput is the summed goodput of r's bulk flows, bit/s.
func elasticGoodput(r *report.Run) float64 {
	var g float64
	for _, f := range r.Flows {
		if f.Kind == scenario.KindBulk {
			g += f.GoodputBps
		}
	}
	return g
}

// cost is the elastic flows' goodput lost against base, 1 − g/base,
// rounded to four decimals; 0 if base is 0.
func cost(g, base float64) float64 {
	if !(base > 0) {
		return 0
	}
	return math.Round((1-g/base)*1e4) / 1e4
}

func sweepLabel(hz float64) string {
	return sweepLabelAt + strconv.FormatFloat(hz, 'g', -1, 64) + "Hz"
}

// ratio is a/b rounded to three decimals, 0 if either is not measured.
func ratio(a, b float64) float64 {
	if !measured(a) || !measured(b) {
		return 0
	}
	return report.Round3(a / b)
}

// sweepSeeds is the seeds a sweep of s runs: --seeds, or the scenario's.
func (c *simCommand) sweepSeeds(s *scenario.Scenario) []int64 {
	if c.cfg.Seeds != nil {
		return c.cfg.Seeds
	}
	return []int64{s.Seed}
}

// runSweep runs s's update flows under acp and lazy and the fixed-rate
// grid on every seed of the sweep (bulk flows keep the scenario's own
// controllers), and returns the summary and every run: per seed acp and
// lazy, then the fixed rates by rate, each over the seeds in order.
func (c *simCommand) runSweep(s *scenario.Scenario) (*sweepSummary, []*report.Run, error) {
	seeds := c.sweepSeeds(s)
	sum := &sweepSummary{Scenario: s.Name, Seeds: seeds, CapacityHz: report.Round3(capacityHz(s)),
		Elastic: hasElastic(s), CostBound: costBound}
	coarse := coarseGrid(sum.CapacityHz)
	// The progress bar counts the coarse grid and the most the rounds can
	// add; it jumps to the end if they add less.
	total := float64(len(seeds) * (2 + len(coarse) + 4*sweepRounds))
	done := 0.0
	pb := newProgressBar(c.stderr, c.progress, "sweep "+s.Name)
	defer pb.Done()
	run := func(edit func(*scenario.Flow), seed int64, label string) (*report.Run, error) {
		v, err := withUpdates(s, edit)
		if err != nil {
			return nil, fmt.Errorf("freshbench %s: --acp-sweep %s, %s: %w", c.name, s.Name, label, err)
		}
		v.Seed = seed
		r, err := c.runOne(v, "", label, func(f float64) { pb.Set((done + f) / total) })
		done++
		return r, err
	}

	var runs []*report.Run
	sum.PerSeed = make([]sweepSeed, len(seeds))
	for k, seed := range seeds {
		ps := &sum.PerSeed[k]
		ps.Seed = seed
		for _, pol := range []struct {
			name string
			res  *sweepResult
		}{{"acp", &ps.ACP}, {"lazy", &ps.Lazy}} {
			r, err := run(asPolicy(pol.name), seed, pol.name)
			if err != nil {
				return nil, nil, err
			}
			runs = append(runs, r)
			pol.res.AgeMs, pol.res.RateHz = updateAge(r)
			pol.res.ElasticBps = elasticGoodput(r)
		}
		ps.ACP.Cost = cost(ps.ACP.ElasticBps, ps.Lazy.ElasticBps)
	}

	fixed := map[float64][]*report.Run{} // by rate, one run per seed
	try := func(rates []float64) error {
		for _, hz := range rates {
			if fixed[hz] != nil {
				continue
			}
			for _, seed := range seeds {
				r, err := run(asFixed(hz), seed, sweepLabel(hz))
				if err != nil {
					return err
				}
				fixed[hz] = append(fixed[hz], r)
			}
		}
		return nil
	}
	points := func() []sweepPoint {
		var ps []sweepPoint
		for hz, rs := range fixed {
			ps = append(ps, sum.point(hz, rs))
		}
		slices.SortFunc(ps, func(a, b sweepPoint) int { return cmp.Compare(a.RateHz, b.RateHz) })
		return ps
	}
	if err := try(coarse); err != nil {
		return nil, nil, err
	}
	for range sweepRounds {
		ps := points()
		add := refineAround(ps, argminAge(ps))
		if sum.Elastic {
			add = append(add, refineAround(ps, argminConstrained(ps, costBound))...)
		}
		if len(add) == 0 {
			break
		}
		if err := try(add); err != nil {
			return nil, nil, err
		}
	}
	sum.Points = points()
	sum.finish()
	for _, p := range sum.Points {
		runs = append(runs, fixed[p.RateHz]...)
	}
	return sum, runs, nil
}

// point summarises one fixed rate's runs (one per seed, in Seeds order).
func (sum *sweepSummary) point(hz float64, rs []*report.Run) sweepPoint {
	p := sweepPoint{RateHz: hz, AgesMs: make([]float64, len(rs))}
	var ages, costs []float64
	for k, r := range rs {
		p.AgesMs[k], _ = updateAge(r)
		if measured(p.AgesMs[k]) {
			ages = append(ages, p.AgesMs[k])
		}
		if sum.Elastic {
			c := cost(elasticGoodput(r), sum.PerSeed[k].Lazy.ElasticBps)
			p.Costs = append(p.Costs, c)
			costs = append(costs, c)
		}
	}
	a := summarize(ages)
	p.MeanAgeMs, p.SDAgeMs = report.Round3(a.Mean), report.Round3(a.SD)
	p.MeanCost = math.Round(summarize(costs).Mean*1e4) / 1e4
	return p
}

// finish reads both oracles off the points, per seed and over the seeds,
// and the distributions and ratios.
func (sum *sweepSummary) finish() {
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
		ps := &sum.PerSeed[k]
		age := func(i int) float64 { return pts[i].AgesMs[k] }
		pick := func(i int) sweepResult {
			if i < 0 {
				return sweepResult{}
			}
			r := sweepResult{AgeMs: pts[i].AgesMs[k], RateHz: pts[i].RateHz}
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
	dist := func(get func(*sweepSeed) sweepResult) ageDist {
		var ages, costs []float64
		for k := range sum.PerSeed {
			r := get(&sum.PerSeed[k])
			if measured(r.AgeMs) {
				ages = append(ages, r.AgeMs)
			}
			costs = append(costs, r.Cost)
		}
		a, c := summarize(ages), summarize(costs)
		d := ageDist{MeanMs: report.Round3(a.Mean), WorstMs: a.Max, BestMs: a.Min,
			MeanCost: math.Round(c.Mean*1e4) / 1e4, WorstCost: c.Max}
		if a.Min > 0 {
			d.MaxOverMin = report.Round3(a.Max / a.Min)
		}
		return d
	}
	sum.ACP = dist(func(p *sweepSeed) sweepResult { return p.ACP })
	sum.Lazy = dist(func(p *sweepSeed) sweepResult { return p.Lazy })
	sum.Oracle = dist(func(p *sweepSeed) sweepResult { return p.Oracle })
	sum.Constrained = dist(func(p *sweepSeed) sweepResult { return p.Constrained })
}
