package acp

import (
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// testPath drives a policy over a deterministic one-bottleneck path with a
// manual clock, event by event: every update waits in a FIFO served at
// 1/service(t) updates per second (a queue of at most limit updates; one that
// finds it full is lost), plus a neighbour's queueing delay foreign(t) that
// the updates cannot affect, then fwd of propagation; its ACK returns after
// rev, carrying the true OWD (a synchronized clock). The source either
// generates an update whenever the gate opens (ACP's generate-at-will) or,
// with period > 0, takes a reading every period and hands it over; a newer
// reading replaces one not sent yet, as the session's SendUpdate does.
type testPath struct {
	t        *testing.T
	p        Policy
	now      clock.Mono
	pn       cc.PacketNumber
	fwd, rev time.Duration
	service  func(clock.Mono) time.Duration
	foreign  func(clock.Mono) time.Duration
	revQueue func(clock.Mono) time.Duration // the ACK's queueing on the return path (nil: none)
	limit    int
	period   time.Duration

	busy    clock.Mono   // the bottleneck serves the queued updates until then
	queued  []clock.Mono // departure times of the updates in the queue
	acks    []pathAck    // in arrival order
	nextGen clock.Mono
	pending bool
	pendGen clock.Mono
	started bool

	age                       AgeMeter
	readings, sent, delivered int
	lost                      int
	maxQueue                  time.Duration // largest queueing delay of an update (own and foreign)
	ownQueue                  []time.Duration
	rates                     []pathRate
}

type pathAck struct {
	at   clock.Mono
	lost bool
	ack  cc.AckSample
	gen  clock.Mono
	recv clock.Mono
}

type pathRate struct {
	t    clock.Mono
	rate Rate
}

func newTestPath(t *testing.T, p Policy, fwd, rev time.Duration, capacity Rate) *testPath {
	svc := capacity.Interval()
	return &testPath{t: t, p: p, fwd: fwd, rev: rev,
		service: func(clock.Mono) time.Duration { return svc },
		foreign: func(clock.Mono) time.Duration { return 0 }}
}

// send puts an update generated at gen on the path at now.
func (tp *testPath) send(gen clock.Mono) {
	now := tp.now
	for len(tp.queued) > 0 && tp.queued[0] <= now {
		tp.queued = tp.queued[1:]
	}
	pn := tp.pn
	tp.pn++
	tp.p.OnUpdateSent(now, pn, gen)
	tp.sent++
	if tp.limit > 0 && len(tp.queued) >= tp.limit {
		tp.lost++
		tp.push(pathAck{at: now.Add(2*(tp.fwd+tp.rev) + 10*time.Millisecond), lost: true,
			ack: cc.AckSample{PacketNumber: pn}})
		return
	}
	start := max(now, tp.busy)
	tp.busy = start.Add(tp.service(now))
	tp.queued = append(tp.queued, tp.busy)
	own := start.Sub(now)
	foreign := tp.foreign(now)
	tp.ownQueue = append(tp.ownQueue, own)
	tp.maxQueue = max(tp.maxQueue, own+foreign)
	owd := tp.busy.Sub(now) + foreign + tp.fwd
	recv := now.Add(owd)
	at := recv.Add(tp.rev)
	if tp.revQueue != nil {
		at = at.Add(tp.revQueue(recv))
	}
	tp.push(pathAck{at: at, gen: gen, recv: recv, ack: cc.AckSample{
		PacketNumber: pn, Bytes: 1024, SentTime: now, RTT: at.Sub(now),
		OWD: owd, OWDValid: true, ClockSynced: true,
	}})
}

func (tp *testPath) push(a pathAck) {
	i := sort.Search(len(tp.acks), func(i int) bool { return tp.acks[i].at > a.at })
	tp.acks = append(tp.acks, pathAck{})
	copy(tp.acks[i+1:], tp.acks[i:])
	tp.acks[i] = a
}

// run plays the path until end.
func (tp *testPath) run(end clock.Mono) {
	obs, _ := tp.p.(SourceObserver)
	if !tp.started {
		tp.started = true
		tp.nextGen = tp.now
		tp.p.SeedRTT(tp.fwd + tp.rev + tp.service(tp.now))
	}
	for tp.now < end {
		next := end
		if len(tp.acks) > 0 {
			next = min(next, tp.acks[0].at)
		}
		gate := max(tp.p.NextSendTime(), tp.now)
		if tp.period == 0 || tp.pending {
			next = min(next, gate)
		}
		if tp.period > 0 {
			next = min(next, tp.nextGen)
		}
		if r, ok := tp.p.(*Regulator); ok && r.EpochEnd() > tp.now {
			next = min(next, r.EpochEnd())
		}
		tp.now = next
		if r, ok := tp.p.(*Regulator); ok {
			r.Tick(tp.now)
		}
		for len(tp.acks) > 0 && tp.acks[0].at <= tp.now {
			a := tp.acks[0]
			tp.acks = tp.acks[1:]
			if a.lost {
				tp.p.OnLoss(a.at, cc.LossEvent{PacketNumber: a.ack.PacketNumber, Bytes: 1024})
				continue
			}
			tp.p.OnAck(a.at, a.ack)
			if tp.age.Deliver(a.gen, a.recv) {
				tp.delivered++
			}
		}
		if tp.period > 0 && tp.now >= tp.nextGen {
			tp.readings++
			if obs != nil {
				obs.OnUpdateOffered(tp.now)
			}
			tp.pending, tp.pendGen = true, tp.now
			tp.nextGen = tp.nextGen.Add(tp.period)
		}
		if tp.now >= tp.p.NextSendTime() {
			switch {
			case tp.period == 0:
				if obs != nil {
					obs.OnUpdateOffered(tp.now)
				}
				tp.send(tp.now)
			case tp.pending:
				tp.pending = false
				tp.send(tp.pendGen)
			}
		}
		tp.rates = append(tp.rates, pathRate{tp.now, tp.p.Rate()})
	}
}

// meanRate is the time-weighted mean of the policy's rate over [from, to].
func (tp *testPath) meanRate(from, to clock.Mono) Rate {
	var area, span float64
	for i := 1; i < len(tp.rates); i++ {
		a, b := max(tp.rates[i-1].t, from), min(tp.rates[i].t, to)
		if b > a {
			area += float64(tp.rates[i-1].rate) * b.Sub(a).Seconds()
			span += b.Sub(a).Seconds()
		}
	}
	if span == 0 {
		return 0
	}
	return Rate(area / span)
}

// ownQueueP95 is the 95th percentile of the updates' waits behind their own
// (the FIFO part, not the neighbour's) from update from on.
func (tp *testPath) ownQueueP95(from int) time.Duration {
	q := append([]time.Duration(nil), tp.ownQueue[from:]...)
	sort.Slice(q, func(i, j int) bool { return q[i] < q[j] })
	return q[len(q)*95/100]
}

func sec(s float64) clock.Mono { return clock.Mono(time.Duration(s * float64(time.Second))) }

func regulatorWith(t *testing.T, edit func(*Tuning)) *Regulator {
	t.Helper()
	tun := RecommendedTuning()
	if edit != nil {
		edit(&tun)
	}
	r, err := NewRegulator(Config{Tuning: &tun})
	require.NoError(t, err)
	return r
}
