package acp

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock"
)

// ms is a Mono at x milliseconds.
func ms(x float64) clock.Mono { return clock.Mono(x * float64(time.Millisecond)) }

// msd is a Duration of x milliseconds.
func msd(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }

// TestAgeMeterSawtooth checks the meter against a sawtooth drawn by hand
// (times in ms, g = generation, r = reception):
//
//	#  g   r   effect                      age just before → after
//	1   0  10  first: measurement starts    – → 10
//	2   5  20  useful                       20 → 15   (peak 20)
//	3  25  40  useful                       35 → 15   (peak 35)
//	4  12  45  out of order: 12 < g* = 25   no change
//	5  30  60  useful                       35 → 30   (peak 35)
//	end at 70                               40
//
// Area = [10,20] (10+20)/2·10 = 150
//
//   - [20,40] (15+35)/2·20 = 500
//   - [40,60] (15+35)/2·20 = 500   (delivery 4 does not cut this tooth)
//   - [60,70] (30+40)/2·10 = 350
//     = 1500 ms² over 60 ms → mean age 25 ms.
//
// Peaks 20, 35, 35 → max 35 ms, mean 30 ms.
// Time-weighted p95: age exceeds x ∈ [35, 40] only on the last tooth, for
// 40 − x ms; 5 % of 60 ms is 3 ms → p95 = 37 ms. p50: for x ∈ [20, 30] the time
// at or below x is 10 + 2(x − 15) = 30 ms → p50 = 25 ms.
func TestAgeMeterSawtooth(t *testing.T) {
	var m AgeMeter
	require.False(t, m.Started())
	require.Zero(t, m.Mean(ms(100)), "age undefined before the first delivery")
	require.Zero(t, m.Percentile(ms(100), 0.95))

	deliveries := []struct {
		g, r   float64
		useful bool
	}{
		{0, 10, true},
		{5, 20, true},
		{25, 40, true},
		{12, 45, false}, // out of order
		{30, 60, true},
	}
	marks := map[float64]AgeMark{} // taken right after the delivery at r
	for _, d := range deliveries {
		require.Equal(t, d.useful, m.Deliver(ms(d.g), ms(d.r)), "delivery g=%v r=%v", d.g, d.r)
		marks[d.r] = m.Mark(ms(d.r))
	}
	end := ms(70)

	require.True(t, m.Started())
	require.Equal(t, ms(10), m.Start())
	require.Equal(t, ms(30), m.Newest())
	require.Equal(t, msd(25), m.Age(ms(55)), "age just before delivery 5: 55 − 25")
	require.InDelta(t, 1500e-6, m.Mark(end).Area, 1e-12, "area in s²")
	require.Equal(t, msd(25), m.Mean(end))
	require.Equal(t, msd(35), m.PeakMax())
	require.Equal(t, msd(30), m.PeakMean())

	// Percentiles are within the histogram's 2.2 % resolution.
	require.InEpsilon(t, 0.037, m.Percentile(end, 0.95).Seconds(), 0.022)
	require.InEpsilon(t, 0.025, m.Percentile(end, 0.50).Seconds(), 0.022)

	// Averages over sub-intervals from marks: [20, 60] is two full teeth of
	// 500 ms² → 25 ms; [40, 70] is 500 + 350 over 30 ms → 28.33 ms.
	require.InDelta(t, 150e-6, marks[20].Area, 1e-12)
	a, ok := m.Mark(ms(60)).MeanSince(marks[20])
	require.True(t, ok)
	require.Equal(t, msd(25), a)
	a, ok = m.Mark(end).MeanSince(marks[40])
	require.True(t, ok)
	require.InDelta(t, 850.0/30/1000, a.Seconds(), 1e-9)
	// A mark before the latest delivery is taken at it.
	require.Equal(t, ms(60), m.Mark(ms(20)).T)
	_, ok = m.Mark(end).MeanSince(AgeMark{})
	require.False(t, ok, "invalid mark")

	s := m.Summary(end)
	require.Equal(t, AgeSummary{
		Start: ms(10), End: end, Duration: msd(60),
		Mean: msd(25), P95: m.Percentile(end, 0.95),
		PeakMean: msd(30), PeakMax: msd(35),
		// The last tooth is unfinished at 70 ms: age 40 ms > PeakMax.
		Max:        msd(40),
		Deliveries: 5, Useful: 4, Stale: 1,
	}, s)
	require.LessOrEqual(t, s.P95, s.Max)
}

// TestAgeMeterReceptionOrder checks the documented clamps: a reception time
// before the frontier counts at the frontier, one before the generation time
// at the generation time.
func TestAgeMeterReceptionOrder(t *testing.T) {
	var m AgeMeter
	m.Deliver(ms(10), ms(5)) // r < g: received at g, age 0
	require.Equal(t, ms(10), m.Start())
	require.Zero(t, m.Age(ms(10)))
	m.Deliver(ms(20), ms(30)) // useful, peak 20
	m.Deliver(ms(25), ms(25)) // newer, but reported received before r = 30: taken at 30, peak 10
	// Area: [10,30] 0→20 = 200; [30,40] 5→15 = 100 → 300 ms² / 30 ms = 10 ms.
	require.Equal(t, msd(10), m.Mean(ms(40)))
	require.Equal(t, msd(20), m.PeakMax())
	require.Equal(t, msd(15), m.PeakMean())
	s := m.Summary(ms(40))
	require.EqualValues(t, 1, s.Clamped)
	require.EqualValues(t, 0, s.Stale)
}

func TestHistBinEdges(t *testing.T) {
	for i := 1; i < histBins; i++ {
		e := histEdges[i]
		require.Equal(t, i, histBin(e), "lower edge of bin %d", i)
		require.Equal(t, i-1, histBin(math.Nextafter(e, 0)), "just below bin %d", i)
	}
	require.Equal(t, 0, histBin(0))
	require.Equal(t, histBins-1, histBin(1e9), "overflow")
	// Resolution: consecutive log bins differ by 2^(1/32).
	require.InDelta(t, math.Exp2(1.0/32), histEdges[100]/histEdges[99], 1e-12)
}

func TestAgeHistogramQuantiles(t *testing.T) {
	tests := []struct {
		name   string
		ramps  [][2]float64 // seconds
		open   [2]float64
		q      float64
		want   float64
		relTol float64
	}{
		{"one ramp 0..1 s, median", [][2]float64{{0, 1}}, [2]float64{}, 0.5, 0.5, 0.022},
		{"one ramp 0..1 s, p95", [][2]float64{{0, 1}}, [2]float64{}, 0.95, 0.95, 0.022},
		{"open ramp only", nil, [2]float64{0, 1}, 0.95, 0.95, 0.022},
		{"two equal ramps", [][2]float64{{0.1, 0.2}, {0.1, 0.2}}, [2]float64{}, 0.5, 0.15, 0.022},
		// 1 ms of time at ages 1..2 ms, 1 s at 10..11 s: p95 lies in the second ramp.
		{"heavy tail", [][2]float64{{0.001, 0.002}, {10, 11}}, [2]float64{}, 0.95, 10.0 + (0.95*1.001-0.001)/1, 0.022},
		{"overflow bin up to max", [][2]float64{{11000, 12000}}, [2]float64{}, 1, 12000, 1e-9},
		{"tiny ages in underflow bin", [][2]float64{{0, 5e-6}}, [2]float64{}, 0.5, 2.5e-6, 0.05},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h ageHistogram
			for _, r := range tc.ramps {
				h.add(r[0], r[1])
			}
			require.InEpsilon(t, tc.want, h.quantile(tc.q, tc.open[0], tc.open[1]), tc.relTol)
		})
	}
	var h ageHistogram
	require.Zero(t, h.quantile(0.95, 0, 0), "empty")
}

func BenchmarkAgeMeterDeliver(b *testing.B) {
	var m AgeMeter
	b.ReportAllocs()
	now := clock.Mono(0)
	for i := range b.N {
		now += clock.Mono(10 * time.Millisecond)
		// Alternate short and long teeth across many histogram bins; every
		// 8th delivery is stale.
		gen := now - clock.Mono(time.Duration(1+i%50)*time.Millisecond)
		if i%8 == 7 {
			gen = 0
		}
		m.Deliver(gen, now)
	}
}

// denseHistogram is the histogram holding every bin, as ageHistogram did
// before it held only the range in use: the reference it must agree with.
type denseHistogram struct {
	part  [histBins]float64
	cover [histBins + 1]int64
	total float64
	max   float64
}

func (h *denseHistogram) add(a0, a1 float64) {
	if !(a1 > a0) || a0 < 0 {
		return
	}
	h.total += a1 - a0
	h.max = math.Max(h.max, a1)
	j0, j1 := histBin(a0), histBin(a1)
	if j0 == j1 {
		h.part[j0] += a1 - a0
		return
	}
	h.part[j0] += math.Max(0, histEdges[j0+1]-a0)
	h.part[j1] += math.Max(0, a1-histEdges[j1])
	if j1 > j0+1 {
		h.cover[j0+1]++
		h.cover[j1]--
	}
}

// quantile is ageHistogram.quantile over every bin, the covers expanded
// with int64 counts at query time (no fold).
func (h *denseHistogram) quantile(q, o0, o1 float64) float64 {
	var part [histBins]float64
	var c int64
	for i := range histBins {
		c += h.cover[i]
		part[i] = h.part[i]
		if c != 0 {
			part[i] += float64(c) * (histEdges[i+1] - histEdges[i])
		}
	}
	d := ageHistogram{part: part[:], cover: make([]int8, histBins), total: h.total, max: h.max}
	return d.quantile(q, o0, o1)
}

// The histogram that holds only the bins in use gives the quantiles the
// dense one gives, as its range widens both ways, and holds far fewer bins
// for a flow whose ages span a few octaves.
func TestAgeHistogramHoldsOnlyTheRangeInUse(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var sparse ageHistogram
	var dense denseHistogram
	check := func() {
		for _, q := range []float64{0, 0.05, 0.5, 0.9, 0.95, 0.99, 1} {
			want := dense.quantile(q, 0.01, 0.02)
			require.InDelta(t, want, sparse.quantile(q, 0.01, 0.02), 1e-9*want, "q=%v", q)
		}
	}
	// A flow of 10 updates/s: ages from ~1 ms to ~110 ms. 1000 ramps fold
	// the int8 covers 7 times (each would overflow without).
	for range 1000 {
		a0 := 0.001 + 0.002*rng.Float64()
		a1 := a0 + 0.09 + 0.02*rng.Float64()
		sparse.add(a0, a1)
		dense.add(a0, a1)
	}
	check()
	require.Less(t, len(sparse.part), 300, "7 octaves of 32 bins, not %d", histBins)
	// Then outliers below and above, and into the overflow bin.
	for _, r := range [][2]float64{{2e-6, 1e-5}, {0.5, 30}, {5e-5, 0.2}, {11000, 12000}, {0, 1e-6}} {
		sparse.add(r[0], r[1])
		dense.add(r[0], r[1])
		check()
	}
	require.Equal(t, histBins, len(sparse.part), "the whole range once the ages span it")
}
