package main

import (
	"bytes"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/scenario"
)

func TestRoundSig(t *testing.T) {
	for _, tc := range []struct{ x, want float64 }{
		{12.3456, 12.35}, {0.50001, 0.5}, {183.0542, 183.1}, {12345.6, 12350}, {0, 0}, {-2.71828, -2.718},
	} {
		require.Equal(t, tc.want, roundSig(tc.x, 4), "%v", tc.x)
	}
}

func TestGeomGrid(t *testing.T) {
	g := geomGrid(0.5, 183.1, 24)
	require.Len(t, g, 24)
	require.Equal(t, 0.5, g[0])
	require.Equal(t, 183.1, g[23])
	ratio := math.Pow(183.1/0.5, 1.0/23)
	for i := 1; i < len(g); i++ {
		require.InEpsilon(t, ratio, g[i]/g[i-1], 1e-3, "step %d", i)
	}
	// Rounding would repeat rates on a tight range: no duplicates.
	g = geomGrid(10, 10.02, 12)
	require.Equal(t, []float64{10, 10.01, 10.02}, g)
	require.Equal(t, []float64{7}, geomGrid(7, 7, 5))
	require.Equal(t, []float64{7}, geomGrid(7, 9, 1))

	// A path slower than 0.5 updates/s still gets a grid below its capacity.
	slow := coarseGrid(0.2)
	require.Equal(t, 0.002, slow[0])
	require.Equal(t, 0.2, slow[len(slow)-1])
}

func pts(xs ...[3]float64) []sweepPoint {
	var out []sweepPoint
	for _, x := range xs {
		out = append(out, sweepPoint{RateHz: x[0], MeanAgeMs: x[1], SDAgeMs: x[2]})
	}
	return out
}

func TestArgminAge(t *testing.T) {
	for _, tc := range []struct {
		name   string
		points []sweepPoint
		want   int
	}{
		{"empty", nil, -1},
		{"none measured", pts([3]float64{1, 0, 0}, [3]float64{2, math.NaN(), 0}), -1},
		{"plain", pts([3]float64{1, 900, 0}, [3]float64{2, 500, 0}, [3]float64{4, 300, 0}, [3]float64{8, 450, 0}), 2},
		{"skips unmeasured", pts([3]float64{1, 900, 0}, [3]float64{2, 0, 0}, [3]float64{4, math.NaN(), 0}, [3]float64{8, 450, 0}), 3},
		{"tie to the lower rate", pts([3]float64{8, 300, 0}, [3]float64{2, 300, 0}, [3]float64{4, 400, 0}), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, argminAge(tc.points))
		})
	}
	cost := pts([3]float64{1, 900, 0}, [3]float64{2, 500, 0}, [3]float64{4, 300, 0})
	cost[2].MeanCost = 0.2
	require.Equal(t, 1, argminConstrained(cost, 0.1), "the best within the cost bound")
}

// TestRefineAround: a midpoint goes between the best point and each
// neighbour whose mean age differs from it by more than the larger SD, none
// where the grid is already as fine as the noise.
func TestRefineAround(t *testing.T) {
	p := pts([3]float64{10, 300, 1}, [3]float64{20, 250, 1}, [3]float64{40, 249.5, 1}, [3]float64{80, 260, 2})
	require.Equal(t, []float64{14.14}, refineAround(p, 1), "10–20 differ by 50 ms > 1 ms; 20–40 by 0.5 ms: flat")
	require.Equal(t, []float64{56.57}, refineAround(p, 2), "40–80 differ by 10.5 ms > 2 ms")
	require.Nil(t, refineAround(p, -1))
	close := pts([3]float64{10, 300, 0}, [3]float64{10.01, 200, 0})
	require.Empty(t, refineAround(close, 0), "a midpoint that rounds to an end is left out")
}

// TestOracleRange: the flat region is the contiguous run of points within
// the noise of the best.
func TestOracleRange(t *testing.T) {
	p := pts([3]float64{10, 300, 1}, [3]float64{20, 250.5, 1}, [3]float64{40, 250, 1}, [3]float64{80, 251.5, 2}, [3]float64{160, 250.5, 1})
	all := func(int) bool { return true }
	require.Equal(t, rateRange{LoHz: 20, HiHz: 160}, oracleRange(p, 2, all), "80 Hz is 1.5 ms above: within its own SD of 2")
	p[3].SDAgeMs = 1
	require.Equal(t, rateRange{LoHz: 20, HiHz: 40}, oracleRange(p, 2, all), "contiguous: 160 Hz is cut off by 80 Hz")
	require.Equal(t, rateRange{LoHz: 40, HiHz: 40}, oracleRange(p, 2, func(i int) bool { return i != 1 }), "only feasible points")
	require.Equal(t, rateRange{}, oracleRange(p, -1, all))
}

func TestCost(t *testing.T) {
	require.Equal(t, 0.1, cost(900, 1000))
	require.Equal(t, -0.05, cost(1050, 1000), "more than beside lazy: a negative cost")
	require.Zero(t, cost(900, 0))
	require.Equal(t, 1.05, ratio(210, 200))
	require.Zero(t, ratio(210, 0))
}

func TestCapacityHz(t *testing.T) {
	s := loadTestScenario(t)
	require.InDelta(t, 1.5e6/(1024*8), capacityHz(s), 1e-9)
	s.Flows[3].Reverse = true
	s.Reverse.Rate = scenario.Rate(100e3)
	require.InDelta(t, 100e3/(1024*8), capacityHz(s), 1e-9)
	s.Flows = s.Flows[:3]
	require.Zero(t, capacityHz(s))
	require.False(t, hasUpdates(s))
}

func TestWithUpdates(t *testing.T) {
	s := loadTestScenario(t)
	f, err := withUpdates(s, asFixed(12.5))
	require.NoError(t, err)
	require.Equal(t, scenario.KindFixed, f.Flows[3].Kind)
	require.Equal(t, 12.5, f.Flows[3].UpdateRate)
	require.Equal(t, scenario.KindACP, s.Flows[3].Kind, "the original is untouched")
	require.Equal(t, s.Flows[:3], f.Flows[:3])

	l, err := withUpdates(f, asPolicy("lazy"))
	require.NoError(t, err)
	require.Equal(t, scenario.KindACP, l.Flows[3].Kind)
	require.Equal(t, "lazy", l.Flows[3].CC)
	require.Zero(t, l.Flows[3].UpdateRate)
	require.Equal(t, "fixed@12.5Hz", sweepLabel(12.5))
}

// TestSweepFindsOracles runs the sweep against the fake simulator, whose
// age curve has its minimum at √(5C)/(1+√(5C)/C) (26 Hz on the test path)
// and whose bulk flows lose fakeCostPerHz per update per second, so that 10 %
// of their goodput beside lazy (9 Hz) is reached at 9 + 0.1·goodput / 60
// kbit/s (16–20 Hz by seed): the constrained oracle is the best rate below it.
func TestSweepFindsOracles(t *testing.T) {
	s := loadTestScenario(t)
	cfg := &simConfig{ACPSweep: true, Seeds: []int64{4, 5, 6, 7}}
	var out, errOut bytes.Buffer
	c := newSimCommand(cfg, fakeSim, &out, &errOut)
	sum, runs, err := c.runSweep(s)
	require.NoError(t, err)

	capacity := 1.5e6 / (1024 * 8)
	require.InDelta(t, capacity, sum.CapacityHz, 1e-3)
	require.True(t, sum.Elastic)
	require.Equal(t, []int64{4, 5, 6, 7}, sum.Seeds)
	best := math.Sqrt(5*capacity) / (1 + math.Sqrt(5*capacity)/capacity)
	noise := math.Sqrt((0.45*0.45 + 0.15*0.15 + 0.15*0.15 + 0.45*0.45) / 3) // SD of 0, 0.3, 0.6, 0.9
	require.InDelta(t, noise, sum.NoiseMs, 1e-3)
	require.InEpsilon(t, best, sum.OracleRateHz, 0.15)
	require.LessOrEqual(t, sum.OracleRange.LoHz, best)
	require.GreaterOrEqual(t, sum.OracleRange.HiHz, best)
	require.Greater(t, len(sum.Points), sweepCoarse)
	for i := 1; i < len(sum.Points); i++ {
		p, q := sum.Points[i-1], sum.Points[i]
		require.Less(t, p.RateHz, q.RateHz)
		require.Len(t, p.AgesMs, 4)
		require.Len(t, p.Costs, 4)
	}
	// Around the oracle the grid is as fine as the noise allows: its
	// neighbours differ from it by at most the noise, or the rounds ran
	// out.
	for k, ps := range sum.PerSeed {
		limit := 9 + 0.1*ps.Lazy.ElasticBps/fakeCostPerHz // the fake's goodputs differ by seed
		require.Equal(t, cfg.Seeds[k], ps.Seed)
		require.InEpsilon(t, sum.OracleRateHz, ps.Oracle.RateHz, 0.2, "seed %d", ps.Seed)
		require.InDelta(t, fakeAgeMs(ps.Oracle.RateHz, capacity)+fakeSeedAgeMs(ps.Seed), ps.Oracle.AgeMs, 1e-3)
		require.LessOrEqual(t, ps.Constrained.RateHz, limit, "within the cost bound")
		require.LessOrEqual(t, ps.Constrained.Cost, costBound)
		require.Greater(t, ps.Constrained.AgeMs, ps.Oracle.AgeMs, "the bound binds below the optimum")
		for _, p := range sum.Points {
			if p.RateHz > ps.Constrained.RateHz && p.RateHz < best {
				require.Greater(t, p.Costs[k], costBound, "every better rate costs more than the bound")
			}
		}
		require.Equal(t, 28.0, ps.ACP.RateHz)
		require.Equal(t, report3(fakeAgeMs(28, capacity)+fakeSeedAgeMs(ps.Seed)), ps.ACP.AgeMs)
		require.InDelta(t, fakeCostPerHz*(28-9)/ps.Lazy.ElasticBps, ps.ACP.Cost, 1e-4)
		require.Zero(t, ps.Lazy.Cost)
		require.InDelta(t, ps.ACP.AgeMs/ps.Constrained.AgeMs, ps.ACPOverConstrained, 1e-3)
		require.InDelta(t, ps.ACP.AgeMs/ps.Oracle.AgeMs, ps.ACPOverOracle, 1e-3)
		require.InDelta(t, ps.ACP.AgeMs/ps.Lazy.AgeMs, ps.ACPOverLazy, 1e-3)
	}
	require.InDelta(t, (fakeAgeMs(28, capacity)+0.9)/(fakeAgeMs(28, capacity)), sum.ACP.MaxOverMin, 1e-3)
	require.Equal(t, report3(fakeAgeMs(28, capacity)+0.9), sum.ACP.WorstMs, "seed 7")
	require.Greater(t, sum.ACP.WorstCost, costBound, "the fake acp takes more than the budget")
	require.Less(t, sum.ConstrainedRateHz, best)

	// Runs: per seed acp and lazy, then every point's seeds in order.
	require.Len(t, runs, 4*(2+len(sum.Points)))
	for k := range 4 {
		require.Equal(t, "acp", runs[2*k].CC)
		require.Equal(t, "lazy", runs[2*k+1].CC)
		require.Equal(t, cfg.Seeds[k], runs[2*k].Seed)
	}
	for i, p := range sum.Points {
		for k := range 4 {
			r := runs[8+4*i+k]
			require.Equal(t, sweepLabel(p.RateHz), r.CC)
			require.Equal(t, cfg.Seeds[k], r.Seed)
			require.Equal(t, scenario.KindFixed, r.Flows[3].Kind)
			require.Equal(t, "cubic", r.Flows[0].CC, "bulk flows keep the file's controller")
		}
	}
	require.Nil(t, runs[0].Flows[0].Series, "sweep runs are not traced")
}

// TestSweepWithoutElastic: without bulk flows the constrained oracle is the
// unconstrained one and costs are not reported.
func TestSweepWithoutElastic(t *testing.T) {
	s := loadTestScenario(t)
	s.Flows = s.Flows[2:] // the cbr flow and the updates
	c := newSimCommand(&simConfig{ACPSweep: true}, fakeSim, &bytes.Buffer{}, &bytes.Buffer{})
	sum, _, err := c.runSweep(s)
	require.NoError(t, err)
	require.False(t, sum.Elastic)
	require.Equal(t, sum.OracleRateHz, sum.ConstrainedRateHz)
	require.Equal(t, sum.PerSeed[0].Oracle, sum.PerSeed[0].Constrained)
	require.Nil(t, sum.Points[0].Costs)
	require.Zero(t, sum.NoiseMs, "one seed: no SD")
	require.Equal(t, []int64{7}, sum.Seeds, "the scenario's seed")
}

func report3(x float64) float64 { return math.Round(x*1000) / 1000 }
