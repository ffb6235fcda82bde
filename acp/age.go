package acp

import (
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// sawtooth integrates the age process at the monitor, Δ(t) = t − g*(t), where
// g*(t) is the newest generation time delivered by t. It is the O(1)
// core shared by AgeMeter (whole-run statistics) and Regulator (per-epoch
// averages): three instants and one running integral, whatever the number of
// deliveries.
//
// The integral is kept up to a frontier, the latest instant the caller has
// integrated to (at least the latest useful delivery). A delivery whose
// reception time lies before the frontier can no longer be placed exactly; it
// is counted as received at the frontier, which overestimates the area by at
// most (frontier − r_i)·(g_i − g*) and keeps memory O(1). Callers that feed
// deliveries in nondecreasing reception order never hit this case.
type sawtooth struct {
	started bool
	start   clock.Mono // reception time of the first delivery: the measurement origin
	gen     clock.Mono // g*: newest generation time delivered so far
	front   clock.Mono // integration frontier, ≥ start
	area    float64    // ∫ Δ(t) dt over [start, front], in s² (seconds of age × seconds)
}

// sawStep describes what one call to deliver did.
type sawStep struct {
	useful  bool          // g_i > g*: the age dropped (always true for the first delivery)
	first   bool          // first delivery: the measurement starts here
	clamped bool          // r_i was before the frontier and was moved to it
	peak    time.Duration // age just before the drop (useful && !first)
	// The age ramp [from, to] integrated on the way to r_i (to > from if any).
	from, to time.Duration
}

// rampArea is ∫_{from}^{to} (t − gen) dt in s²: the trapezoid under one tooth.
func rampArea(gen, from, to clock.Mono) float64 {
	a0 := from.Sub(gen).Seconds()
	d := to.Sub(from).Seconds()
	return d * (a0 + d/2)
}

// advance integrates Δ from the frontier to t with the current g* and returns
// the age ramp covered. It does nothing if t is not after the frontier.
func (s *sawtooth) advance(t clock.Mono) (from, to time.Duration, ok bool) {
	if !s.started || t <= s.front {
		return 0, 0, false
	}
	from, to = s.front.Sub(s.gen), t.Sub(s.gen)
	s.area += rampArea(s.gen, s.front, t)
	s.front = t
	return from, to, true
}

// deliver folds in update (gen, recv). A reception time before the generation
// time (a clock error) is raised to the generation time: age is never negative.
func (s *sawtooth) deliver(gen, recv clock.Mono) sawStep {
	if recv < gen {
		recv = gen
	}
	if !s.started {
		s.started = true
		s.start, s.front, s.gen = recv, recv, gen
		return sawStep{useful: true, first: true}
	}
	if gen <= s.gen {
		// Older than (or as old as) what the monitor already has: the
		// sawtooth is unchanged.
		return sawStep{}
	}
	var st sawStep
	if recv < s.front {
		recv = s.front
		st.clamped = true
	}
	st.from, st.to, _ = s.advance(recv)
	st.useful = true
	st.peak = recv.Sub(s.gen)
	s.gen = gen
	return st
}

// areaAt is the integral over [start, t] for t at or after the frontier
// (t before the frontier is taken at the frontier). It does not move the
// frontier.
func (s *sawtooth) areaAt(t clock.Mono) float64 {
	if !s.started || t <= s.front {
		return s.area
	}
	return s.area + rampArea(s.gen, s.front, t)
}

// AgeMark is a point on the cumulative age integral, taken by AgeMeter.Mark.
// The time-average age between two marks is (A₂ − A₁)/(T₂ − T₁).
type AgeMark struct {
	T     clock.Mono // instant of the mark
	Area  float64    // ∫ Δ(t) dt from the first delivery to T, in s²
	Valid bool       // false before the first delivery (age undefined)
}

// MeanSince returns the time-average age over [prev.T, m.T], or false if either
// mark is invalid or the interval is empty.
func (m AgeMark) MeanSince(prev AgeMark) (time.Duration, bool) {
	if !m.Valid || !prev.Valid || m.T <= prev.T {
		return 0, false
	}
	return secondsToDuration((m.Area - prev.Area) / m.T.Sub(prev.T).Seconds()), true
}

// AgeMeter measures the age of information at a monitor from the deliveries
// (g_i, r_i) it sees, in one time base: time-average age (area under the
// sawtooth over time), peak age, and a time-weighted age percentile.
//
// Age is undefined before the first delivery, so the measurement starts at the
// first delivery's reception time r_1 (the first tooth starts at age r_1 − g_1);
// the first delivery yields no peak. Mean and percentiles cover
// [r_1, end]. Callers comparing policies on one path should therefore compare
// over a common window (two Marks) once every policy has delivered.
//
// Peak age is the age just before each useful delivery (the top of each
// tooth), the peak-age-of-information of the AoI literature.
//
// Percentiles are time-weighted: P(q) is the age that Δ(t) stays at or below
// for a fraction q of the measured time (so p95 is exceeded 5 % of the time),
// the same weighting as the mean. They come from a fixed log-spaced histogram
// of the sawtooth's ramps (see ageHistogram: 32 bins per octave, relative
// resolution 2.2 %, from 10 µs to about 3 h), so memory is bounded (at most
// about 8.5 KiB, 9 bytes per bin between the lowest and highest age seen:
// a few KiB for a flow whose ages span a few octaves) however long the run.
//
// Deliveries may come out of generation order: an update older than one
// already delivered changes nothing. They should come in nondecreasing
// reception order (as a receiver sees them); an earlier reception time is
// counted at the latest one seen (see Clamped).
//
// The zero value is ready to use. Deliver allocates only when an age falls
// outside the bins held so far. AgeMeter is not safe for concurrent use.
type AgeMeter struct {
	saw  sawtooth
	hist ageHistogram

	deliveries, stale, clamped int64
	peaks                      int64
	peakSum                    float64 // s
	peakMax                    time.Duration
}

// Deliver records that the update generated at gen was received at recv. It
// reports whether the update was useful, i.e. newer than everything delivered
// before (the first delivery is useful).
func (m *AgeMeter) Deliver(gen, recv clock.Mono) bool {
	m.deliveries++
	st := m.saw.deliver(gen, recv)
	if !st.useful {
		m.stale++
		return false
	}
	if st.clamped {
		m.clamped++
	}
	if st.to > st.from {
		m.hist.add(st.from.Seconds(), st.to.Seconds())
	}
	if !st.first {
		m.peaks++
		m.peakSum += st.peak.Seconds()
		if st.peak > m.peakMax {
			m.peakMax = st.peak
		}
	}
	return true
}

// Started reports whether a delivery has been seen (age is defined).
func (m *AgeMeter) Started() bool { return m.saw.started }

// Start is the reception time of the first delivery, where measurement begins.
func (m *AgeMeter) Start() clock.Mono { return m.saw.start }

// Newest is g*, the newest generation time delivered (0 before any delivery).
func (m *AgeMeter) Newest() clock.Mono { return m.saw.gen }

// Age is the instantaneous age t − g* (0 before the first delivery).
func (m *AgeMeter) Age(t clock.Mono) time.Duration {
	if !m.saw.started || t < m.saw.gen {
		return 0
	}
	return t.Sub(m.saw.gen)
}

// Mark returns the cumulative age integral at t, for averages over any
// interval with AgeMark.MeanSince. t before the latest delivery is taken at
// the latest delivery (the mark's T says which).
func (m *AgeMeter) Mark(t clock.Mono) AgeMark {
	if !m.saw.started {
		return AgeMark{}
	}
	if t < m.saw.front {
		t = m.saw.front
	}
	return AgeMark{T: t, Area: m.saw.areaAt(t), Valid: true}
}

// Mean is the time-average age over [Start, end], 0 if undefined.
func (m *AgeMeter) Mean(end clock.Mono) time.Duration {
	d, _ := m.Mark(end).MeanSince(AgeMark{T: m.saw.start, Valid: m.saw.started})
	return d
}

// Percentile is the time-weighted q-quantile (0 < q ≤ 1) of age over
// [Start, max(end, latest delivery)], to the histogram's resolution; 0 if
// undefined.
func (m *AgeMeter) Percentile(end clock.Mono, q float64) time.Duration {
	if !m.saw.started {
		return 0
	}
	var o0, o1 float64
	if end > m.saw.front {
		o0, o1 = m.saw.front.Sub(m.saw.gen).Seconds(), end.Sub(m.saw.gen).Seconds()
	}
	return secondsToDuration(m.hist.quantile(q, o0, o1))
}

// PeakMax is the largest peak age seen (0 before the second useful delivery).
func (m *AgeMeter) PeakMax() time.Duration { return m.peakMax }

// PeakMean is the mean of the peak ages (0 before the second useful delivery).
func (m *AgeMeter) PeakMean() time.Duration {
	if m.peaks == 0 {
		return 0
	}
	return secondsToDuration(m.peakSum / float64(m.peaks))
}

// AgeSummary is an AgeMeter's statistics over [Start, End].
type AgeSummary struct {
	Start, End clock.Mono
	Duration   time.Duration // End − Start; 0 means age was never defined
	Mean       time.Duration // time-average age
	P95        time.Duration // time-weighted 95th percentile of age
	PeakMean   time.Duration // mean of the peak ages
	PeakMax    time.Duration // largest peak age
	// Max is the largest age over [Start, End]: the top of the highest
	// tooth, or the age at End if no update arrived for longer than that.
	// PeakMax alone misses that last, unfinished tooth, and P95 could then
	// exceed it; P95 ≤ Max always.
	Max        time.Duration
	Deliveries int64 // every call to Deliver
	Useful     int64 // deliveries that lowered the age (incl. the first)
	Stale      int64 // deliveries older than g*: no effect
	Clamped    int64 // useful deliveries received before the frontier, counted at it
}

// Summary returns the statistics over [Start, end].
func (m *AgeMeter) Summary(end clock.Mono) AgeSummary {
	s := AgeSummary{
		Deliveries: m.deliveries,
		Useful:     m.deliveries - m.stale,
		Stale:      m.stale,
		Clamped:    m.clamped,
		PeakMean:   m.PeakMean(),
		PeakMax:    m.peakMax,
	}
	if !m.saw.started {
		return s
	}
	if end < m.saw.front {
		end = m.saw.front
	}
	s.Start, s.End = m.saw.start, end
	s.Duration = end.Sub(m.saw.start)
	s.Mean = m.Mean(end)
	s.Max = max(m.peakMax, m.Age(end))
	// The histogram's bins are 2.2 % wide: keep the percentile within the
	// exact maximum.
	s.P95 = min(m.Percentile(end, 0.95), s.Max)
	return s
}

// secondsToDuration converts float seconds to a Duration, rounding to the
// nearest nanosecond.
func secondsToDuration(s float64) time.Duration {
	if s >= 0 {
		return time.Duration(s*1e9 + 0.5)
	}
	return time.Duration(s*1e9 - 0.5)
}
