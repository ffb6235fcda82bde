package owd

import (
	"math"
	"time"
)

// Thin links (our addition; Tuning.DisableThinLink).
//
// On a link of 100 kbit/s one 1082-byte packet takes 87 ms to serialise.
// The delay rule's targets are in milliseconds of queueing (μ never below
// 5 ms, and μ = β·OWDv_max above that), which on such a link all round to
// "one packet or more": the queue only exists in whole packets, the RFC 3550
// jitter of a queue that moves a packet at a time is tens of milliseconds,
// and the window grows by one packet — a large fraction of a bandwidth-
// delay product of one or two packets — per round trip, far faster than the
// delay feedback, which takes a round trip of several packet times to
// arrive. The result was a standing queue of several packets, most of a
// second (bench/results/history.md, "Thin links").
//
// Once the bottleneck's packet time (dispersion.go) is long — a quarter
// of it exceeds MuFloorDelay, so the link is slower than about 430 kbit/s
// at fresh's packet size — the controller counts its target in packets, as
// Vegas (Brakmo and Peterson, IEEE JSAC 1995) and Copa do:
//
//   - μ stands for at most a quarter of a packet time of queueing, so any
//     standing packet in the queue counts as congestion;
//   - the additive increase is a quarter of a packet per round trip, so
//     the feedback, a round trip late, finds at most one packet too many;
//   - the window may fall below the 2-packet floor, to 1.2 × the path's
//     bandwidth-delay product: the sender keeps 2 packets' worth of window,
//     so the ACK clock never stalls, but paces at the smaller window's
//     rate, so on a path whose bandwidth-delay product is under 2 packets
//     the second packet does not sit in the queue for ever.
//
// The window is counted in packets of the controller's MSS; the packet
// time is measured on the flow's own packets, headers included.

const (
	// thinQueuePackets is the queue target on thin links, in packet times.
	thinQueuePackets = 0.25
	// thinGrowthPackets is the additive increase on thin links, packets
	// per round trip.
	thinGrowthPackets = 0.25
	// thinFloorBDP is the smallest paced window on thin links, in
	// bandwidth-delay products.
	thinFloorBDP = 1.2
)

// thinPacketTime is the bottleneck's packet time when the link is thin,
// else 0.
func (c *Controller) thinPacketTime(a *Analyzer) time.Duration {
	if c.cfg.Tuning.DisableThinLink {
		return 0
	}
	pt := c.disp.packetTime()
	if time.Duration(thinQueuePackets*float64(pt)) <= a.cfg.MuFloorDelay {
		return 0
	}
	return pt
}

// thinTargets applies the thin-link rules to t, given the packet time pt
// of a thin link: μ capped at a quarter packet of queueing, a quarter
// packet of increase per round trip, and, when the bandwidth-delay product
// is under 2 packets, a delay floor of thinFloorBDP of it and a slowdown
// window of half of it (never under a quarter packet), so the slowdown
// drains the queue there too. Below 2 packets the window acts through the
// pacing rate only (Window keeps 2).
func (c *Controller) thinTargets(t *targets, a *Analyzer, pt time.Duration) {
	t.mu = math.Min(t.mu, thinQueuePackets*float64(pt)/float64(a.floored()))
	t.growth = thinGrowthPackets
	if !c.rtt.HasSample() {
		return
	}
	bdp := c.mss * c.rtt.Min().Seconds() / pt.Seconds() // bytes
	t.floor = math.Min(t.floor, math.Max(thinFloorBDP*bdp, c.mss/4))
	t.probe = math.Min(t.probe, math.Max(bdp/2, c.mss/4))
}
