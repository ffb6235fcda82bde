package traces

import (
	"math"
	"slices"
	"time"
)

// Bins counts the delivery opportunities of one period in consecutive bins
// of width: bin k holds those at trace times in [k·width, (k+1)·width).
// The opportunities of the last line, at the period itself, are those of
// time 0 of the next pass (the trace repeats), so they count in bin 0.
// The last bin is partial when width does not divide the period. nil for
// width ≤ 0.
func (t *Trace) Bins(width time.Duration) []int64 {
	if width <= 0 {
		return nil
	}
	period := t.Period()
	n := int((period + width - 1) / width)
	bins := make([]int64, n)
	c, _ := t.Start(0)
	for left := t.opportunities; left > 0; {
		ms, k := c.Next()
		at := time.Duration(ms) * time.Millisecond % period
		bins[int(at/width)] += k
		left -= k
	}
	return bins
}

// Summary describes a trace as its README table does.
type Summary struct {
	Length        time.Duration // the period
	Opportunities int64         // lines
	// MeanMbps is the capacity over the whole period, Mbit/s.
	MeanMbps float64
	// P10Mbps and P90Mbps are the 10th and 90th percentiles (nearest rank)
	// of the capacity of each whole second of the trace, Mbit/s; a partial
	// last second is left out of them (its rate over a few milliseconds
	// would be noise).
	P10Mbps, P90Mbps float64
	// IdleSeconds counts the whole seconds without any delivery
	// opportunity: outages a controller must ride out.
	IdleSeconds int
}

// Summarize computes t's Summary.
func Summarize(t *Trace) Summary {
	s := Summary{Length: t.Period(), Opportunities: t.opportunities, MeanMbps: float64(t.MeanRate()) / 1e6}
	bins := t.Bins(time.Second)
	bins = bins[:int(t.Period()/time.Second)] // whole seconds only
	rates := make([]float64, len(bins))
	for i, n := range bins {
		rates[i] = float64(n) * OpportunityBytes * 8 / 1e6
		if n == 0 {
			s.IdleSeconds++
		}
	}
	slices.Sort(rates)
	s.P10Mbps, s.P90Mbps = nearestRank(rates, 0.10), nearestRank(rates, 0.90)
	return s
}

// nearestRank is the nearest-rank percentile q of sorted xs (0 if empty),
// the definition bench/report uses for delays.
func nearestRank(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
