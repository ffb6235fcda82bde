package owd

import "time"

// The fair-share term (our addition; Tuning.DisableFairShare).
//
// Every owd flow on a queue aims at the same queueing delay (the noise
// floor, μ's floor), and a shared delay target says nothing about how
// the link is split: any split that holds the queue there is at rest, so
// the split is whatever history left (the first flow, the shorter round
// trip). Vegas and Copa settle the split because each flow keeps a number
// of its own packets in the queue (Brakmo and Peterson, "TCP Vegas: End
// to End Congestion Avoidance on a Global Internet", IEEE JSAC 1995, §3.2:
// α to β packets; Arun and Balakrishnan, "Copa: Practical Delay-Based
// Congestion Control for the Internet", NSDI 2018, §2.1: the target rate
// 1/(δ·d_q) puts 1/δ packets of each flow in the queue): a flow with a
// smaller rate needs a longer queue to hold its packets, and grows, until
// the rates are equal whatever the round trips.
//
// owd keeps its noise floor and adds the same restoring force on top: the
// target queue is raised by fairSharePackets packet times of the flow's
// own rate, 1/λ = SRTT/cwnd, less the bottleneck's packet time p
// (packet-pair dispersion), which is what a flow alone on the link gets:
//
//	extra = fairSharePackets · max(SRTT/cwnd − p, 0)
//
// Alone on a link at its rate the term is zero; among n flows at a fair
// split each adds (n−1)·p; a flow with less than the others adds more and
// takes the room. It is at most fairShareCap of MuFloorDelay, since on a
// link slower now than its packet pairs said (a cellular link's dip) the
// term reads the slowdown as other flows and every bit of it is delay; it
// is zero while Copa's test counts windows in which the queue did not
// nearly empty (compete.go): beside a standing queue the term would only
// lift the window off the floor where the push test and the starved-loss
// rule look for a buffer filler, and on a link whose capacity fell it
// would add to a queue the flow is already draining.
//
// What it measured (bench/results/owd-round4.md): under one CoDel queue
// beside NewReno, a flow with a small share holds its window a little
// longer above CoDel's target; among owd flows of different round trips
// the split evens out.
const (
	fairSharePackets = 1
	fairShareCap     = 0.5
)

// fairShareExtra is the term, the queueing delay it adds to the target.
func (c *Controller) fairShareExtra() time.Duration {
	p := c.disp.packetTime()
	if c.cfg.Tuning.DisableFairShare || !c.rtt.HasSample() || p <= 0 || c.cwnd <= 0 || c.comp.empty.full > 0 {
		return 0
	}
	perPacket := time.Duration(float64(c.rtt.Smoothed()) / (c.cwnd / c.mss))
	extra := fairSharePackets * max(perPacket-p, 0)
	return min(extra, time.Duration(fairShareCap*float64(c.owdA.cfg.MuFloorDelay)))
}
