package owd

import (
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// drainTest is the experiment every slowdown makes: does the queue drain
// when this flow holds its window at the probe window? It is Nimbus's
// question (Goyal et al., "Elasticity Detection: A Building Block for
// Internet Congestion Control", SIGCOMM 2022: pulse the rate and see
// whether the cross traffic takes the room), asked with one deep pulse.
//
//   - Alone, whatever the link's capacity does, the packets sent during
//     the hold find only the flow's own earlier packets ahead of them,
//     which leave within one queueing delay; the later packets of the
//     hold see the queue empty.
//   - Beside a buffer filler (a loss-based flow in a drop-tail buffer),
//     the filler takes the room and the queue stays.
//   - Beside other delay-based flows, a standing queue of their target
//     stays, which is why "stayed" needs more than the noise floor.
//
// The passive signs of a buffer filler (Copa's test in compete.go) cannot
// tell a competitor's queue from a queue a capacity drop left behind: both
// fail to empty for many round trips and neither follows the window. The
// experiment can, and so it decides: the passive test only asks for it.
//
// The queue is measured against the base delay at the start of the hold,
// or, in competitive mode, the lower of that and the base the flow had
// when it switched (the windowed minimum climbs to the competitor's
// standing queue once the true base has left the history).
type drainTest struct {
	active   bool
	from, to clock.Mono // packets sent in [from, to) are the hold's
	base     time.Duration
	minQ     time.Duration // smallest queueing delay of the hold's packets; -1 none yet
	maxQ     time.Duration // largest
	samples  int
	// fit is the least-squares line through the hold's queueing delays
	// against their send times: a queue that grows back under the hold is
	// a competitor's growing window, not the flow's drained queue, and the
	// residual spread is the noise every verdict must rise above.
	fit lineFit
	// suspect: the slowdown was started because Copa's test fired; its
	// verdict may enter competitive mode. first: it is the flow's first.
	// short: a loss or timeout ended the hold early; no verdict.
	suspect, first, short bool
	// lastQ is the queueing delay of the hold's last sample.
	lastQ time.Duration
	// compWindow is the competitive window at the start of the hold
	// (competitiveWindow), the window a wrong return resumes near.
	compWindow float64
}

// drainStayedNoise is how many noise floors of queueing must remain under
// the hold for the queue to count as someone else's; drainStayedPackets
// the same in bottleneck packet times (a queue exists in whole packets).
// Delay-based neighbours hold a queue of about their threshold μ, which is
// at least one noise floor; two keep them from reading as a buffer filler.
const (
	drainStayedNoise   = 2
	drainStayedPackets = 2
)

// drainStayedSamples is how many samples a hold needs before it may find
// that the queue stayed: one cannot tell a standing queue from noise.
// (On a long path a hold of two round trips at two packets has two or
// three.)
const drainStayedSamples = 2

// startDrainTest arms the test for a slowdown [now, now+hold).
func (c *Controller) startDrainTest(now clock.Mono, hold time.Duration) {
	d := &c.probe.test
	a := c.active()
	*d = drainTest{active: true, from: now, to: now.Add(hold), base: a.Min(), minQ: -1, suspect: c.comp.suspect, first: !c.probe.done}
	if c.mode == modeCompetitive {
		d.base = min(d.base, c.comp.base)
		d.compWindow = float64(c.competitiveWindow())
	}
}

// observeDrainTest folds one ACK into the test and, once a packet sent
// after the hold is acknowledged (every packet of the hold that will be
// acknowledged has been), gives the verdict.
func (c *Controller) observeDrainTest(now clock.Mono, ack cc.AckSample) {
	d := &c.probe.test
	if !d.active {
		return
	}
	if !ack.SentTime.Before(d.to) {
		d.active = false
		c.drainVerdict(now)
		return
	}
	q, ok := c.experimentSample(ack, d.from, d.base)
	if !ok {
		return
	}
	d.minQ = lowest(d.minQ, q)
	d.fit.add(ack.SentTime.Sub(d.from).Seconds(), q.Seconds())
	d.lastQ = q
	d.maxQ = max(d.maxQ, q)
	d.samples++
}

// experimentSample is the queueing delay, against base, of ack's packet
// if it was sent at or after from (an experiment's packets: a hold's, a
// push's) and ack carries a delay sample in the signal in use.
func (c *Controller) experimentSample(ack cc.AckSample, from clock.Mono, base time.Duration) (time.Duration, bool) {
	q := c.delaySample(ack)
	if ack.SentTime.Before(from) || q <= 0 {
		return 0, false
	}
	return max(q-base, 0), true
}

// lowest is the smaller of m and q, m < 0 meaning none yet.
func lowest(m, q time.Duration) time.Duration {
	if m < 0 || q < m {
		return q
	}
	return m
}

// stayed reports whether the queue stayed under the hold: its lowest
// sample stood above thr, or the fitted line rose by more than thr over
// the hold and the last sample stood above it, in both cases by more than
// twice the samples' spread about the line, so that random per-packet
// delay (jitter, whose samples scatter about a flat line) reads as
// neither.
func (d *drainTest) stayed(thr time.Duration, rising bool) bool {
	if d.samples < drainStayedSamples {
		return false // too few to tell a queue from noise
	}
	noise := max(thr, 2*sec(d.fit.residualSD()))
	if d.samples < 3 {
		noise = max(noise, d.maxQ-d.minQ) // two points: their difference is all the spread there is
	}
	return d.minQ > noise || rising && sec(d.fit.rise()) > noise && d.lastQ > noise
}

// falling reports whether the queue fell under the hold by more than the
// noise and by more than drainFalling of where it stood: someone is
// draining it, as delay-based flows do after a capacity drop. A buffer
// filler's queue stands or grows (once per cycle it falls by its cut).
func (d *drainTest) falling(thr time.Duration) bool {
	noise := max(thr, 2*sec(d.fit.residualSD()))
	drop := -d.fit.rise()
	return sec(drop) > noise && drop > drainFalling*d.fit.first()
}

// drainFalling is the share of the queue a hold must see drained for the
// queue to count as falling.
const drainFalling = 0.3

func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// drainThreshold is the queueing delay above which the hold's queue
// counts as having stayed, before the hold's own spread (stayed):
// drainStayedNoise × the noise floor with its jitter term at gain 1
// instead of JitterGain and without the learned part, since the test reads
// the lowest of the hold's samples and their spread about a line, which
// random per-packet delay affects far less than a single sample (and a
// competitor's queue, moving in packet steps, inflates the RFC 3550 jitter
// to tens of milliseconds, and the learned floor to its cap); and
// drainStayedPackets bottleneck packet times.
func (c *Controller) drainThreshold() time.Duration {
	a := c.active()
	noise := max(a.cfg.MuFloorDelay, a.Jitter())
	return max(drainStayedNoise*noise, drainStayedPackets*c.disp.packetTime())
}

// drainVerdict acts on the test: a queue that drained ends competitive
// mode; one that stayed after Copa's test fired begins it.
func (c *Controller) drainVerdict(now clock.Mono) {
	d := &c.probe.test
	if d.samples == 0 || d.short {
		// Nothing was measured (every packet of the hold was lost), or the
		// hold was cut short. A slowdown Copa's test asked for still
		// counts as asked: the test waits for the next regular one.
		if d.suspect {
			c.quietCopa(now)
		}
		return
	}
	competitive := c.interrupted() == modeCompetitive
	var stayed, corroborated bool
	if competitive {
		// A queue that grows back under the hold keeps the flow
		// competitive (but does not make it so: alone on a cellular link,
		// a capacity dip during the hold raises the delay of the hold's
		// later packets behind the flow's own earlier ones).
		stayed = d.stayed(c.drainThreshold(), true)
	} else {
		// To become competitive the queue must have stayed above what
		// delay-based neighbours keep — about their threshold, which is
		// no less than the noise floor, learned part included — or above
		// the lower threshold with a recent overflow of the buffer: a
		// buffer filler fills the buffer, delay-based flows do not.
		// Either way not a queue that fell under the hold: beside
		// delay-based flows whose link just lost capacity, the queue they
		// are draining stands under this flow's hold too, but falls.
		//
		// And one hold Copa's test asked for is not enough on its own:
		// beside delay-based flows on a link that keeps losing capacity,
		// the queue they are draining may stand through it. A buffer
		// filler fills the buffer (an overflow within competeLossSpan), or
		// keeps the queue up under a regular slowdown too (comp.stayed,
		// within competeEvidenceSpan).
		overflow := c.comp.overflowed && now.Sub(c.comp.lastOverflow) < competeLossSpan
		strong := d.stayed(max(c.drainThreshold(), drainStayedNoise*c.targets(now).noise), false)
		stayed = (strong || overflow && d.stayed(c.drainThreshold(), false)) && !d.falling(c.drainThreshold())
		corroborated = stayed && (overflow || c.comp.stayed && now.Sub(c.comp.stayedAt) < competeEvidenceSpan)
	}
	switch {
	case competitive && !stayed:
		c.leaveCompetitive(now, d.compWindow)
	case !competitive && d.suspect:
		// The slowdown Copa's test asked for: it decides now, and its
		// finding is not carried over as half of later evidence.
		if corroborated {
			c.enterCompetitive(now, reasonQueueStayed)
		}
	case !competitive:
		// A regular slowdown: a queue that stayed is half the evidence
		// (delay-based neighbours keep a standing queue too); Copa's test
		// is the other half (observeEmptiness).
		c.comp.stayed, c.comp.stayedAt = stayed, now
	}
	if d.suspect {
		// Refuted or not, Copa's test may not start another slowdown
		// before the next regular one (quietCopa).
		c.quietCopa(now)
	}
}
