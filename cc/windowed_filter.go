package cc

// maxFilter is a windowed running maximum: the largest value seen within the
// last `window` units of time, where time is whatever monotone counter the
// caller uses (BBR times its bandwidth filter in packet-timed round trips).
//
// It is Kathleen Nichols' windowed min/max estimator as the BBR paper
// (Cardwell et al., "BBR: Congestion-Based Congestion Control", ACM Queue
// 2016, "Estimating BtlBw") prescribes for BtlBw: instead of keeping every
// sample of the window it keeps three, the best, second-best and third-best
// values of three successive sub-windows, each with the time it was taken.
// When the best ages out the second-best takes its place, so the estimate
// falls in steps as the window slides, never by more than the samples
// justify, and an update costs O(1) without allocating.
//
// Invariant: s[0].v >= s[1].v >= s[2].v and s[0].t <= s[1].t <= s[2].t.
type maxFilter struct {
	s [3]filterSample
}

type filterSample struct {
	t uint64    // when the sample was taken (caller's unit)
	v Bandwidth // the sample
}

// get returns the windowed maximum (0 before any sample).
func (f *maxFilter) get() Bandwidth { return f.s[0].v }

// reset forgets every sample and starts over with v at time t.
func (f *maxFilter) reset(t uint64, v Bandwidth) {
	f.s = [3]filterSample{{t, v}, {t, v}, {t, v}}
}

// update folds in sample v taken at time t (t never decreases) and returns
// the new maximum over [t−window, t].
func (f *maxFilter) update(window, t uint64, v Bandwidth) Bandwidth {
	n := filterSample{t, v}
	// A new overall maximum, or nothing left inside the window (even the
	// newest kept sample is too old): the new sample is all three.
	if v >= f.s[0].v || t-f.s[2].t > window {
		f.reset(t, v)
		return v
	}
	switch {
	case v >= f.s[1].v:
		f.s[1], f.s[2] = n, n
	case v >= f.s[2].v:
		f.s[2] = n
	}
	return f.subWindowUpdate(window, n)
}

// subWindowUpdate ages the kept samples: the best expires after a window,
// and the second- and third-best are refreshed with the newest sample once a
// quarter and a half of the window has passed without a better one, so that
// a sample from each part of the window is always on hand to succeed the
// best when it expires.
func (f *maxFilter) subWindowUpdate(window uint64, n filterSample) Bandwidth {
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
