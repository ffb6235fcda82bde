package cc

import "time"

// HyStart++ constants (RFC 9406 §4.3, the RFC's recommended values).
const (
	// hystartMinRTTThresh and hystartMaxRTTThresh clamp the RTT increase
	// that ends slow start: lastRoundMinRTT/8, but at least 4 ms (noise)
	// and at most 16 ms (long paths must not overshoot by much).
	hystartMinRTTThresh  = 4 * time.Millisecond
	hystartMaxRTTThresh  = 16 * time.Millisecond
	hystartMinRTTDivisor = 8
	// hystartNRTTSample is how many RTT samples a round needs before its
	// minimum is trusted.
	hystartNRTTSample = 8
	// hystartCSSGrowthDivisor slows growth in Conservative Slow Start to a
	// quarter of slow start's.
	hystartCSSGrowthDivisor = 4
	// hystartCSSRounds is how many rounds CSS lasts before congestion
	// avoidance, if the delay increase was not spurious.
	hystartCSSRounds = 5
)

// hystart is HyStart++ (RFC 9406): during the initial slow start it watches
// each round's minimum RTT, and when that rises by more than a threshold over
// the previous round's it switches to Conservative Slow Start (CSS), which
// grows a quarter as fast. If the RTT falls back below the level that
// triggered CSS, the exit was spurious and slow start resumes; after
// hystartCSSRounds rounds of CSS the flow enters congestion avoidance with
// ssthresh = cwnd, without having lost a packet.
//
// Rounds are counted in packet numbers: a round ends with the ACK of a packet
// numbered above windowEnd (RFC 9406's "SND.UNA >= windowEnd"). RTT minima
// use 0 for RFC 9406's "infinity" (no sample yet).
type hystart struct {
	windowEnd          PacketNumber
	lastRoundMinRTT    time.Duration
	currentRoundMinRTT time.Duration
	rttSampleCount     int
	inCSS              bool
	cssBaselineMinRTT  time.Duration
	cssRounds          int // CSS rounds completed (the partial first one counts)
}

func newHystart() hystart { return hystart{windowEnd: InvalidPacketNumber} }

// hystartThreshold is RttThresh = clamp(lastRoundMinRTT/8, 4 ms, 16 ms).
func hystartThreshold(lastRoundMinRTT time.Duration) time.Duration {
	return min(max(lastRoundMinRTT/hystartMinRTTDivisor, hystartMinRTTThresh), hystartMaxRTTThresh)
}

// onAck processes one ACK of packet pn with RTT sample rtt (0 = none) during
// the initial slow start; largestSent is the largest packet number sent so
// far. It reports whether CSS has run its course, so slow start must end now.
func (h *hystart) onAck(pn PacketNumber, rtt time.Duration, largestSent PacketNumber) (exitSlowStart bool) {
	if pn > h.windowEnd {
		// A new round (RFC 9406 §4.3: "At the start of each round").
		h.windowEnd = largestSent
		h.lastRoundMinRTT = h.currentRoundMinRTT
		h.currentRoundMinRTT = 0
		h.rttSampleCount = 0
		if h.inCSS {
			h.cssRounds++
			if h.cssRounds >= hystartCSSRounds {
				return true
			}
		}
	}
	if rtt > 0 {
		if h.currentRoundMinRTT == 0 || rtt < h.currentRoundMinRTT {
			h.currentRoundMinRTT = rtt
		}
		h.rttSampleCount++
	}
	if h.rttSampleCount < hystartNRTTSample || h.currentRoundMinRTT == 0 {
		return false
	}
	if !h.inCSS {
		if h.lastRoundMinRTT != 0 &&
			h.currentRoundMinRTT >= h.lastRoundMinRTT+hystartThreshold(h.lastRoundMinRTT) {
			h.inCSS = true
			h.cssBaselineMinRTT = h.currentRoundMinRTT
			h.cssRounds = 0
		}
	} else if h.currentRoundMinRTT < h.cssBaselineMinRTT {
		// The delay increase was spurious: back to slow start.
		h.inCSS = false
		h.cssBaselineMinRTT = 0
	}
	return false
}
