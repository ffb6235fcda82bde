package cc

import "time"

// Shared window arithmetic used by every window-based controller.

// MinWindowPackets is the window floor in packets: RFC 5681 §3.1 never lets
// ssthresh fall below 2·SMSS, and the owd controller keeps the same 2-packet
// floor.
const MinWindowPackets = 2

// InitialWindowPackets is the initial window in packets (RFC 6928 allows 10;
// quic-go and Linux use 10).
const InitialWindowPackets = 10

// sizeDefaults resolves a configuration's MSS and initial window, both in
// bytes: DefaultMSS for mss <= 0, InitialWindowPackets·MSS for iw <= 0.
// Each controller then applies its own floor.
func sizeDefaults(mss, iw ByteCount) (ByteCount, ByteCount) {
	if mss <= 0 {
		mss = DefaultMSS
	}
	if iw <= 0 {
		iw = InitialWindowPackets * mss
	}
	return mss, iw
}

// WindowLimited reports whether a flow with priorInFlight bytes outstanding
// was using its window, so growing the window is justified (RFC 7661 §4.1:
// do not grow cwnd while application-limited). In slow start a flow counts
// as limited once it has at least half the window out, because the window
// doubles each RTT and the application may simply not have caught up yet
// (the same allowance quic-go and Linux's tcp_is_cwnd_limited make).
func WindowLimited(priorInFlight, cwnd, mss ByteCount, slowStart bool) bool {
	if priorInFlight >= cwnd {
		return true
	}
	if slowStart && priorInFlight > cwnd/2 {
		return true
	}
	// Within 3 packets of the window counts as full: ACK compression and
	// pacing granularity keep a saturating sender a little below cwnd.
	return cwnd-priorInFlight <= 3*mss
}

// PacingRate spreads cwnd over srtt with a gain: Linux paces at 200 % of
// cwnd/srtt in slow start and 120 % in congestion avoidance
// (sysctl tcp_pacing_ss_ratio / tcp_pacing_ca_ratio) so pacing never becomes
// the bottleneck. Without an RTT sample it returns 0, meaning "do not pace";
// with one it is at least 1 bit/s.
func PacingRate(cwnd ByteCount, srtt time.Duration, slowStart bool) Bandwidth {
	if srtt <= 0 || cwnd <= 0 {
		return 0
	}
	gain := 1.2
	if slowStart {
		gain = 2.0
	}
	bps := gain * float64(cwnd) * 8 / srtt.Seconds()
	// At least 1 bit/s: a rate that truncated to 0 would read "do not
	// pace" and turn a (nonsense) RTT of hours into an unpaced burst.
	return max(Bandwidth(bps), 1)
}
