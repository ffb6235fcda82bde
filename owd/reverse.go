package owd

import "time"

// Reverse-path compensation (our addition; Tuning.DisableReverseCompensation).
//
// A window controller sends at cwnd/RTT. When the ACK path queues — the
// scenario the paper's Fig. 7 is about — RTT grows while the forward path is
// unchanged, so the sending rate falls although the one-way signal says
// "room"; when the ACK queue drains, the same window arrives as a burst and
// floods the forward queue. OWD lets us tell the two apart: the part of the
// RTT increase that the forward queueing delay does not explain,
//
//	revQ = (RTTcur − RTTmin) − (OWDcur − OWDmin),   clamped to ≥ 0,
//
// is queueing on the reverse path. The controller keeps its window calibrated
// to the round trip without it and exposes
//
//	W = cwnd · RTTcur / (RTTcur − revQ)
//
// so the forward rate W/RTTcur stays cwnd/(RTTcur − revQ) whatever the ACK
// path does. Only while the OWD signal is trusted: in RTT fallback the two
// queues cannot be told apart. The scale is capped (maxReverseScale) so a
// wild RTT sample cannot open the window without bound.
//
// The same factor divides the per-ACK window steps. The delay signal reaches
// the sender one full RTT after the queue it describes, and ACKs arrive at
// the forward rate cwnd/(RTT − revQ), so over that feedback delay the
// controller applies RTT/(RTT − revQ) = W/cwnd times as many steps as on an
// uncongested ACK path: it keeps decreasing long after the forward queue has
// drained (and the link idles), then overshoots on the way up. Dividing each
// step by the scale restores the loop gain of the forward loop alone; with
// the ACK path uncongested the scale is 1 and nothing changes.

// maxReverseScale caps W/cwnd: reverse queueing up to 3× the rest of the
// round trip is compensated, beyond that the flow slows down as plain TCP.
const maxReverseScale = 4.0

// reverseScale returns RTTcur/(RTTcur − revQ) from filtered RTT/2 and OWD
// values (each the min of the last few samples, as OWDcur is).
func reverseScale(rttHalfCur, rttHalfMin, owdCur, owdMin time.Duration) float64 {
	if rttHalfCur <= 0 || rttHalfMin <= 0 || owdCur <= 0 || owdMin <= 0 {
		return 1
	}
	rttCur := 2 * rttHalfCur
	revQ := (rttCur - 2*rttHalfMin) - max(owdCur-owdMin, 0)
	if revQ <= 0 {
		return 1
	}
	rest := rttCur - revQ
	if rest <= 0 {
		return maxReverseScale
	}
	return min(float64(rttCur)/float64(rest), maxReverseScale)
}
