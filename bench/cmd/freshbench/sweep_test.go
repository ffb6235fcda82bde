package main

import (
	"bytes"
	"math"
	"strings"
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

func TestFineGrid(t *testing.T) {
	coarse := geomGrid(1, 1000, 4) // 1, 10, 100, 1000
	require.Equal(t, []float64{1, 10, 100, 1000}, coarse)
	f := fineGrid(coarse, 2)
	require.Len(t, f, sweepFine)
	require.Equal(t, 10.0, f[0])
	require.Equal(t, 1000.0, f[len(f)-1])
	// At the edges the grid spans the best point and its one neighbour.
	require.Equal(t, 1.0, fineGrid(coarse, 0)[0])
	require.Equal(t, 10.0, fineGrid(coarse, 0)[sweepFine-1])
	require.Equal(t, 100.0, fineGrid(coarse, 3)[0])
}

func TestArgminAge(t *testing.T) {
	for _, tc := range []struct {
		name   string
		points []sweepPoint
		want   int
	}{
		{"empty", nil, -1},
		{"none measured", []sweepPoint{{1, 0}, {2, math.NaN()}}, -1},
		{"plain", []sweepPoint{{1, 900}, {2, 500}, {4, 300}, {8, 450}}, 2},
		{"skips unmeasured", []sweepPoint{{1, 900}, {2, 0}, {4, math.NaN()}, {8, 450}}, 3},
		{"tie to the lower rate", []sweepPoint{{8, 300}, {2, 300}, {4, 400}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, argminAge(tc.points))
		})
	}
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

// TestSweepFindsOracle runs the sweep against the fake simulator, whose
// age curve has its minimum at √(5C)/(1+√(5C)/C).
func TestSweepFindsOracle(t *testing.T) {
	s := loadTestScenario(t)
	cfg := &simConfig{ACPSweep: true}
	var out, errOut bytes.Buffer
	c := newSimCommand(cfg, fakeSim, &out, &errOut)
	sum, runs, err := c.runSweep(s)
	require.NoError(t, err)

	capacity := 1.5e6 / (1024 * 8)
	require.InDelta(t, capacity, sum.CapacityHz, 1e-3)
	best := math.Sqrt(5*capacity) / (1 + math.Sqrt(5*capacity)/capacity)
	require.InEpsilon(t, best, sum.OracleRateHz, 0.03)
	require.InEpsilon(t, fakeAgeMs(best, capacity), sum.OracleAgeMs, 0.001)
	require.Greater(t, len(sum.Points), sweepCoarse)
	require.LessOrEqual(t, len(sum.Points), sweepCoarse+sweepFine-2)
	for i := 1; i < len(sum.Points); i++ {
		require.Less(t, sum.Points[i-1].RateHz, sum.Points[i].RateHz)
	}

	require.Equal(t, report3(fakeAgeMs(28, capacity)), sum.ACPAgeMs)
	require.Equal(t, 28.0, sum.ACPRateHz)
	require.Equal(t, report3(fakeAgeMs(9, capacity)), sum.LazyAgeMs)
	require.InDelta(t, sum.ACPAgeMs/sum.OracleAgeMs, sum.ACPOverOracle, 1e-3)
	require.InDelta(t, sum.ACPAgeMs/sum.LazyAgeMs, sum.ACPOverLazy, 1e-3)

	// Runs: acp, lazy, then one per point, labelled with the rate.
	require.Len(t, runs, 2+len(sum.Points))
	require.Equal(t, "acp", runs[0].CC)
	require.Equal(t, "lazy", runs[1].CC)
	for i, p := range sum.Points {
		r := runs[2+i]
		require.Equal(t, sweepLabel(p.RateHz), r.CC)
		require.True(t, strings.HasPrefix(r.CC, "fixed@"))
		require.Equal(t, scenario.KindFixed, r.Flows[3].Kind)
		require.Equal(t, "cubic", r.Flows[0].CC, "bulk flows keep the file's controller")
	}
	require.Nil(t, runs[0].Flows[0].Series, "sweep runs are not traced")
}

func report3(x float64) float64 { return math.Round(x*1000) / 1000 }
