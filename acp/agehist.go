package acp

import "math"

// Age histogram geometry. Bin 0 is [0, histMin); bins 1 … histOctaves·histPerOctave
// are log-spaced, bin i covering [histMin·2^((i−1)/32), histMin·2^(i/32)), so every
// bin is 2^(1/32) − 1 ≈ 2.2 % wide relative to its lower edge (the relative
// resolution of a percentile); the last bin is the overflow [histMin·2^30, ∞),
// histMin·2^30 ≈ 10 737 s ≈ 3 h, beyond any age a live update flow should see.
const (
	histMin       = 10e-6 // s: 10 µs, below one packet time on any real link
	histPerOctave = 32
	histOctaves   = 30
	histBins      = 1 + histPerOctave*histOctaves + 1 // underflow + log bins + overflow
)

// histEdges[i] is the lower edge of bin i in seconds; histEdges[histBins] = +Inf.
var histEdges = func() (e [histBins + 1]float64) {
	for i := 1; i < histBins; i++ {
		e[i] = histMin * math.Exp2(float64(i-1)/histPerOctave)
	}
	e[histBins] = math.Inf(1)
	return e
}()

// histBin returns the bin holding age a (seconds, ≥ 0).
func histBin(a float64) int {
	if a < histEdges[1] {
		return 0
	}
	i := 1 + int(math.Log2(a/histMin)*histPerOctave)
	if i > histBins-1 {
		i = histBins - 1
	}
	// Log2 may round across an edge; the edge table is the truth.
	for i > 1 && a < histEdges[i] {
		i--
	}
	for i < histBins-1 && a >= histEdges[i+1] {
		i++
	}
	return i
}

// ageHistogram is the time-weighted distribution of age. Between deliveries
// age rises at one second per second, so a ramp from age a₀ to a₁ spends
// exactly |[a₀, a₁) ∩ bin| seconds in each bin. Adding a ramp is O(1): the two
// end bins get their partial overlap in part, and the fully covered bins in
// between are recorded in a difference array (cover) that quantile expands
// with a prefix sum.
//
// Only the bins from the lowest to the highest age seen are held (part and
// cover start at bin lo), grown when a ramp reaches outside them: a flow's
// ages span a few octaves, not the 30 the geometry allows, so a meter holds
// a few hundred bytes to a few KiB (9 bytes a bin) instead of all 8.5 KiB,
// which matters to a monitor keeping one per source. cover is int8, not
// int64: every histFold ramps it is folded into part (fold), so no entry
// exceeds histFold in magnitude; the fold is one pass over the held bins,
// a few operations per ramp on average.
type ageHistogram struct {
	lo    int       // the bin part[0] and cover[0] stand for
	part  []float64 // s spent in each bin by ramps that end inside it, and by covering ramps up to the last fold
	cover []int8    // difference array: ramps covering bin i entirely since the last fold
	adds  int       // ramps with a cover since the last fold
	total float64   // s: sum of all ramp lengths
	max   float64   // s: largest age seen
}

// histFold is how many covering ramps cover takes before fold: each changes
// an entry by at most one.
const histFold = math.MaxInt8

// fold moves the covering ramps recorded in cover into part.
func (h *ageHistogram) fold() {
	var c int64
	for k := range h.cover {
		c += int64(h.cover[k])
		h.cover[k] = 0
		if c != 0 { // never for the overflow bin (its width is infinite)
			h.part[k] += float64(c) * (histEdges[h.lo+k+1] - histEdges[h.lo+k])
		}
	}
	h.adds = 0
}

// histGrain is the granularity (bins) the held range grows by, so a slowly
// widening range does not reallocate on every new bin.
const histGrain = 16

// hold makes bins j0..j1 part of the held range.
func (h *ageHistogram) hold(j0, j1 int) {
	hi := h.lo + len(h.part) // one past the last held bin
	if h.part != nil && j0 >= h.lo && j1 < hi {
		return
	}
	lo, end := j0, j1+1
	if h.part != nil {
		lo, end = min(lo, h.lo), max(end, hi)
	}
	lo = max(lo/histGrain*histGrain, 0)
	end = min((end+histGrain-1)/histGrain*histGrain, histBins)
	part, cover := make([]float64, end-lo), make([]int8, end-lo)
	if h.part != nil {
		copy(part[h.lo-lo:], h.part)
		copy(cover[h.lo-lo:], h.cover)
	}
	h.lo, h.part, h.cover = lo, part, cover
}

// add records a ramp of age from a0 to a1 seconds (a0 < a1).
func (h *ageHistogram) add(a0, a1 float64) {
	if !(a1 > a0) || a0 < 0 {
		return
	}
	h.total += a1 - a0
	if a1 > h.max {
		h.max = a1
	}
	j0, j1 := histBin(a0), histBin(a1)
	h.hold(j0, j1)
	if j0 == j1 {
		h.part[j0-h.lo] += a1 - a0
		return
	}
	h.part[j0-h.lo] += math.Max(0, histEdges[j0+1]-a0)
	h.part[j1-h.lo] += math.Max(0, a1-histEdges[j1])
	if j1 > j0+1 {
		if h.adds == histFold {
			h.fold()
		}
		h.adds++
		h.cover[j0+1-h.lo]++
		h.cover[j1-h.lo]--
	}
}

// overlap is the length of [a0, a1) ∩ [lo, hi).
func overlap(a0, a1, lo, hi float64) float64 {
	return math.Max(0, math.Min(a1, hi)-math.Max(a0, lo))
}

// quantile returns the age (s) below which the distribution spends a fraction
// q of its time, including an extra open ramp [o0, o1) not yet added (o1 ≤ o0
// for none). Inside a bin it interpolates linearly. 0 if the histogram is empty.
func (h *ageHistogram) quantile(q, o0, o1 float64) float64 {
	open := math.Max(0, o1-o0)
	total := h.total + open
	if total <= 0 {
		return 0
	}
	q = math.Min(math.Max(q, 0), 1)
	target := q * total
	maxAge := math.Max(h.max, o1)
	var cum float64
	var c int64
	for i := range histBins {
		var t float64
		if k := i - h.lo; k >= 0 && k < len(h.part) { // outside, both are 0
			c += int64(h.cover[k])
			t = h.part[k]
		}
		lo, hi := histEdges[i], histEdges[i+1]
		if c > 0 { // never for the overflow bin: it is never covered entirely
			t += float64(c) * (hi - lo)
		}
		if open > 0 {
			t += overlap(o0, o1, lo, hi)
		}
		if t > 0 && cum+t >= target {
			if i == histBins-1 {
				hi = maxAge
			}
			hi = math.Min(hi, maxAge)
			return lo + (target-cum)/t*(hi-lo)
		}
		cum += t
	}
	return maxAge // rounding left target just above the sum
}
