package acp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

func TestBaseDelayHistory(t *testing.T) {
	var b baseDelay
	require.Zero(t, b.min())
	b.update(0, 0) // ignored
	require.Zero(t, b.min())
	b.update(0, msd(40))
	b.update(clock.Mono(30*time.Second), msd(30))
	b.update(clock.Mono(90*time.Second), msd(50))
	require.Equal(t, msd(30), b.min(), "the minimum over the history")
	// Nine minutes later the 30 ms bucket is still in the 10-minute history …
	b.update(clock.Mono(9*time.Minute+30*time.Second), msd(60))
	require.Equal(t, msd(30), b.min())
	// … ten minutes after it, it has rotated out.
	b.update(clock.Mono(10*time.Minute+30*time.Second), msd(70))
	require.Equal(t, msd(50), b.min())
	b.update(clock.Mono(40*time.Minute), msd(80)) // idle far longer than the history
	require.Equal(t, msd(80), b.min(), "everything older has gone")
}

func TestQueueState(t *testing.T) {
	var q queueState
	require.Equal(t, inf, q.cap(4))
	q.sample(0, cc.AckSample{OWD: msd(30), RTT: msd(60)}, true)
	q.sample(1, cc.AckSample{OWD: msd(50), RTT: msd(80)}, true)
	q.sample(2, cc.AckSample{RTT: msd(100)}, false) // RTT-based: base 100 ms, queue 0
	q.close()
	require.True(t, q.fresh)

	require.InDelta(t, msd(20).Seconds()/3, q.delay.Seconds(), 1e-9, "mean of 0, 20 and 0 ms")
	require.InEpsilon(t, 4/(msd(20).Seconds()/3), float64(q.cap(4)), 1e-6)
	require.Equal(t, inf, q.cap(0), "off")
	require.InDelta(t, 100*msd(20).Seconds()/3, q.queued(100), 1e-6)
	q.close() // no samples: Q̄ stands
	require.False(t, q.fresh)
	require.True(t, q.valid)
	require.InDelta(t, msd(20).Seconds()/3, q.delay.Seconds(), 1e-9)
}

func TestRateMax(t *testing.T) {
	var m rateMax
	m.update(0, 100)
	m.update(clock.Mono(500*time.Millisecond), 80)
	require.Equal(t, 100.0, m.max())
	m.update(clock.Mono(9*time.Second), 90)
	require.Equal(t, 100.0, m.max(), "still within 10 s")
	m.update(clock.Mono(10*time.Second+time.Millisecond), 70)
	require.Equal(t, 90.0, m.max(), "the first second rotated out")
	m.update(clock.Mono(time.Minute), 10)
	require.Equal(t, 10.0, m.max())
}

// TestDeliverySaturation: an epoch is saturated when sent faster than
// delivered at the path's largest delivery rate; the capacity estimate
// follows saturated epochs, restarts on a jump; a send rate the path
// delivered faster in the last 10 s is not a saturation, and the ceiling lapses 10 s
// after the last saturation.
func TestDeliverySaturation(t *testing.T) {
	const band = 0.01
	at := func(s float64) clock.Mono { return sec(s) }
	var ds deliveryState
	ds.observe(at(0), 100, 100, band) // delivered as fast as sent
	require.False(t, ds.satNow)
	ds.observe(at(0.2), 120, 100, band) // sent faster, delivered at the maximum
	require.True(t, ds.satNow)
	require.Equal(t, 100.0, ds.capacity)
	ds.observe(at(0.4), 120, 104, band)
	require.True(t, ds.satNow)
	require.InDelta(t, 101, ds.capacity, 1e-9, "EWMA, gain 1/4")
	ds.observe(at(0.6), 140, 140, band) // a faster delivery: the maximum rises
	require.False(t, ds.satNow)
	ds.observe(at(0.8), 120, 110, band) // sent faster than delivered, but below the maximum (140): a neighbour's queue
	require.False(t, ds.satNow)
	require.InDelta(t, 101, ds.capacity, 1e-9)
	ds.observe(at(1), 150, 138, band) // within 2 % of the maximum: saturated, and 37 % above C: restart
	require.True(t, ds.satNow)
	require.Equal(t, 138.0, ds.capacity)
	ds.observe(at(1.2), 0, 0, band) // nothing measured
	require.False(t, ds.satNow)
	// A steady send rate whose deliveries jitter: 100 Hz delivered at
	// 100.5, then at 98.9 (within 2 % of the maximum, and sent 1.1 %
	// faster) is no saturation: the path delivered faster than 100 Hz
	// within the last 10 s.
	var jit deliveryState
	jit.observe(at(0), 100, 100.5, band)
	jit.observe(at(0.2), 100, 98.9, band)
	require.False(t, jit.satNow, "never sent faster than the path delivered")
	// Deliveries that jitter by ±4 % around a steady 100 Hz make ε about
	// 4 %; ten seconds later (the maximum forgotten) a 7 % step above
	// what the path last delivered is within 3ε, no saturation.
	for i := range 16 {
		jit.observe(at(0.4+0.2*float64(i)), 100, 100+4*float64(1-2*(i%2)), band)
	}
	require.False(t, jit.satValid)
	require.InDelta(t, 0.04, jit.noise, 0.005)
	jit.observe(at(14), 100, 100, band)
	jit.observe(at(14.2), 107, 100, band)
	require.False(t, jit.satNow, "a step within the delivery noise")
	jit.observe(at(14.4), 115, 100, band)
	require.True(t, jit.satNow, "a step beyond it")

	r := regulatorWith(t, nil)
	r.last = at(5)
	r.deliv = ds
	r.grad.rho = 120
	r.queue.delay, r.queue.valid = msd(50), true
	c, drain, ok := r.deliv.ceiling(r)
	require.True(t, ok)
	require.InDelta(t, 138/1.02, float64(c), 1e-9)
	require.Zero(t, drain, "not saturated now: no drain floor")
	r.deliv.satNow = true
	_, drain, _ = r.deliv.ceiling(r)
	require.InDelta(t, 140-120*0.05/r.epochLength().Seconds(), float64(drain), 1e-9, "btlBw − n_q/T")
	r.last = at(11.1)
	_, _, ok = r.deliv.ceiling(r)
	require.False(t, ok, "10 s after the last saturation the hold lapses")
}

// TestDeliveryResume: a queue-bound episode whose cuts took the rate below
// half resumes, once drained, at its lowest delivery rate; one that cut
// less does not; a cut with more than 2K updates queued forgets the path's
// delivery maximum.
func TestDeliveryResume(t *testing.T) {
	r := regulatorWith(t, nil)
	r.deliv.btl.update(0, 1000)
	r.grad.rho, r.grad.dlv = 1000, 150
	r.queue.delay, r.queue.valid = msd(100), true // 100 updates queued
	r.deliv.queueCut(r, 1000)
	require.Zero(t, r.deliv.btl.max(), "100 > 2K queued: the path changed")
	r.grad.dlv = 110
	r.deliv.queueCut(r, 40)
	require.Equal(t, 110.0, r.deliv.resume, "the lowest delivery rate of the episode")
	require.Equal(t, Rate(1000), r.deliv.resumeFrom, "the rate before the first cut")

	r.queue.fresh = true
	require.Equal(t, Rate(8), r.deliv.resumeRate(r, 8), "still queued: wait")
	r.grad.rho, r.queue.delay = 8, msd(10) // 0.08 updates queued
	require.InDelta(t, 110/1.02, float64(r.deliv.resumeRate(r, 8)), 1e-9)
	require.Zero(t, r.deliv.resume, "the episode is over")
	require.Equal(t, Rate(8), r.deliv.resumeRate(r, 8))

	r.deliv.queueCut(r, 12) // a cut from 12 Hz ...
	r.grad.rho = 8
	require.Equal(t, Rate(8), r.deliv.resumeRate(r, 8), "... to 8 Hz is not below half: no resume")
}

func TestSourceState(t *testing.T) {
	var s sourceState
	// Gate opens at 16 ms intervals; the source offers every 20 ms: each
	// send waits for the source.
	last := clock.Mono(0)
	for i := range 10 {
		now := clock.Mono(time.Duration(i) * 20 * time.Millisecond)
		s.onSend(now, now, last.Add(16*time.Millisecond), i > 0)
		last = now
	}
	require.InDelta(t, 50, float64(s.close()), 1e-9, "9 intervals of 20 ms")
	require.Zero(t, s.sends, "close resets")
	// Updates generated before the gate opened: the regulator set the pace.
	for i := range 10 {
		now := clock.Mono(time.Duration(i) * 30 * time.Millisecond)
		s.onSend(now, now-clock.Mono(time.Millisecond), now, i > 0)
	}
	require.Zero(t, s.close())
	s.onSend(0, 0, 0, false)
	s.onSend(10, 10, 5, true)
	require.Zero(t, s.close(), "fewer than three sends")
}

// TestOfferedRateStart: readings offered while the gate is closed measure
// the source, and the regulator starts at (1 + h)·σ_o, at most StartBurst per
// RTT; readings offered when the gate is open (generate at will) do not.
func TestOfferedRateStart(t *testing.T) {
	r := regulatorWith(t, nil)
	r.SeedRTT(100 * time.Millisecond)
	require.Equal(t, Rate(10), r.Rate(), "one update per RTT")
	r.OnUpdateOffered(0)
	r.OnUpdateSent(0, 0, 0)
	r.OnUpdateOffered(clock.Mono(20 * time.Millisecond)) // gate opens at 100 ms
	require.InDelta(t, 50, float64(r.offered.rate()), 1e-9)
	require.InDelta(t, 100, float64(r.Rate()), 1e-9, "(1 + 1)·50 Hz, under 10 per RTT")

	small := regulatorWith(t, func(tu *Tuning) { tu.StartBurst = 4 })
	small.SeedRTT(100 * time.Millisecond)
	small.OnUpdateOffered(0)
	small.OnUpdateSent(0, 0, 0)
	small.OnUpdateOffered(clock.Mono(20 * time.Millisecond))
	require.InDelta(t, 40, float64(small.Rate()), 1e-9, "at most 4 per RTT")

	atWill := regulatorWith(t, nil)
	atWill.SeedRTT(100 * time.Millisecond)
	for i := range 4 { // offered exactly when the gate opens (no ACKs: within two epochs)
		now := clock.Mono(time.Duration(i) * 100 * time.Millisecond)
		atWill.OnUpdateOffered(now)
		atWill.OnUpdateSent(now, cc.PacketNumber(i), now)
	}
	require.Zero(t, atWill.offered.rate(), "%+v", atWill.offered)
	require.Equal(t, Rate(10), atWill.Rate(), "ACP's start")
}
