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

// The --acp-sweep grid. The oracle is the fixed update rate with the lowest
// mean age, found by brute force: a coarse geometric grid from sweepMinHz
// to the path's capacity in updates/s, then a finer grid between the best
// coarse rate's two neighbours. Rates are rounded to sweepDigits
// significant digits so that a run's label ("fixed@12.5Hz") is its exact
// rate.
const (
	sweepMinHz   = 0.5 // Hz, lowest rate of the coarse grid
	sweepCoarse  = 24  // points of the coarse grid
	sweepFine    = 12  // points of the fine grid (its ends are coarse points)
	sweepDigits  = 4   // significant digits of every swept rate
	sweepLabelAt = "fixed@"
)

// sweepPoint is one fixed rate of the sweep and the mean age it gave.
type sweepPoint struct {
	RateHz    float64 `json:"rate_hz"`
	MeanAgeMs float64 `json:"mean_age_ms"`
}

// sweepSummary is the --acp-sweep result of one scenario, written by
// --sweep-json. Ages are the mean over the scenario's update flows of each
// flow's mean age; 0 means not measured (no update delivered).
type sweepSummary struct {
	Scenario string `json:"scenario"`
	Seed     int64  `json:"seed"`
	// CapacityHz is the update flows' path rate / (update size × 8 bit).
	CapacityHz float64 `json:"capacity_hz"`
	// Points are every fixed rate run, by rate.
	Points       []sweepPoint `json:"points"`
	OracleRateHz float64      `json:"oracle_rate_hz"`
	OracleAgeMs  float64      `json:"oracle_age_ms"`
	// ACP and Lazy: the update flows under those policies; RateHz is the
	// mean of the flows' achieved update rate.
	ACPAgeMs   float64 `json:"acp_age_ms"`
	ACPRateHz  float64 `json:"acp_rate_hz"`
	LazyAgeMs  float64 `json:"lazy_age_ms"`
	LazyRateHz float64 `json:"lazy_rate_hz"`
	// ACPOverOracle and ACPOverLazy are ratios of mean ages (1 = as good as
	// the oracle; below 1 = better than lazy); 0 if either is missing.
	ACPOverOracle float64 `json:"acp_over_oracle"`
	ACPOverLazy   float64 `json:"acp_over_lazy"`
}

// hasUpdates reports whether s has an update flow (acp, lazy, fixed).
func hasUpdates(s *scenario.Scenario) bool {
	return slices.ContainsFunc(s.Flows, func(f scenario.Flow) bool { return f.IsUpdates() })
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

// fineGrid is the second grid, between the neighbours of grid[best].
func fineGrid(grid []float64, best int) []float64 {
	lo := grid[max(best-1, 0)]
	hi := grid[min(best+1, len(grid)-1)]
	return geomGrid(lo, hi, sweepFine)
}

// argminAge is the index of the point with the lowest mean age; points
// without a measured age (0 or NaN) are skipped, and a tie goes to the
// lowest rate (the least load for the same age). -1 if no point counts.
func argminAge(points []sweepPoint) int {
	best := -1
	for i, p := range points {
		if p.MeanAgeMs <= 0 || math.IsNaN(p.MeanAgeMs) {
			continue
		}
		if best < 0 || p.MeanAgeMs < points[best].MeanAgeMs ||
			(p.MeanAgeMs == points[best].MeanAgeMs && p.RateHz < points[best].RateHz) {
			best = i
		}
	}
	return best
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
func asPolicy(policy string) func(*scenario.Flow) {
	return func(f *scenario.Flow) {
		f.Kind, f.CC, f.UpdateRate = scenario.KindACP, policy, 0
	}
}

// updateAge is the mean over r's update flows of their mean age (ms) and
// of their achieved update rate (Hz); 0 if none was measured.
func updateAge(r *report.Run) (ageMs, rateHz float64) {
	var n, nr int
	for _, f := range r.Flows {
		if f.AgeMs != nil && f.AgeMs.Mean > 0 && !math.IsNaN(f.AgeMs.Mean) {
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

func sweepLabel(hz float64) string {
	return sweepLabelAt + strconv.FormatFloat(hz, 'g', -1, 64) + "Hz"
}

// runSweep runs s's update flows under acp, lazy and the fixed-rate grid
// (bulk flows keep the scenario's own controllers), and returns the summary
// and every run: acp, lazy, then the fixed rates by rate.
func (c *simCommand) runSweep(s *scenario.Scenario) (*sweepSummary, []*report.Run, error) {
	sum := &sweepSummary{Scenario: s.Name, Seed: s.Seed, CapacityHz: report.Round3(capacityHz(s))}
	coarse := coarseGrid(sum.CapacityHz)
	total := float64(2 + len(coarse) + sweepFine)
	done := 0.0
	pb := newProgressBar(c.stderr, c.progress, "sweep "+s.Name)
	defer pb.Done()
	run := func(edit func(*scenario.Flow), label string) (*report.Run, error) {
		v, err := withUpdates(s, edit)
		if err != nil {
			return nil, fmt.Errorf("freshbench sim: --acp-sweep %s, %s: %w", s.Name, label, err)
		}
		r, err := c.runOne(v, "", label, func(f float64) { pb.Set((done + f) / total) })
		done++
		return r, err
	}

	var runs []*report.Run
	for _, policy := range []string{"acp", "lazy"} {
		r, err := run(asPolicy(policy), policy)
		if err != nil {
			return nil, nil, err
		}
		runs = append(runs, r)
	}
	sum.ACPAgeMs, sum.ACPRateHz = updateAge(runs[0])
	sum.LazyAgeMs, sum.LazyRateHz = updateAge(runs[1])

	fixed := map[float64]*report.Run{}
	try := func(rates []float64) error {
		for _, hz := range rates {
			if fixed[hz] != nil {
				continue
			}
			r, err := run(asFixed(hz), sweepLabel(hz))
			if err != nil {
				return err
			}
			fixed[hz] = r
		}
		return nil
	}
	points := func() []sweepPoint {
		var ps []sweepPoint
		for hz, r := range fixed {
			age, _ := updateAge(r)
			ps = append(ps, sweepPoint{RateHz: hz, MeanAgeMs: age})
		}
		slices.SortFunc(ps, func(a, b sweepPoint) int { return cmp.Compare(a.RateHz, b.RateHz) })
		return ps
	}
	if err := try(coarse); err != nil {
		return nil, nil, err
	}
	if best := argminAge(points()); best >= 0 {
		// points() of the coarse grid is the coarse grid itself, in order.
		if err := try(fineGrid(coarse, best)); err != nil {
			return nil, nil, err
		}
	}
	sum.Points = points()
	if best := argminAge(sum.Points); best >= 0 {
		sum.OracleRateHz, sum.OracleAgeMs = sum.Points[best].RateHz, sum.Points[best].MeanAgeMs
	}
	if sum.ACPAgeMs > 0 && sum.OracleAgeMs > 0 {
		sum.ACPOverOracle = report.Round3(sum.ACPAgeMs / sum.OracleAgeMs)
	}
	if sum.ACPAgeMs > 0 && sum.LazyAgeMs > 0 {
		sum.ACPOverLazy = report.Round3(sum.ACPAgeMs / sum.LazyAgeMs)
	}
	for _, p := range sum.Points {
		runs = append(runs, fixed[p.RateHz])
	}
	return sum, runs, nil
}
