package cc

import "time"

// RTTStats keeps the round-trip estimators of RFC 6298 §2 (SRTT, RTTVAR with
// α = 1/8, β = 1/4) and the minimum RTT seen. Controllers that need them keep
// their own copy and feed it from AckSample.RTT.
type RTTStats struct {
	latest time.Duration
	srtt   time.Duration
	rttvar time.Duration
	min    time.Duration
}

// Update folds in one RTT sample; non-positive samples are ignored.
func (r *RTTStats) Update(sample time.Duration) {
	if sample <= 0 {
		return
	}
	r.latest = sample
	if r.min == 0 || sample < r.min {
		r.min = sample
	}
	if r.srtt == 0 {
		// RFC 6298 §2.2: first measurement.
		r.srtt = sample
		r.rttvar = sample / 2
		return
	}
	// RFC 6298 §2.3: RTTVAR first, with the old SRTT.
	diff := r.srtt - sample
	if diff < 0 {
		diff = -diff
	}
	r.rttvar = (3*r.rttvar + diff) / 4
	r.srtt = (7*r.srtt + sample) / 8
}

// ResetMin forgets the minimum, e.g. after a route change.
func (r *RTTStats) ResetMin() { r.min = r.latest }

// Latest is the most recent sample (0 if none).
func (r *RTTStats) Latest() time.Duration { return r.latest }

// Smoothed is SRTT (0 if no sample yet).
func (r *RTTStats) Smoothed() time.Duration { return r.srtt }

// Var is RTTVAR.
func (r *RTTStats) Var() time.Duration { return r.rttvar }

// Min is the minimum RTT seen (0 if none).
func (r *RTTStats) Min() time.Duration { return r.min }

// HasSample reports whether at least one sample was taken.
func (r *RTTStats) HasSample() bool { return r.srtt != 0 }
