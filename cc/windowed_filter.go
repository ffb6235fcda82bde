package cc

import "cmp"

// windowedFilter is a windowed running maximum (or, with isMin, minimum): the
// best value seen within the last `window` units of time, where time is
// whatever monotone counter the caller uses (BBR times its bandwidth filter
// in packet-timed round trips, Copa its RTT filters in nanoseconds).
//
// It is Kathleen Nichols' windowed min/max estimator as the BBR paper
// (Cardwell et al., "BBR: Congestion-Based Congestion Control", ACM Queue
// 2016, "Estimating BtlBw") prescribes for BtlBw: instead of keeping every
// sample of the window it keeps three, the best, second-best and third-best
// values of three successive sub-windows, each with the time it was taken.
// When the best ages out the second-best takes its place, so the estimate
// moves in steps as the window slides, never by more than the samples
// justify, and an update costs O(1) without allocating.
//
// Invariant: s[0] is at least as good as s[1], s[1] as s[2], and
// s[0].t <= s[1].t <= s[2].t. The zero value is a maximum filter holding
// the zero value; a minimum filter should be reset with its first sample.
type windowedFilter[V cmp.Ordered] struct {
	s     [3]filterSample[V]
	isMin bool // keep the smallest value instead of the largest
}

// maxFilter is BBR's BtlBw filter: a windowed maximum of delivery rates.
type maxFilter = windowedFilter[Bandwidth]

type filterSample[V cmp.Ordered] struct {
	t uint64 // when the sample was taken (caller's unit)
	v V      // the sample
}

// asGood reports whether a is at least as good as b (>= for a maximum,
// <= for a minimum filter).
func (f *windowedFilter[V]) asGood(a, b V) bool {
	if f.isMin {
		return a <= b
	}
	return a >= b
}

// get returns the windowed best (the zero value before any sample).
func (f *windowedFilter[V]) get() V { return f.s[0].v }

// reset forgets every sample and starts over with v at time t.
func (f *windowedFilter[V]) reset(t uint64, v V) {
	f.s = [3]filterSample[V]{{t, v}, {t, v}, {t, v}}
}

// update folds in sample v taken at time t (t never decreases) and returns
// the new best over [t−window, t].
func (f *windowedFilter[V]) update(window, t uint64, v V) V {
	n := filterSample[V]{t, v}
	// A new overall best, or nothing left inside the window (even the
	// newest kept sample is too old): the new sample is all three.
	if f.asGood(v, f.s[0].v) || t-f.s[2].t > window {
		f.reset(t, v)
		return v
	}
	switch {
	case f.asGood(v, f.s[1].v):
		f.s[1], f.s[2] = n, n
	case f.asGood(v, f.s[2].v):
		f.s[2] = n
	}
	return f.subWindowUpdate(window, n)
}

// subWindowUpdate ages the kept samples: the best expires after a window,
// and the second- and third-best are refreshed with the newest sample once a
// quarter and a half of the window has passed without a better one, so that
// a sample from each part of the window is always on hand to succeed the
// best when it expires.
func (f *windowedFilter[V]) subWindowUpdate(window uint64, n filterSample[V]) V {
	dt := n.t - f.s[0].t
	switch {
	case dt > window:
		// The best is out of the window: promote the others; if the new
		// best is out too, promote once more.
		f.s[0], f.s[1], f.s[2] = f.s[1], f.s[2], n
		if n.t-f.s[0].t > window {
			f.s[0], f.s[1] = f.s[1], f.s[2]
		}
	case f.s[1].t == f.s[0].t && dt > window/4:
		// A quarter of the window has passed with the second-best still
		// the best itself: take the newest as second (and third) best.
		f.s[1], f.s[2] = n, n
	case f.s[2].t == f.s[1].t && dt > window/2:
		// Half the window has passed with no third-best of its own.
		f.s[2] = n
	}
	return f.s[0].v
}
