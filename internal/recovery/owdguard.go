package recovery

import "time"

// owdGuard screens the one-way delays the receiver stamps on its ACKs
// before the controller sees them (Tracker.OnAck). The receiver measures
// them against its estimate of the sender's clock, so an honest sample is
// off by at most that estimate's error u; a sample off by more is
// impossible, whether from a broken clock or a peer steering the sender's
// delay-based controller (one that reports delays below the truth makes
// the sender queue more than it would), in the spirit of RFC 9000 §21.4
// (a peer lying about what it received). Such samples are counted
// (AckResult.OWDDiscarded) and dropped; the ACK itself still counts.
//
// A sample is impossible when:
//   - it is below −u: nothing arrives before it was sent;
//   - it exceeds the packet's own round trip by more than u: the data's
//     one-way trip is a part of that round trip;
//   - it is below the smallest sample so far by more than 2u (each of the
//     two may be off by u, in opposite directions) plus how much shorter
//     its packet's round trip was than that sample's: a forward queue that
//     drained, or a shorter path, shows in the round trip too, which the
//     sender measures itself. A lone
//     sample that far down is a glitch or a lie; but the peer's offset
//     estimate is refitted as its history moves (an estimate made while
//     queues stood can be off by more than half the minimum RTT, and the
//     refit then shifts every later sample down), so after
//     OWDShiftSamples such samples in a row the lower level is taken as
//     the new baseline rather than starving the controller. A peer lying
//     consistently from then on is no worse than one lying from the start,
//     which no screen can tell from an asymmetric path.
//
// Only samples the peer marks as measured against a trusted offset are
// screened: before that they carry the raw clock offset, which may be
// anything, and controllers ignore them anyway.
type owdGuard struct {
	floor    time.Duration // smallest sample accepted
	floorRTT time.Duration // the round trip of floor's packet
	below    uint8         // samples in a row discarded as below the floor (up to OWDShiftSamples)
	has      bool
}

// OWDShiftSamples is how many samples in a row below the floor move it: a
// few ACKs' worth, a fraction of an RTT of a loaded stream.
const OWDShiftSamples = 8

// OWDUncertainty is u for a path whose minimum RTT is minRTT (0: none
// yet): half the minimum RTT, the bound on an NTP-style offset estimate's
// error when the path is as asymmetric as it can be (RFC 5905 §8: the
// offset is known to within half the round-trip delay), plus 1 ms for the
// stamps' and timers' granularity (RFC 9002's kGranularity). A tighter u
// would discard honest samples on asymmetric paths, and a controller
// starved of samples is worse than one fed a lie within u.
func OWDUncertainty(minRTT time.Duration) time.Duration {
	return time.Millisecond + minRTT/2
}

// check reports whether owd, a trusted sample for a packet whose round
// trip was rtt, is possible on a path of minimum RTT minRTT, and takes it
// into the floor if so.
func (g *owdGuard) check(owd, rtt, minRTT time.Duration) bool {
	u := OWDUncertainty(minRTT)
	switch {
	case owd < -u:
		return false
	case owd > rtt+u:
		return false
	case g.has && owd < g.floor-2*u-max(g.floorRTT-rtt, 0):
		g.below++
		if g.below < OWDShiftSamples {
			return false
		}
		g.floor, g.floorRTT = owd, rtt // a persistent shift: the new baseline
	}
	g.below = 0
	if !g.has || owd < g.floor {
		g.floor, g.floorRTT, g.has = owd, rtt, true
	}
	return true
}
