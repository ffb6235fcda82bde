package acp

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock"
)

// Behaviour of fresh's rule and its bounds on testPath, each against the
// regulator with that rule switched off: every test fails if its rule is
// broken. Where the backlog bound (B/SRTT) would hold the rate below what
// a test is about, the test switches it off.

// TestDeliveryBoundHoldsUnderCapacity: on an idle deterministic path the
// regulator finds the capacity and stays just under it, so updates do not
// wait behind their own. Without the delivery bound the rule probes past the
// capacity and only the queue bound stops it, K updates deep.
func TestDeliveryBoundHoldsUnderCapacity(t *testing.T) {
	run := func(on bool) (Rate, time.Duration) {
		tp := newTestPath(t, regulatorWith(t, func(tu *Tuning) { tu.DeliveryBound, tu.BacklogBound = on, 0 }), 20*time.Millisecond, 20*time.Millisecond, 500)
		tp.run(sec(10))
		from := tp.sent
		tp.run(sec(30))
		return tp.meanRate(sec(10), sec(30)), tp.ownQueueP95(from)
	}
	rate, q95 := run(true)
	require.InDelta(t, 480, float64(rate), 20, "just under the 500 Hz capacity")
	require.Less(t, q95, 2*time.Millisecond, "no update waits a service time behind its own")
	_, q95off := run(false)
	require.Greater(t, q95off, 2*q95+2*time.Millisecond, "without the bound the queue stands")
}

// TestQueueBoundBesideStandingQueue: when a neighbour fills the queue to a
// standing 200 ms (after 2 s, so the first updates saw the path's base
// delay) the rate settles at K/Q̄ = 4/0.2 s = 20 Hz; without the bound it
// climbs (the age keeps falling a little with every update, 1/(2λ)).
func TestQueueBoundBesideStandingQueue(t *testing.T) {
	run := func(k float64) Rate {
		tp := newTestPath(t, regulatorWith(t, func(tu *Tuning) { tu.QueueBound, tu.BacklogBound = k, 0 }), 20*time.Millisecond, 20*time.Millisecond, 2000)
		tp.foreign = after(sec(2), func(clock.Mono) time.Duration { return 200 * time.Millisecond })
		tp.run(sec(30))
		return tp.meanRate(sec(10), sec(30))
	}
	require.InDelta(t, 20, float64(run(DefaultQueueBound)), 2)
	require.InDelta(t, 10, float64(run(2)), 1, "K = 2: half the rate")
	require.Greater(t, float64(run(0)), 60.0, "no bound: the rule keeps climbing")
}

// after is f from t on, and no queue before: the neighbour starts then (a
// queue the first updates already find is part of the path's base delay,
// as for LEDBAT's base delay).
func after(t clock.Mono, f func(clock.Mono) time.Duration) func(clock.Mono) time.Duration {
	return func(at clock.Mono) time.Duration {
		if at < t {
			return 0
		}
		return f(at)
	}
}

// sawQueue is a neighbour's queue that grows from lo to hi over period and
// then drains at once (a CUBIC flow in a drop-tail FIFO), offset by phase.
func sawQueue(lo, hi, period, phase time.Duration) func(clock.Mono) time.Duration {
	return func(t clock.Mono) time.Duration {
		x := (time.Duration(t) + phase) % period
		return lo + time.Duration(float64(hi-lo)*float64(x)/float64(period))
	}
}

// TestNotBistableBesideSawtooth: beside a neighbour's sawtooth queue the
// mean rate does not depend on the sawtooth's phase (the draw), and sits
// near the queue bound. ACP's backlog table, bounds and all, reads the
// neighbour's queue as the updates' own: both phases of the sawtooth are DEC
// rows, and it ends far below, at a rate that depends on the draw.
func TestNotBistableBesideSawtooth(t *testing.T) {
	run := func(gradient bool) (lo, hi Rate) {
		lo = Rate(math.Inf(1))
		for _, phase := range []time.Duration{0, 700 * time.Millisecond, 1500 * time.Millisecond, 2300 * time.Millisecond, 3100 * time.Millisecond} {
			r := regulatorWith(t, func(tu *Tuning) {
				if !gradient { // ACP's table with the refinements of before and fresh's bounds
					tu.Gradient, tu.IncFraction, tu.ZCountsLosses, tu.EpochZ, tu.BinaryInc = false, 0.5, true, 8, true
				}
			})
			tp := newTestPath(t, r, 20*time.Millisecond, 20*time.Millisecond, 2000)
			tp.foreign = after(sec(2), sawQueue(120*time.Millisecond, 220*time.Millisecond, 4*time.Second, phase))
			tp.run(sec(60))
			m := tp.meanRate(sec(20), sec(60))
			lo, hi = min(lo, m), max(hi, m)
		}
		return lo, hi
	}
	lo, hi := run(true)
	require.Less(t, float64(hi/lo), 1.1, "the same rate whatever the phase: %v–%v Hz", lo, hi)
	require.Greater(t, float64(lo), 0.7*4/0.170, "near K/Q̄ (Q̄ ≈ 170 ms): %v Hz", lo)
	alo, ahi := run(false)
	require.Less(t, float64(ahi), float64(lo), "ACP's table stays below: %v–%v Hz", alo, ahi)
}

// TestCapacityDropDrains: when the capacity drops tenfold under the
// regulator, the queue it built drains and the rate resumes at the new
// capacity within seconds, and stays under it.
func TestCapacityDropDrains(t *testing.T) {
	run := func(delivery bool) (Rate, time.Duration) {
		tp := newTestPath(t, regulatorWith(t, func(tu *Tuning) { tu.DeliveryBound = delivery }), 20*time.Millisecond, 20*time.Millisecond, 1000)
		tp.limit = 100
		tp.service = func(t clock.Mono) time.Duration {
			if t < sec(20) {
				return time.Millisecond
			}
			return 10 * time.Millisecond
		}
		tp.run(sec(23))
		from := tp.sent
		tp.run(sec(40))
		return tp.meanRate(sec(23), sec(40)), tp.ownQueueP95(from)
	}
	rate, q95 := run(true)
	require.InDelta(t, 95, float64(rate), 5, "under the new 100 Hz")
	require.Less(t, q95, 10*time.Millisecond, "under one service time of queueing")
	rateOff, q95Off := run(false)
	require.True(t, float64(rateOff) < 85 || q95Off > 2*q95+10*time.Millisecond,
		"without the delivery bound it climbs back slowly or queues: %v Hz, %v", rateOff, q95Off)
}

// TestStartBurst: a 50 Hz source on an idle 100 ms RTT path gets every
// reading through from the start: the regulator starts at the source's rate.
// From one update per RTT (ACP's start) the climb supersedes readings.
func TestStartBurst(t *testing.T) {
	run := func(burst float64) (sent, readings int) {
		tp := newTestPath(t, regulatorWith(t, func(tu *Tuning) { tu.StartBurst = burst }), 50*time.Millisecond, 50*time.Millisecond, 5000)
		tp.period = 20 * time.Millisecond
		tp.run(sec(20))
		require.Zero(t, tp.lost)
		return tp.sent, tp.readings
	}
	sent, readings := run(DefaultStartBurst)
	require.Equal(t, 1001, readings, "0 s to 20 s")
	require.GreaterOrEqual(t, sent, readings-1, "every reading sent (the last may wait for its gate)")
	sent, _ = run(0)
	require.Less(t, sent, readings-10, "from one update per RTT the climb supersedes readings")
	sent, _ = run(4)
	require.Less(t, sent, readings-2, "4 per RTT (40 Hz) is below the source: a few readings lost")
}

// TestSourceBoundValidatesRate: while every send waits for a 50 Hz source,
// the rate is held at (1 + h)·50 Hz, the most the source can use; without
// the bound the rule explores upward without limit (Δρ stays 0), to a rate
// the path never carried, which a faster source would then get at once
// (the concern of RFC 7661 for an application-limited TCP window).
func TestSourceBoundValidatesRate(t *testing.T) {
	run := func(h float64) Rate {
		tp := newTestPath(t, regulatorWith(t, func(tu *Tuning) { tu.SourceHeadroom, tu.BacklogBound = h, 0 }), 50*time.Millisecond, 50*time.Millisecond, 5000)
		tp.period = 20 * time.Millisecond
		tp.run(sec(20))
		require.GreaterOrEqual(t, tp.sent, tp.readings-1)
		return tp.meanRate(sec(5), sec(20))
	}
	require.InDelta(t, 100, float64(run(DefaultSourceHeadroom)), 3)
	require.InDelta(t, 62.5, float64(run(0.25)), 2)
	require.Greater(t, float64(run(0)), 500.0)
}

// TestPeriodicSourceThinPath: a 50 Hz source on a path that carries 20
// updates/s is superseded, and its updates do not queue behind each other.
func TestPeriodicSourceThinPath(t *testing.T) {
	tp := newTestPath(t, regulatorWith(t, nil), 40*time.Millisecond, 40*time.Millisecond, 20)
	tp.period = 20 * time.Millisecond
	tp.limit = 50
	tp.run(sec(15))
	from := tp.sent
	tp.run(sec(60))
	require.InDelta(t, 19, float64(tp.meanRate(sec(15), sec(60))), 1.5)
	require.Less(t, tp.ownQueueP95(from), 10*time.Millisecond, "a fifth of a service time")
	require.Less(t, tp.delivered, tp.readings/2, "the rest superseded")
}

// TestBacklogBound: on an idle 500 Hz path of 100 ms RTT the rate stops at
// B/SRTT = 10/0.1 s = 100 Hz, B updates in flight, where the age is within
// 1/(B + 1) of the path delay; without the bound it climbs to the
// capacity. Two regulators with different histories (one starts 5 s
// later) end at the same rate: the bound is the path's, not the source's.
func TestBacklogBound(t *testing.T) {
	run := func(b float64, start clock.Mono) Rate {
		tp := newTestPath(t, regulatorWith(t, func(tu *Tuning) { tu.BacklogBound = b }), 50*time.Millisecond, 50*time.Millisecond, 500)
		tp.now = start
		tp.run(start + sec(20))
		return tp.meanRate(start+sec(10), start+sec(20))
	}
	on := run(DefaultBacklogBound, 0)
	require.InDelta(t, 100, float64(on), 5)
	require.InDelta(t, float64(on), float64(run(DefaultBacklogBound, sec(5))), 1)
	require.Greater(t, float64(run(0, 0)), 400.0, "no bound: up to the capacity")
}

// TestReturnQueueBound: when the ACKs' path holds a queue of 250 ms (a
// narrow uplink that other ACKs fill; the updates' OWD stays at its base)
// the rate falls to one ACK per return queueing delay, 4 Hz; without the
// backlog bound it is not limited.
func TestReturnQueueBound(t *testing.T) {
	run := func(b float64) (Rate, EpochStats) {
		tp := newTestPath(t, regulatorWith(t, func(tu *Tuning) { tu.BacklogBound = b }), 20*time.Millisecond, 20*time.Millisecond, 2000)
		tp.revQueue = after(sec(2), func(clock.Mono) time.Duration { return 250 * time.Millisecond })
		tp.run(sec(30))
		return tp.meanRate(sec(10), sec(30)), tp.p.(*Regulator).LastEpoch()
	}
	rate, st := run(DefaultBacklogBound)
	require.InDelta(t, 4, float64(rate), 0.5)
	require.InDelta(t, 0.25, st.ReturnQueueDelay.Seconds(), 0.01, "R̄")
	require.Equal(t, BoundBacklog, st.Bound)
	rate, _ = run(0)
	require.Greater(t, float64(rate), 20.0)
}

// TestBacklogBoundShared: on the idle path of TestBacklogBound, a
// neighbour that keeps a 5 ms queue from 2 s on (under one update deep at
// these rates) lowers B to 6: 6/0.105 s ≈ 57 Hz; without the switch to
// the shared bound, B stays 10 (95 Hz). The idle path never reads as
// shared, although the rule's climb queues updates behind their own.
func TestBacklogBoundShared(t *testing.T) {
	tp := newTestPath(t, regulatorWith(t, nil), 50*time.Millisecond, 50*time.Millisecond, 500)
	tp.foreign = after(sec(2), func(clock.Mono) time.Duration { return 5 * time.Millisecond })
	tp.run(sec(30))
	require.InDelta(t, 6/0.105, float64(tp.meanRate(sec(10), sec(30))), 3)
	require.True(t, tp.p.(*Regulator).LastEpoch().Shared)

	idle := newTestPath(t, regulatorWith(t, nil), 50*time.Millisecond, 50*time.Millisecond, 80)
	idle.run(sec(60))
	require.False(t, idle.p.(*Regulator).foreign.valid, "only the updates' own queue")
}

// TestDeliveryNoisePrior: beside a neighbour whose queue grows by 20 ms a
// second from the start (a 100 ms sawtooth every 5 s) on a 3000 Hz path,
// the updates' deliveries lag their sends by 2 % while the rate climbs
// from one update per RTT. With the delivery noise ε at its prior that is
// no saturation and the rate climbs to the shared backlog bound; read
// with ε = 0 (the noise not yet measured taken as none) the first epoch is
// a saturation at 10 Hz, and the rate is held there for 10 s.
func TestDeliveryNoisePrior(t *testing.T) {
	run := func(prior bool) (Rate, EpochStats) {
		r := regulatorWith(t, nil)
		if !prior {
			r.deliv.noise = 0
		}
		tp := newTestPath(t, r, 50*time.Millisecond, 50*time.Millisecond, 3000)
		tp.foreign = sawQueue(0, 100*time.Millisecond, 5*time.Second, 0)
		tp.run(sec(5))
		st := r.LastEpoch()
		tp.run(sec(10))
		return tp.meanRate(sec(1), sec(10)), st
	}
	rate, st := run(true)
	require.Greater(t, float64(rate), 30.0, "climbs to the bounds: %v Hz", rate)
	require.NotEqual(t, BoundDelivery, st.Bound)
	require.Zero(t, st.Capacity, "no saturation seen")
	rate, st = run(false)
	require.Less(t, float64(rate), 12.0, "held at the first epoch's delivery rate: %v Hz", rate)
	require.Equal(t, BoundDelivery, st.Bound)
}

// TestDeliveryNoisePriorAfterRTO: a retransmission timeout forgets the
// path, the delivery noise included: ε restarts at its prior.
func TestDeliveryNoisePriorAfterRTO(t *testing.T) {
	r := regulatorWith(t, nil)
	require.Equal(t, satNoisePrior, r.deliv.noise)
	r.deliv.noise = 0
	r.OnRetransmissionTimeout(sec(1))
	require.Equal(t, satNoisePrior, r.deliv.noise)
}
