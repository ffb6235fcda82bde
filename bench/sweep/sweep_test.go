package sweep

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

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

func pts(xs ...[3]float64) []Point {
	var out []Point
	for _, x := range xs {
		out = append(out, Point{RateHz: x[0], MeanAgeMs: x[1], SDAgeMs: x[2]})
	}
	return out
}

func TestArgminAge(t *testing.T) {
	for _, tc := range []struct {
		name   string
		points []Point
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
	require.Equal(t, RateRange{LoHz: 20, HiHz: 160}, oracleRange(p, 2, all), "80 Hz is 1.5 ms above: within its own SD of 2")
	p[3].SDAgeMs = 1
	require.Equal(t, RateRange{LoHz: 20, HiHz: 40}, oracleRange(p, 2, all), "contiguous: 160 Hz is cut off by 80 Hz")
	require.Equal(t, RateRange{LoHz: 40, HiHz: 40}, oracleRange(p, 2, func(i int) bool { return i != 1 }), "only feasible points")
	require.Equal(t, RateRange{}, oracleRange(p, -1, all))
}

func TestCost(t *testing.T) {
	require.Equal(t, 0.1, cost(900, 1000))
	require.Equal(t, -0.05, cost(1050, 1000), "more than beside lazy: a negative cost")
	require.Zero(t, cost(900, 0))
	require.Equal(t, 1.05, ratio(210, 200))
	require.Zero(t, ratio(210, 0))
}
