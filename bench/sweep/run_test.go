package sweep_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/internal/benchtest"
	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/bench/sim"
	"github.com/fresh-udp/fresh/bench/sweep"
)

// fakeRun runs the fake simulator as the sweep asks, labels the run and
// reports its progress.
func fakeRun(s *scenario.Scenario, label string, progress func(float64)) (*report.Run, error) {
	r, err := benchtest.Sim(s, sim.Options{Progress: func(done, total time.Duration) {
		progress(float64(done) / float64(total))
	}})
	if err == nil {
		r.CC = label
	}
	return r, err
}

// TestSweepFindsOracles runs the sweep against the fake simulator, whose
// age curve has its minimum at √(5C)/(1+√(5C)/C) (26 Hz on the test path)
// and whose bulk flows lose benchtest.CostPerHz per update per second, so
// that 10 % of their goodput beside lazy (9 Hz) is reached at 9 + 0.1 ·
// goodput / 60 kbit/s (16–20 Hz by seed): the constrained oracle is the
// best rate below it.
func TestSweepFindsOracles(t *testing.T) {
	s := benchtest.LoadScenario(t)
	seeds := []int64{4, 5, 6, 7}
	var progress []float64
	sum, runs, err := sweep.Run(s, seeds, fakeRun, func(f float64) { progress = append(progress, f) })
	require.NoError(t, err)

	capacity := 1.5e6 / (1024 * 8)
	require.InDelta(t, capacity, sum.CapacityHz, 1e-3)
	require.True(t, sum.Elastic)
	require.Equal(t, seeds, sum.Seeds)
	best := math.Sqrt(5*capacity) / (1 + math.Sqrt(5*capacity)/capacity)
	noise := math.Sqrt((0.45*0.45 + 0.15*0.15 + 0.15*0.15 + 0.45*0.45) / 3) // SD of 0, 0.3, 0.6, 0.9
	require.InDelta(t, noise, sum.NoiseMs, 1e-3)
	require.InEpsilon(t, best, sum.OracleRateHz, 0.15)
	require.LessOrEqual(t, sum.OracleRange.LoHz, best)
	require.GreaterOrEqual(t, sum.OracleRange.HiHz, best)
	require.Greater(t, len(sum.Points), sweep.Coarse)
	for i := 1; i < len(sum.Points); i++ {
		p, q := sum.Points[i-1], sum.Points[i]
		require.Less(t, p.RateHz, q.RateHz)
		require.Len(t, p.AgesMs, 4)
		require.Len(t, p.Costs, 4)
	}
	for k, ps := range sum.PerSeed {
		limit := 9 + 0.1*ps.Lazy.ElasticBps/benchtest.CostPerHz // the fake's goodputs differ by seed
		require.Equal(t, seeds[k], ps.Seed)
		require.InEpsilon(t, sum.OracleRateHz, ps.Oracle.RateHz, 0.2, "seed %d", ps.Seed)
		require.InDelta(t, benchtest.AgeMs(ps.Oracle.RateHz, capacity)+benchtest.SeedAgeMs(ps.Seed), ps.Oracle.AgeMs, 1e-3)
		require.LessOrEqual(t, ps.Constrained.RateHz, limit, "within the cost bound")
		require.LessOrEqual(t, ps.Constrained.Cost, sweep.CostBound)
		require.Greater(t, ps.Constrained.AgeMs, ps.Oracle.AgeMs, "the bound binds below the optimum")
		for _, p := range sum.Points {
			if p.RateHz > ps.Constrained.RateHz && p.RateHz < best {
				require.Greater(t, p.Costs[k], sweep.CostBound, "every better rate costs more than the bound")
			}
		}
		require.Equal(t, 28.0, ps.ACP.RateHz)
		require.Equal(t, report.Round3(benchtest.AgeMs(28, capacity)+benchtest.SeedAgeMs(ps.Seed)), ps.ACP.AgeMs)
		require.InDelta(t, benchtest.CostPerHz*(28-9)/ps.Lazy.ElasticBps, ps.ACP.Cost, 1e-4)
		require.Zero(t, ps.Lazy.Cost)
		require.InDelta(t, ps.ACP.AgeMs/ps.Constrained.AgeMs, ps.ACPOverConstrained, 1e-3)
		require.InDelta(t, ps.ACP.AgeMs/ps.Oracle.AgeMs, ps.ACPOverOracle, 1e-3)
		require.InDelta(t, ps.ACP.AgeMs/ps.Lazy.AgeMs, ps.ACPOverLazy, 1e-3)
	}
	require.InDelta(t, (benchtest.AgeMs(28, capacity)+0.9)/(benchtest.AgeMs(28, capacity)), sum.ACP.MaxOverMin, 1e-3)
	require.Equal(t, report.Round3(benchtest.AgeMs(28, capacity)+0.9), sum.ACP.WorstMs, "seed 7")
	require.Greater(t, sum.ACP.WorstCost, sweep.CostBound, "the fake acp takes more than the budget")
	require.Less(t, sum.ConstrainedRateHz, best)

	// Runs: per seed acp and lazy, then every point's seeds in order.
	require.Len(t, runs, 4*(2+len(sum.Points)))
	for k := range 4 {
		require.Equal(t, "acp", runs[2*k].CC)
		require.Equal(t, "lazy", runs[2*k+1].CC)
		require.Equal(t, seeds[k], runs[2*k].Seed)
	}
	for i, p := range sum.Points {
		for k := range 4 {
			r := runs[8+4*i+k]
			require.Equal(t, sweep.Label(p.RateHz), r.CC)
			require.Equal(t, seeds[k], r.Seed)
			require.Equal(t, scenario.KindFixed, r.Flows[3].Kind)
			require.Equal(t, "cubic", r.Flows[0].CC, "bulk flows keep the file's controller")
		}
	}

	// Progress only grows, and stays within [0, 1].
	require.NotEmpty(t, progress)
	for i, f := range progress {
		require.GreaterOrEqual(t, f, 0.0)
		require.LessOrEqual(t, f, 1.0)
		if i > 0 {
			require.GreaterOrEqual(t, f, progress[i-1])
		}
	}
}

// TestSweepWithoutElastic: without bulk flows the constrained oracle is the
// unconstrained one and costs are not reported.
func TestSweepWithoutElastic(t *testing.T) {
	s := benchtest.LoadScenario(t)
	s.Flows = s.Flows[2:] // the cbr flow and the updates
	sum, _, err := sweep.Run(s, []int64{s.Seed}, fakeRun, nil)
	require.NoError(t, err)
	require.False(t, sum.Elastic)
	require.Equal(t, sum.OracleRateHz, sum.ConstrainedRateHz)
	require.Equal(t, sum.PerSeed[0].Oracle, sum.PerSeed[0].Constrained)
	require.Nil(t, sum.Points[0].Costs)
	require.Zero(t, sum.NoiseMs, "one seed: no SD")
	require.Equal(t, []int64{7}, sum.Seeds)
}

// A failed run stops the sweep with its own error; a variant the scenario
// rules refuse is an EditError naming the run.
func TestSweepErrors(t *testing.T) {
	s := benchtest.LoadScenario(t)
	boom := errors.New("boom")
	n := 0
	_, _, err := sweep.Run(s, []int64{1}, func(v *scenario.Scenario, label string, p func(float64)) (*report.Run, error) {
		if n++; n == 3 {
			return nil, boom
		}
		return fakeRun(v, label, p)
	}, nil)
	require.Same(t, boom, err)

	s.Duration = scenario.Duration(-1) // the variants do not validate
	_, _, err = sweep.Run(s, []int64{1}, fakeRun, nil)
	var ee *sweep.EditError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, "acp", ee.Label)
	require.Contains(t, err.Error(), "--acp-sweep dumbbell-test, acp: ")
}

func TestCapacityHz(t *testing.T) {
	s := benchtest.LoadScenario(t)
	require.InDelta(t, 1.5e6/(1024*8), sweep.CapacityHz(s), 1e-9)
	require.True(t, sweep.HasUpdates(s))
	s.Flows[3].Reverse = true
	s.Reverse.Rate = scenario.Rate(100e3)
	require.InDelta(t, 100e3/(1024*8), sweep.CapacityHz(s), 1e-9)
	s.Flows = s.Flows[:3]
	require.Zero(t, sweep.CapacityHz(s))
	require.False(t, sweep.HasUpdates(s))
}

func TestWithUpdates(t *testing.T) {
	s := benchtest.LoadScenario(t)
	f, err := sweep.WithUpdates(s, sweep.AsFixed(12.5))
	require.NoError(t, err)
	require.Equal(t, scenario.KindFixed, f.Flows[3].Kind)
	require.Equal(t, 12.5, f.Flows[3].UpdateRate)
	require.Equal(t, scenario.KindACP, s.Flows[3].Kind, "the original is untouched")
	require.Equal(t, s.Flows[:3], f.Flows[:3])

	l, err := sweep.WithUpdates(f, sweep.AsPolicy("lazy"))
	require.NoError(t, err)
	require.Equal(t, scenario.KindACP, l.Flows[3].Kind)
	require.Equal(t, "lazy", l.Flows[3].CC)
	require.Zero(t, l.Flows[3].UpdateRate)
	require.Equal(t, "fixed@12.5Hz", sweep.Label(12.5))
}
