package owd

import (
	"math"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// pushTest is the experiment a flow at its window floor makes when the
// queue it sees has not nearly emptied for competeWindows of Copa's
// windows (compete.go): is the link busy? It answers what holding the
// window cannot, since at the floor the flow is already holding it.
//
// Three things leave a flow at its floor with a queue that does not go:
//
//   - a buffer filler that keeps a standing queue without losing packets
//     (a receive-window-limited TCP flow; a loss-based one in a buffer
//     deeper than it fills during the test): its queue is flat, so Copa's
//     test sees no movement, and no overflow corroborates the drain test;
//   - a longer path (a route change): every sample rose by the same
//     amount, and the link is idle;
//   - alone, a link whose capacity fell so far that the flow's own two
//     packets are the queue.
//
// The flow raises its window by k packets for two round trips and reads
// the lowest queueing delay of the packets it sends in the second one.
// On a busy link (a FIFO whose queue never empties) every packet added to
// the flow's window adds one bottleneck packet time p to everyone's queue:
// the queue rises by k·p (Little's law: the inflight of all flows is the
// link's rate times the round trip). On an idle link, k packets paced over
// a round trip that holds more than twice their serialisation leave no
// queue. So:
//
//   - a rise of at least half of k·p: the link is busy. Its packet time
//     now is rise/k (a link that slowed shows a steeper rise than the
//     dispersion's estimate). If the flow's own window at the floor,
//     w0 packets of that packet time, cannot account for the queue it
//     saw there (above twice w0+1 packet times), other flows' packets
//     hold it: competitive mode (reasonPushBusy). Alone on a slowed link
//     the own window explains the queue, and nothing changes;
//   - a change within a quarter of k·p either way, after a queue that
//     did not move over Copa's windows (the same test compete.go uses to
//     tell a longer path from a filler): the link is idle and the queue
//     that stays is path delay, a route change. The base-delay history is
//     restarted from the current samples and the flow slow-starts
//     (reasonRebase) instead of waiting up to the history's length at its
//     floor (signal.go). A queue that moved is a competitor's, and a flat
//     push on it is that queue falling (a cut, BBR's drain) while the
//     push raised it: restarting the history there would make the
//     competitor's standing queue the base delay;
//   - in between, a queue that fell (someone else's queue moved), or a
//     loss during the push: no verdict.
//
// k is chosen so that k·p is twice the drain test's threshold (a busy
// link's rise stands clear of the noise), but k·p stays under half the
// smoothed round trip (an idle link's stays idle); when both cannot hold
// the test does not run. Whatever the verdict, Copa's test stays quiet
// until the next regular slowdown, as after a slowdown it asked for.
type pushTest struct {
	active bool
	// Packets sent in [from, to) are measured; the window is raised from
	// start, and the verdict comes with the first ACK of a packet sent at
	// or after to.
	start, from, to clock.Mono
	w0              float64       // the window before the push, bytes
	k               float64       // packets added
	p               time.Duration // the bottleneck packet time it expects
	before          time.Duration // lowest queueing delay at the floor (Copa's windows)
	base            time.Duration // the base the queueing delays are measured against
	minQ            time.Duration // lowest queueing delay of the measured packets; -1 none
	// flat: the queue did not move over Copa's windows before the push
	// (compete.go's test for a longer path); an idle verdict on a queue
	// that moved is a competitor's queue falling as the push raised it.
	flat    bool
	samples int
	lost    bool
	// next is the earliest start of the next push.
	next clock.Mono
}

// pushVerdict is what a push test found.
type pushVerdict uint8

const (
	pushNone pushVerdict = iota // too few samples, a loss, or a rise in between
	pushBusy                    // the link is busy and other flows hold the queue
	pushOwn                     // the link is busy with this flow's own packets
	pushIdle                    // the link is idle: the standing delay is path
)

// verdict classifies the push.
func (t *pushTest) verdict() (pushVerdict, time.Duration) {
	if t.lost || t.samples < drainStayedSamples || t.minQ < 0 {
		return pushNone, 0
	}
	rise := t.minQ - t.before
	expect := time.Duration(t.k * float64(t.p))
	switch {
	case rise >= expect/2:
		pNow := max(t.p, time.Duration(float64(rise)/t.k))
		w0 := t.w0 // packets
		if t.before <= time.Duration(2*(w0+1)*float64(pNow)) {
			return pushOwn, rise
		}
		return pushBusy, rise
	case rise <= expect/4 && rise >= -expect/4:
		// Flat: a queue that fell meanwhile (a filler's cut, a BBR
		// flow's ProbeRTT) says nothing about an idle link.
		return pushIdle, rise
	}
	return pushNone, rise
}

// pushMeasureRTTs is how many round trips into the push its measured
// packets start (the k packets are in the queue by then), and
// pushMeasuredRTTs how many round trips of packets are measured.
const (
	pushMeasureRTTs  = 1
	pushMeasuredRTTs = 1
)

// pushWindows is how many of Copa's windows in a row without a nearly
// empty queue start a push test, and pushSpacing how many smoothed round
// trips after one ends the next may start: a push costs k packets of queue
// for two round trips, less than a slowdown's hold, and a busy link that
// gave no verdict (a loss, a queue that fell) is asked again soon, not at
// the next regular slowdown.
const (
	pushWindows = 1
	pushSpacing = 10
)

// pushAllowed reports whether a push test may start at now.
func (c *Controller) pushAllowed(now clock.Mono) bool {
	return !c.cfg.Tuning.DisablePushTest && !c.push.active && !now.Before(c.push.next)
}

// atFloor reports whether the window is within competeFloorSlack packets
// of the floor the delay rule may reach.
func (c *Controller) atFloor(now clock.Mono) bool {
	return c.cwnd <= c.targets(now).floor+competeFloorSlack*c.mss
}

// startPush begins a push test if one can tell anything on this path; it
// reports whether it did. lowest is the lowest queueing delay of Copa's
// windows that did not nearly empty.
func (c *Controller) startPush(now clock.Mono, lowest time.Duration) bool {
	p := c.disp.packetTime()
	srtt := c.rtt.Smoothed()
	if p <= 0 || srtt <= 0 {
		return false
	}
	thr := c.drainThreshold()
	if lowest <= max(thr, drainStayedNoise*c.targets(now).noise) {
		// A queue delay-based neighbours may hold (about their
		// threshold, no less than the noise floor): the same bar as the
		// drain test's for a queue that stayed (drain.go).
		return false
	}
	k := math.Ceil(float64(2*thr) / float64(p))
	if maxK := math.Floor(float64(srtt/2) / float64(p)); k > maxK {
		// The round trip is too short to add 2·thr of queue on a busy
		// link without queueing on an idle one; settle for less, down
		// to one threshold's worth.
		if float64(thr) > maxK*float64(p) {
			return false
		}
		k = maxK
	}
	t := &c.push
	*t = pushTest{
		next:   now.Add((pushMeasureRTTs + pushMeasuredRTTs + pushSpacing) * srtt),
		active: true, start: now,
		from: now.Add(pushMeasureRTTs * srtt),
		to:   now.Add((pushMeasureRTTs + pushMeasuredRTTs) * srtt),
		w0:   c.cwnd / c.mss, k: k, p: p,
		before: lowest, base: c.active().Min(), minQ: -1,
		flat: !c.queueMoved(),
	}
	c.cwnd += k * c.mss
	c.vel.reset()
	return true
}

// observePush folds one ACK into the push test and, with the first ACK of
// a packet sent after it, restores the window and acts on the verdict.
func (c *Controller) observePush(now clock.Mono, ack cc.AckSample) {
	t := &c.push
	if !t.active {
		return
	}
	if !ack.SentTime.Before(t.to) {
		c.finishPush(now)
		return
	}
	q, ok := c.experimentSample(ack, t.from, t.base)
	if !ok {
		return
	}
	t.minQ = lowest(t.minQ, q)
	t.samples++
}

// finishPush ends the push: the window goes back to where it was (or
// stays where a loss put it), and the verdict acts.
func (c *Controller) finishPush(now clock.Mono) {
	t := &c.push
	t.active = false
	v, _ := t.verdict()
	if v == pushBusy && c.mode == modeAvoidance {
		// CUBIC and BBR start from the pushed window, which the link carried.
		c.enterCompetitive(now, reasonPushBusy)
		return
	}
	c.cwnd = math.Min(c.cwnd, t.w0*c.mss)
	if v == pushIdle && t.flat && c.mode == modeAvoidance {
		c.owdA.restartBase()
		c.rttA.restartBase()
		c.rebase = true
	}
}

// onPushLoss notes a loss during a push: the test gives no verdict (the
// push may have overflowed a shallow buffer on its own).
func (c *Controller) onPushLoss() {
	if c.push.active {
		c.push.lost = true
	}
}
