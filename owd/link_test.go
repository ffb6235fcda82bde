package owd

import (
	"math"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// testLink is a one-flow bottleneck for mode tests, as the session drives
// a controller: the sender sends while its window allows, at its pacing
// rate; the bottleneck serves packets in order at rate(now) bit/s (so a
// capacity step or flap is a function of time) behind a drop-tail buffer
// of limit packets; each packet crosses prop before and after the
// bottleneck, and its ACK returns after prop more. Clocks are perfect, so
// the OWD samples are exact.
type testLink struct {
	rate  func(now clock.Mono) float64 // bit/s
	prop  time.Duration                // one way, before and after the queue
	limit int                          // packets in the buffer

	now, free, next clock.Mono // free: bottleneck idle; next: pacer
	pn              cc.PacketNumber
	flight          []linkPkt // in send order
	queued          []time.Duration
	// deps are the bottleneck departure times of the packets not yet
	// departed as of the last send (FIFO: non-decreasing).
	deps []clock.Mono

	// cross is a window-limited cross flow (addCross): the arrival times
	// at the queue of its packets not yet injected, in order, and its
	// round trip outside the queue.
	cross    []clock.Mono
	crossRTT time.Duration
	acked    int // this flow's packets acknowledged

	// Per-mode time, the largest queueing delay, and the mode changes.
	modeTime map[string]time.Duration
	maxQ     time.Duration
	switches int
}

type linkPkt struct {
	pn     cc.PacketNumber
	sent   clock.Mono
	arr    clock.Mono // at the receiver
	lost   bool
	queued time.Duration
}

func newTestLink(prop time.Duration, limit int, rate func(clock.Mono) float64) *testLink {
	return &testLink{rate: rate, prop: prop, limit: limit, modeTime: map[string]time.Duration{}}
}

// run drives c for d and returns the 95th percentile of the queueing
// delay over the packets sent in its second half.
func (l *testLink) run(c cc.Controller, d time.Duration) time.Duration {
	end := l.now.Add(d)
	half := l.now.Add(d / 2)
	l.queued = l.queued[:0]
	last := c.Metrics().Mode
	lastAt := l.now
	for l.now.Before(end) {
		inFlight := cc.ByteCount(len(l.flight)) * mss
		if inFlight < c.Window() && (len(l.flight) == 0 || !l.next.After(l.flight[0].arr.Add(l.prop))) {
			l.now = max(l.now, l.next)
			l.send(c, inFlight, !l.now.Before(half))
			continue
		}
		p := l.flight[0]
		l.flight = l.flight[1:]
		prior := inFlight
		if p.lost {
			l.now = max(l.now, p.arr) // declared lost when its successor's ACK comes
			c.OnLoss(l.now, cc.LossEvent{PacketNumber: p.pn, Bytes: mss, SentTime: p.sent, PriorInFlight: prior})
		} else {
			l.now = max(l.now, p.arr.Add(l.prop))
			l.acked++
			c.OnAck(l.now, cc.AckSample{PacketNumber: p.pn, Bytes: mss, SentTime: p.sent, OWD: p.arr.Sub(p.sent),
				OWDValid: true, ClockSynced: true, RTT: l.now.Sub(p.sent), PriorInFlight: prior})
		}
		if m := c.Metrics().Mode; m != last {
			l.modeTime[last] += l.now.Sub(lastAt)
			last, lastAt = m, l.now
			l.switches++
		}
	}
	l.modeTime[last] += l.now.Sub(lastAt)
	if len(l.queued) == 0 {
		return 0
	}
	q := append([]time.Duration(nil), l.queued...)
	for i := 1; i < len(q); i++ { // insertion sort: small slices
		for j := i; j > 0 && q[j] < q[j-1]; j-- {
			q[j], q[j-1] = q[j-1], q[j]
		}
	}
	return q[len(q)*95/100]
}

// send puts one packet on the link at l.now.
func (l *testLink) send(c cc.Controller, inFlight cc.ByteCount, record bool) {
	l.pn++
	c.OnPacketSent(l.now, l.pn, mss, inFlight+mss)
	atQueue := l.now.Add(l.prop)
	l.injectCross(atQueue)
	start := max(atQueue, l.free)
	for len(l.deps) > 0 && !l.deps[0].After(atQueue) {
		l.deps = l.deps[1:] // departed before this packet reaches the queue
	}
	backlog := len(l.deps) // packets ahead of this one still waiting at atQueue
	pt := time.Duration(float64(mss*8) / l.rate(start) * float64(time.Second))
	p := linkPkt{pn: l.pn, sent: l.now}
	if backlog >= l.limit {
		p.lost = true
		p.arr = atQueue.Add(l.prop) // its loss shows up about when it would have arrived
	} else {
		l.free = start.Add(pt)
		l.deps = append(l.deps, l.free)
		p.arr = l.free.Add(l.prop)
		p.queued = start.Sub(atQueue)
		l.maxQ = max(l.maxQ, p.queued)
		if record {
			l.queued = append(l.queued, p.queued)
		}
	}
	l.flight = append(l.flight, p)
	if rate := c.PacingRate(); rate > 0 {
		l.next = l.now.Add(time.Duration(float64(mss*8) / float64(rate) * float64(time.Second)))
	}
}

// steps returns a rate function that is rates[i] from at[i] on (at[0] = 0).
func steps(at []time.Duration, rates []float64) func(clock.Mono) float64 {
	return func(now clock.Mono) float64 {
		r := rates[0]
		for i, t := range at {
			if !clock.Mono(t).After(now) {
				r = rates[i]
			}
		}
		return r
	}
}

// lteLike returns a rate function re-drawn every 200–500 ms, log-uniform
// between lo and hi bit/s, from a fixed pseudo-random sequence.
func lteLike(lo, hi float64, seed uint64) func(clock.Mono) float64 {
	var at []time.Duration
	var rates []float64
	x := seed
	next := func() float64 { // xorshift64*: deterministic, no global state
		x ^= x >> 12
		x ^= x << 25
		x ^= x >> 27
		return float64((x*2685821657736338717)>>11) / (1 << 53)
	}
	for t := time.Duration(0); t < 10*time.Minute; t += time.Duration((0.2 + 0.3*next()) * float64(time.Second)) {
		at = append(at, t)
		rates = append(rates, lo*math.Pow(hi/lo, next()))
	}
	return steps(at, rates)
}

// addCross starts a cross flow at at that keeps window packets in flight
// whatever the queue (a receive-window-limited TCP flow): each of its
// packets comes back to the queue rtt after it left it. It never loses:
// window must stay under the buffer plus the pipe.
func (l *testLink) addCross(at clock.Mono, window int, rtt time.Duration) {
	l.crossRTT = rtt
	for i := range window {
		l.cross = append(l.cross, at.Add(time.Duration(i)*rtt/time.Duration(window)))
	}
}

// injectCross puts the cross flow's packets that reach the queue before t
// into it, in arrival order, each scheduling its successor.
func (l *testLink) injectCross(t clock.Mono) {
	for len(l.cross) > 0 && !l.cross[0].After(t) {
		at := l.cross[0]
		l.cross = l.cross[1:]
		start := max(at, l.free)
		for len(l.deps) > 0 && !l.deps[0].After(at) {
			l.deps = l.deps[1:]
		}
		l.free = start.Add(time.Duration(float64(mss*8) / l.rate(start) * float64(time.Second)))
		l.deps = append(l.deps, l.free)
		next := l.free.Add(l.crossRTT)
		i := len(l.cross)
		for i > 0 && l.cross[i-1].After(next) {
			i--
		}
		l.cross = append(l.cross, 0)
		copy(l.cross[i+1:], l.cross[i:])
		l.cross[i] = next
	}
}
