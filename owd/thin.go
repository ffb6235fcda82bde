package owd

import (
	"math"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
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
// arrive. The result was a queue of 4–6 packets, 0.8 s.
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

// packetTime is the bottleneck's packet time when the link is thin, else 0.
func (c *Controller) packetTime(a *Analyzer) time.Duration {
	if c.cfg.Tuning.DisableThinLink {
		return 0
	}
	pt := c.disp.packetTime()
	if time.Duration(thinQueuePackets*float64(pt)) <= a.cfg.MuFloorDelay {
		return 0
	}
	return pt
}

// mu is the threshold of the delay rule: the analyzer's μ, capped on thin
// links at thinQueuePackets packet times of queueing.
func (c *Controller) mu(now clock.Mono, a *Analyzer) float64 {
	mu := a.Mu(now)
	if pt := c.packetTime(a); pt > 0 {
		mu = math.Min(mu, thinQueuePackets*float64(pt)/float64(a.floored()))
	}
	return mu
}

// growthScale scales the additive increase: 1, or thinGrowthPackets on
// thin links.
func (c *Controller) growthScale(a *Analyzer) float64 {
	if c.packetTime(a) > 0 {
		return thinGrowthPackets
	}
	return 1
}

// probeWindow is the window of a base-delay slowdown: the 2-packet floor,
// or on a thin link whose bandwidth-delay product is under 2 packets, half
// of it (never under a quarter packet), so the slowdown drains the queue
// there too.
func (c *Controller) probeWindow() float64 {
	f := cc.MinWindowPackets * c.mss
	if bdp := c.thinBDP(); bdp > 0 {
		return math.Min(f, math.Max(bdp/2, c.mss/4))
	}
	return f
}

// thinBDP is the path's bandwidth-delay product in bytes on a thin link,
// 0 elsewhere or while unknown.
func (c *Controller) thinBDP() float64 {
	pt := c.packetTime(c.active())
	if pt <= 0 || !c.rtt.HasSample() {
		return 0
	}
	return c.mss * c.rtt.Min().Seconds() / pt.Seconds()
}

// delayFloor is the smallest window a delay-driven decrease may reach: the
// 2-packet floor, or on a thin link whose bandwidth-delay product is under
// 2 packets, thinFloorBDP of it (never under a quarter packet). Below 2
// packets the window acts through the pacing rate only (Window keeps 2).
func (c *Controller) delayFloor() float64 {
	f := cc.MinWindowPackets * c.mss
	if bdp := c.thinBDP(); bdp > 0 {
		return math.Min(f, math.Max(thinFloorBDP*bdp, c.mss/4))
	}
	return f
}
