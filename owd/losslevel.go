package owd

import "github.com/fresh-udp/fresh/cc"

// lossLevels asks whether the losses follow the window, which tells random
// loss from a buffer's overflow when the queueing delay cannot (our
// addition; Tuning.DisableLossLevelTest).
//
// freeLoss lets a loss with a short queue cost nothing while under
// freeLossRate of the packets are lost, because a buffer too shallow to
// show as queueing delay overflows at a rate that grows with the window,
// and above that rate the window must stop growing. But random loss of
// 3 % (a radio link, a long lossy path) is above it too, and then every
// round trip costs ×NonCongestiveLossFactor and a round trip of recovery
// without growth: at 300 ms and 12 Mbit/s the window fell to a small
// fraction of the path (bench/results/owd-losslevel.md). At one window the
// two cannot be told apart — per round trip, what was in flight is what was
// delivered plus what was lost, whatever dropped it — but across windows
// they can: overflow appears only above the window at which the path (pipe
// and buffer) is full, and stops below it, while random loss takes the same
// share of packets at every window.
//
// So the window at which losses last cut it is kept as a level, hi, as
// BBRv2 keeps inflight_hi, the in-flight level at which the loss rate of
// a round passed its threshold (Cardwell et al., "BBRv2: A Model-Based
// Congestion Control", IETF 104 ICCRG, 2019; draft-cardwell-iccrg-bbr-
// congestion-control-02 §4.5.10.2). The share of packets lost is measured
// apart above hi and below it: after a cut the window regrows from below
// hi, and that is the experiment. When the loss rate above hi is at most
// lossFollowRatio × the rate below it, the losses do not follow the
// window: they are random, and a loss costs the window nothing whatever
// the loss rate and the queue, as long as the window is above its floor
// (freeLoss). An overflow leaves the rate below hi near zero, and the
// queue and the freeLossRate cap judge as before.
type lossLevels struct {
	hi        float64 // window, bytes, at the last loss cut; 0: none yet
	high, low float64 // EWMAs (gain lossRateGain) of the share lost above and below hi
	// A packet counts at the window it was sent with, not the one its
	// fate is learned at: the losses a cut is answering arrive after it,
	// below hi, and would count an overflow as loss below the level. The
	// packets sent below hi are the current stretch, from lowFrom
	// (cc.InvalidPacketNumber: the window is at or above hi), and the
	// stretch before, [prevFrom, prevTo); a packet's fate is known within
	// a round trip, and a stretch lasts at least one.
	lowFrom, prevFrom, prevTo cc.PacketNumber
}

// lossFollowRatio: losses follow the window when the share lost above hi
// is more than this multiple of the share lost below it. Random loss gives
// a ratio near 1 (each EWMA spans ~500 packets: at 3 % loss, 15 losses,
// a standard deviation of a quarter of the rate). An overflow that starts
// at one window gives a share below hi near zero; but where the window's
// bursts overflow a buffer of a few packets before the pipe is full (jitter
// that bunches packets), the share lost grows smoothly with the window,
// and at 2 the test took a 6-packet FIFO at 50 Mbit/s for random loss and
// let the flow lose several times what the old cap let it lose
// (bench/results/owd-losslevel.md, "Tried and rejected on the way").
const lossFollowRatio = 1.5

// sent notes packet pn sent with window cwnd.
func (l *lossLevels) sent(pn cc.PacketNumber, cwnd float64) {
	below := l.hi > 0 && cwnd < l.hi
	switch {
	case below && l.lowFrom == cc.InvalidPacketNumber:
		l.lowFrom = pn
	case !below && l.lowFrom != cc.InvalidPacketNumber:
		l.prevFrom, l.prevTo, l.lowFrom = l.lowFrom, pn, cc.InvalidPacketNumber
	}
}

// sentBelow reports whether packet pn was sent with the window below hi.
func (l *lossLevels) sentBelow(pn cc.PacketNumber) bool {
	return l.lowFrom != cc.InvalidPacketNumber && pn >= l.lowFrom || pn >= l.prevFrom && pn < l.prevTo
}

// note folds the fate of packet pn (acknowledged or lost).
func (l *lossLevels) note(pn cc.PacketNumber, lost bool) {
	if l.hi == 0 {
		return
	}
	x := 0.0
	if lost {
		x = 1
	}
	if l.sentBelow(pn) {
		l.low += lossRateGain * (x - l.low)
	} else {
		l.high += lossRateGain * (x - l.high)
	}
}

// cut notes a loss that cut the window from cwnd, with the flow's loss
// rate then; the share lost above the new level starts from it.
func (l *lossLevels) cut(cwnd, rate float64) {
	if l.hi == 0 {
		l.high = rate
		l.lowFrom = cc.InvalidPacketNumber
	}
	l.hi = cwnd
}

// random reports whether the losses were seen not to follow the window.
func (l *lossLevels) random() bool {
	return l.hi > 0 && l.low > 0 && l.high <= lossFollowRatio*l.low
}

// lossQueuePackets: with the loss level test on, a queue of up to this
// many of the bottleneck's packet times (dispersion.go) is short whatever
// μ says. On a slow, long path one packet already stands above μ's floor
// (at 1.4 Mbit/s a packet takes 5.7 ms, μ's floor is 5 ms), so a random
// loss that met a paced packet or two in the queue halved the window as
// if the buffer had overflowed, and two such losses at the floor entered
// competitive mode (starved losses). A drop-tail buffer that overflows at
// two packets is no buffer to keep a queue in; Copa's test (compete.go)
// calls a queue under two packet times empty for the same reason. While
// the packet time is unknown (the flow's packets have not met in the
// queue) μ alone decides: the flow's own send gap, SRTT/cwnd, bounds the
// packet time only while it has the link to itself, and at the window's
// floor beside CUBIC it is half a round trip, which called every starved
// loss random (paper-fairness's Jain index fell:
// bench/results/owd-losslevel.md, "Tried and rejected on the way").
const lossQueuePackets = 2

// queueAbove reports whether the queue stands above frac·μ and, with the
// loss level test on, above lossQueuePackets packet times.
func (c *Controller) queueAbove(a *Analyzer, frac, mu float64) bool {
	if a.Variation() <= frac*mu {
		return false
	}
	if c.cfg.Tuning.DisableLossLevelTest {
		return true
	}
	return a.QueueingDelay() > lossQueuePackets*c.disp.packetTime()
}
