// Package sweep finds the oracles an update policy is judged against
// ("freshbench sim --acp-sweep", the ACP section of RESULTS.md): the best
// fixed update rate of a path, found by running the scenario's update
// flows at fixed rates on a grid, beside the runs of acp and lazy they
// judge.
//
// A fixed update rate is run on every seed of the sweep (the scenario's
// own, or each of --seeds), on a geometric grid from MinHz to the path's
// capacity in updates/s, refined where it matters. Two oracles are read
// off the grid, per seed (paired: the same seed as the acp and lazy runs
// they judge):
//
//   - the unconstrained oracle, the grid rate with the lowest mean age on
//     that seed;
//   - the constrained oracle, the grid rate with the lowest mean age among
//     those that cost the elastic flows (the bulk flows) at most CostBound
//     of the goodput they get beside lazy on that seed. Without bulk flows
//     it is the unconstrained one.
//
// How fine a grid can be is set by the noise: a rate's mean age differs
// from seed to seed, so two rates closer in age than that SD cannot be told
// apart, and the "oracle rate" is then a range. The grid is refined (a
// geometric midpoint inserted) only between neighbours of an oracle whose
// mean ages over the seeds differ by more than the larger of their SDs;
// the flat region, every rate within that noise of the best mean, is
// reported as a range. Rates are rounded to Digits significant digits so
// that a run's label ("fixed@12.5Hz") is its exact rate.
//
// The JSON names of Summary are what --sweep-json writes, read by other
// tools: keep them stable.
package sweep

import (
	"math"
	"slices"
	"strconv"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
)

// The grid.
const (
	MinHz  = 0.5 // Hz, lowest rate of the coarse grid
	Coarse = 24  // points of the coarse grid
	Rounds = 4   // refinement rounds at most (each inserts ≤ 4 rates)
	Digits = 4   // significant digits of every swept rate
	// CostBound is the constrained oracle's budget: the elastic flows may
	// lose at most 10 % of the goodput they get beside lazy (one update
	// per RTT, the least an update flow that keeps the monitor informed
	// sends) on the same seed.
	CostBound = 0.10

	labelAt = "fixed@"
)

// Point is one fixed rate of the sweep over every seed.
type Point struct {
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

// Result is one policy's (or oracle's) outcome on one seed.
type Result struct {
	AgeMs  float64 `json:"age_ms"`  // mean age, ms; 0 = not measured
	RateHz float64 `json:"rate_hz"` // achieved update rate (oracles: the fixed rate)
	// ElasticBps is the elastic flows' summed goodput in that run, Cost
	// its loss against lazy's run (0 without elastic flows).
	ElasticBps float64 `json:"elastic_bps"`
	Cost       float64 `json:"cost"`
}

// Seed is every policy and both oracles on one seed.
type Seed struct {
	Seed        int64  `json:"seed"`
	ACP         Result `json:"acp"`
	Lazy        Result `json:"lazy"`
	Oracle      Result `json:"oracle"`
	Constrained Result `json:"constrained"`
	// Ratios of mean ages on this seed (1 = as good as the oracle; below
	// 1 = better than lazy); 0 if either age is missing.
	ACPOverOracle      float64 `json:"acp_over_oracle"`
	ACPOverConstrained float64 `json:"acp_over_constrained"`
	ACPOverLazy        float64 `json:"acp_over_lazy"`
}

// AgeDist summarises a policy's mean age over the seeds.
type AgeDist struct {
	MeanMs  float64 `json:"mean_ms"`
	WorstMs float64 `json:"worst_ms"` // the highest per-seed mean age
	BestMs  float64 `json:"best_ms"`
	// MaxOverMin is WorstMs / BestMs: how much the outcome depends on the
	// draw (1 = not at all).
	MaxOverMin float64 `json:"max_over_min"`
	// MeanCost and WorstCost are the elastic flows' loss (see
	// Result.Cost) over the seeds: mean and largest.
	MeanCost  float64 `json:"mean_cost"`
	WorstCost float64 `json:"worst_cost"`
}

// RateRange is the flat region of an oracle: the rates whose mean age over
// the seeds is within the noise of the best (see oracleRange).
type RateRange struct {
	LoHz float64 `json:"lo_hz"`
	HiHz float64 `json:"hi_hz"`
}

// Summary is the sweep of one scenario, written by --sweep-json. Ages are
// the mean over the scenario's update flows of each flow's mean age; 0
// means not measured (no update delivered).
type Summary struct {
	Scenario string  `json:"scenario"`
	Seeds    []int64 `json:"seeds"`
	// CapacityHz is the update flows' path rate / (update size × 8 bit).
	CapacityHz float64 `json:"capacity_hz"`
	// Elastic says whether the scenario has bulk flows (else the
	// constrained oracle is the unconstrained one and costs are 0).
	Elastic   bool    `json:"elastic"`
	CostBound float64 `json:"cost_bound"`
	// Points are every fixed rate run, by rate.
	Points []Point `json:"points"`
	// NoiseMs is the seed-to-seed SD of the mean age at OracleRateHz (the
	// resolution of the comparison; 0 with one seed).
	NoiseMs float64 `json:"noise_ms"`
	// OracleRateHz and OracleAgeMs: the rate with the lowest mean age over
	// the seeds, and that mean; OracleRange the rates within the noise of
	// it. ConstrainedRateHz, ConstrainedAgeMs and ConstrainedRange: the same
	// among the rates whose mean cost is within CostBound.
	OracleRateHz      float64   `json:"oracle_rate_hz"`
	OracleAgeMs       float64   `json:"oracle_age_ms"`
	OracleRange       RateRange `json:"oracle_range"`
	ConstrainedRateHz float64   `json:"constrained_rate_hz"`
	ConstrainedAgeMs  float64   `json:"constrained_age_ms"`
	ConstrainedRange  RateRange `json:"constrained_range"`
	// PerSeed holds every policy and both oracles seed by seed, in the
	// order of Seeds.
	PerSeed []Seed `json:"per_seed"`
	// The distributions over the seeds of acp, lazy and the per-seed
	// oracles' mean ages.
	ACP         AgeDist `json:"acp"`
	Lazy        AgeDist `json:"lazy"`
	Oracle      AgeDist `json:"oracle"`
	Constrained AgeDist `json:"constrained"`
	// WorstOverConstrained is the largest per-seed acp / constrained
	// oracle age ratio, WorstOverOracle and WorstOverLazy the same against
	// the unconstrained oracle and lazy.
	WorstOverConstrained float64 `json:"worst_over_constrained"`
	WorstOverOracle      float64 `json:"worst_over_oracle"`
	WorstOverLazy        float64 `json:"worst_over_lazy"`
}

// HasUpdates reports whether s has an update flow (acp, lazy, fixed): a
// scenario the sweep applies to.
func HasUpdates(s *scenario.Scenario) bool {
	return slices.ContainsFunc(s.Flows, func(f scenario.Flow) bool { return f.IsUpdates() })
}

// hasElastic reports whether s has a bulk flow, whose goodput the
// constrained oracle protects.
func hasElastic(s *scenario.Scenario) bool {
	return slices.ContainsFunc(s.Flows, func(f scenario.Flow) bool { return f.Kind == scenario.KindBulk })
}

// CapacityHz is how many updates per second the first update flow's path
// carries: its rate over the update size in bits.
func CapacityHz(s *scenario.Scenario) float64 {
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

// geomGrid is n rates spaced geometrically from lo to hi inclusive, rounded
// to Digits significant digits, ascending, without duplicates.
func geomGrid(lo, hi float64, n int) []float64 {
	if n <= 1 || hi <= lo {
		return []float64{report.RoundSig(lo, Digits)}
	}
	ratio := math.Pow(hi/lo, 1/float64(n-1))
	out := make([]float64, 0, n)
	for i := range n {
		r := report.RoundSig(lo*math.Pow(ratio, float64(i)), Digits)
		if len(out) == 0 || r > out[len(out)-1] {
			out = append(out, r)
		}
	}
	return out
}

// coarseGrid is the first grid of a path with capacity updates/s. A path
// slower than MinHz gets a grid over two decades below its capacity.
func coarseGrid(capacity float64) []float64 {
	lo := MinHz
	if capacity <= lo {
		lo = capacity / 100
	}
	return geomGrid(lo, capacity, Coarse)
}

// Measured reports whether a mean age counts (0 and NaN: nothing arrived).
func Measured(ageMs float64) bool { return ageMs > 0 && !math.IsNaN(ageMs) }

// argmin is the index of the lowest age among the points for which ok
// holds; ages not measured are skipped and a tie goes to the lowest rate
// (the least load for the same age). -1 if none counts. age and ok see the
// point's index.
func argmin(n int, rate, age func(int) float64, ok func(int) bool) int {
	best := -1
	for i := range n {
		a := age(i)
		if !Measured(a) || !ok(i) {
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
func argminAge(points []Point) int {
	return argmin(len(points), func(i int) float64 { return points[i].RateHz },
		func(i int) float64 { return points[i].MeanAgeMs }, func(int) bool { return true })
}

// argminConstrained is argminAge among the points whose mean cost is within
// bound.
func argminConstrained(points []Point, bound float64) int {
	return argmin(len(points), func(i int) float64 { return points[i].RateHz },
		func(i int) float64 { return points[i].MeanAgeMs }, func(i int) bool { return points[i].MeanCost <= bound })
}

// refineAround is the geometric midpoints to insert next to points[best]:
// between it and each neighbour whose mean age differs from its own by
// more than the noise (the larger of the two SDs), i.e. where the grid is
// still coarser than what the seeds can resolve. Midpoints equal to an end
// after rounding are left out.
func refineAround(points []Point, best int) []float64 {
	var out []float64
	if best < 0 {
		return nil
	}
	for _, j := range []int{best - 1, best + 1} {
		if j < 0 || j >= len(points) {
			continue
		}
		a, b := points[best], points[j]
		if Measured(a.MeanAgeMs) && Measured(b.MeanAgeMs) &&
			math.Abs(a.MeanAgeMs-b.MeanAgeMs) <= max(a.SDAgeMs, b.SDAgeMs) {
			continue // already as fine as the noise allows
		}
		mid := report.RoundSig(math.Sqrt(a.RateHz*b.RateHz), Digits)
		if mid != a.RateHz && mid != b.RateHz {
			out = append(out, mid)
		}
	}
	return out
}

// oracleRange is the flat region around points[best] among the points for
// which ok holds: the contiguous run of such points whose mean age is
// within the noise of the best (the larger of the two SDs).
func oracleRange(points []Point, best int, ok func(int) bool) RateRange {
	if best < 0 {
		return RateRange{}
	}
	flat := func(i int) bool {
		p, b := points[i], points[best]
		return ok(i) && Measured(p.MeanAgeMs) && p.MeanAgeMs-b.MeanAgeMs <= max(p.SDAgeMs, b.SDAgeMs)
	}
	lo, hi := best, best
	for lo > 0 && flat(lo-1) {
		lo--
	}
	for hi < len(points)-1 && flat(hi+1) {
		hi++
	}
	return RateRange{LoHz: points[lo].RateHz, HiHz: points[hi].RateHz}
}

// WithUpdates returns a copy of s in which edit has changed every update
// flow, validated again (which fills the defaults of the new kind).
func WithUpdates(s *scenario.Scenario, edit func(*scenario.Flow)) (*scenario.Scenario, error) {
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

// AsFixed turns an update flow into a fixed-rate one.
func AsFixed(hz float64) func(*scenario.Flow) {
	return func(f *scenario.Flow) {
		f.Kind, f.CC, f.UpdateRate, f.Pin = scenario.KindFixed, "", hz, false
	}
}

// AsPolicy turns an update flow into an acp flow under policy (acp, lazy).
// A periodic source (update_rate on an acp or lazy flow) stays periodic; a
// fixed flow's rate is its policy's, not a source's, and is dropped.
func AsPolicy(policy string) func(*scenario.Flow) {
	return func(f *scenario.Flow) {
		if f.Kind == scenario.KindFixed {
			f.UpdateRate = 0
		}
		f.Kind, f.CC = scenario.KindACP, policy
	}
}

// UpdateAge is the mean over r's update flows of their mean age (ms) and
// of their achieved update rate (Hz); 0 if none was measured.
func UpdateAge(r *report.Run) (ageMs, rateHz float64) {
	var n, nr int
	for _, f := range r.Flows {
		if f.AgeMs != nil && Measured(f.AgeMs.Mean) {
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

// Label is the cc label of a fixed-rate run: "fixed@12.5Hz".
func Label(hz float64) string {
	return labelAt + strconv.FormatFloat(hz, 'g', -1, 64) + "Hz"
}

// ratio is a/b rounded to three decimals, 0 if either is not measured.
func ratio(a, b float64) float64 {
	if !Measured(a) || !Measured(b) {
		return 0
	}
	return report.Round3(a / b)
}
