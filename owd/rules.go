package owd

import "time"

// windowRule is the congestion-avoidance step of a variant: the window change
// in packets for one acknowledged packet, given the delay state. It is an
// interface, not a mode flag, so each variant is its own named type.
type windowRule interface {
	// delta returns the window change in packets per acknowledged packet.
	// v is OWDv, mu is μ, cur and base are OWDcur and OWDmin (base already
	// floored), cwnd is the window in packets.
	delta(v, mu float64, cur, base time.Duration, cwnd float64) float64
}

// eq2 is the paper's traffic-intensity rate controller, Eq. 2:
//
//	OWDv > 2μ      cwnd −= 1/cwnd  (about −1 packet per RTT)
//	μ < OWDv ≤ 2μ  cwnd unchanged
//	OWDv ≤ μ       cwnd += 1/cwnd  (about +1 packet per RTT)
//
// The paper prints the middle row as "OWDv > μ" and the last as "cwnd < μ";
// read as ranges of OWDv, they are the three rows above.
type eq2 struct{}

func (eq2) delta(v, mu float64, _, _ time.Duration, cwnd float64) float64 {
	switch {
	case v > 2*mu:
		return -1 / cwnd
	case v > mu:
		return 0
	default:
		return 1 / cwnd
	}
}

// eq7 is the paper's Eq. 7, w(t+1) = w(t) + (d_s − D_s(t))/D_s(t)², with
// d_s = OWDmin and D_s = OWDcur. Read literally the step depends on the unit
// of time (−4 packets per ACK in seconds at d = 50 ms, D = 70 ms; −0.004 in
// ms), so the delays are normalised by d_s:
//
//	Δw = (1 − D/d) / (D/d)²   per ACK, when OWDv > μ
//
// and keeps Eq. 2's +1/cwnd otherwise. Since D/d = 1 + OWDv the decrease is
// −OWDv/(1+OWDv)² per ACK, about −cwnd·OWDv/(1+OWDv)² per RTT: unlike Eq. 2
// it is multiplicative per RTT, which is what drives competing flows toward
// equal windows (Chiu & Jain's AIMD argument).
type eq7 struct{}

func (eq7) delta(v, mu float64, cur, base time.Duration, cwnd float64) float64 {
	if v <= mu {
		return 1 / cwnd
	}
	r := float64(cur) / float64(base)
	return (1 - r) / (r * r)
}
