package acp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// gradientAt sets r up as if the previous epoch had sent at prevRho with mean
// age prevAge and queueing prevQ, the closing one at rho with age and q, and
// returns the closing epoch's decision.
func gradientAt(r *Regulator, prevRho, rho float64, prevAge, age, prevQ, q time.Duration) (EpochStats, Action, Rate) {
	r.grad.prevRho, r.grad.prevOK = prevRho, true
	r.grad.rho, r.grad.rhoOK = rho, true
	r.grad.prevQ, r.grad.prevQOK = prevQ, true
	r.grad.acked = true
	r.prevAge, r.prevValid = prevAge, true
	st := EpochStats{Age: age, AgeValid: true}
	a, l := r.gradient(&st, true, q, true)
	return st, a, l
}

// TestGradientRows: ACP's four rows on the send-rate change (Δρ, δ), and no
// change within RateBand.
func TestGradientRows(t *testing.T) {
	for _, tc := range []struct {
		name       string
		prev, rho  float64
		prevAge    time.Duration
		age        time.Duration
		explore    bool
		want       Action
		wantFactor float64 // the new rate over the old
	}{
		{"faster and fresher: INC", 100, 110, msd(50), msd(45), true, ActionInc, 1.5},
		{"faster and staler: DEC", 100, 110, msd(50), msd(55), true, ActionDec, 1 / 1.5},
		{"slower and staler: INC", 100, 90, msd(50), msd(55), true, ActionInc, 1.5},
		{"slower and fresher: DEC", 100, 90, msd(50), msd(45), true, ActionDec, 1 / 1.5},
		{"Δρ within RateBand: explore", 100, 100.9, msd(50), msd(55), true, ActionInc, 1.5},
		{"Δρ within RateBand, no exploring: hold", 100, 100.9, msd(50), msd(55), false, ActionHold, 1},
		{"δ = 0: explore", 100, 110, msd(50), msd(50), true, ActionInc, 1.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := regulatorWith(t, func(tu *Tuning) { tu.ExploreOnHold, tu.NoiseBand = tc.explore, 0 })
			r.setRate(100)
			st, a, l := gradientAt(r, tc.prev, tc.rho, tc.prevAge, tc.age, 0, 0)
			require.Equal(t, tc.want, a)
			require.InDelta(t, 100*tc.wantFactor, float64(l), 1e-9)
			require.True(t, st.Compared)
			if tc.rho-tc.prev < 1 && tc.rho-tc.prev > -1 {
				require.Zero(t, st.RateChange, "within the band")
			}
		})
	}
}

// TestGradientNeedsTwoMeasuredEpochs: without ρ, the previous ρ or an age
// the rule holds and does not explore.
func TestGradientNeedsTwoMeasuredEpochs(t *testing.T) {
	r := regulatorWith(t, nil)
	r.setRate(100)
	r.grad.rho, r.grad.rhoOK = 100, true // no previous ρ
	st := EpochStats{Age: msd(50), AgeValid: true}
	a, l := r.gradient(&st, true, 0, false)
	require.Equal(t, ActionHold, a)
	require.Equal(t, Rate(100), l)
	require.False(t, st.Compared)
}

// TestGradientStep: consecutive moves in one direction grow the step by
// 1.2 up to StepMax, a reversal halves it down to StepMin, and a bound's
// clip restarts from StepMin.
func TestGradientStep(t *testing.T) {
	r := regulatorWith(t, nil)
	r.setRate(100)
	want := []float64{0.5, 0.5, 0.5} // already at StepMax 0.5: grows no further
	for _, w := range want {
		l := r.gradientMove(+1)
		require.InDelta(t, w, r.grad.step, 1e-12)
		require.InDelta(t, float64(r.rate)*(1+w), float64(l), 1e-9)
	}
	for _, w := range []float64{0.25, 0.125, 0.0625} { // reversals
		r.grad.dir = -r.grad.dir
		dir := -r.grad.dir
		r.gradientMove(dir)
		require.InDelta(t, w, r.grad.step, 1e-12)
	}
	for _, w := range []float64{0.075, 0.09, 0.108} { // same direction again
		r.gradientMove(r.grad.dir)
		require.InDelta(t, w, r.grad.step, 1e-12)
	}
	r.grad.clipped(r.tun.StepMin)
	require.Equal(t, 0.02, r.grad.step)
	require.Zero(t, r.grad.dir)
	r.gradientMove(-1)
	require.Equal(t, 0.02, r.grad.step, "after a clip the first move does not adapt the step")
	for range 10 {
		r.grad.dir = -r.grad.dir
		r.gradientMove(-r.grad.dir)
	}
	require.Equal(t, 0.02, r.grad.step, "reversals never go below StepMin")
}

// TestExcessAge: the age change is judged net of the queueing delay's
// change: the age rose by 10 ms as the rate rose, but the queue rose by 12
// ms, so the rate bought 2 ms: INC. Without ExcessAge: DEC.
func TestExcessAge(t *testing.T) {
	for _, on := range []bool{true, false} {
		r := regulatorWith(t, func(tu *Tuning) { tu.ExcessAge, tu.NoiseBand = on, 0 })
		r.setRate(100)
		st, a, _ := gradientAt(r, 100, 110, msd(200), msd(210), msd(150), msd(162))
		if on {
			require.Equal(t, ActionInc, a)
			require.Equal(t, msd(-2), st.ExcessDelta)
		} else {
			require.Equal(t, ActionDec, a)
			require.Equal(t, msd(10), st.ExcessDelta)
		}
		require.Equal(t, msd(10), st.Delta, "Delta stays the age change")
	}
}

// TestNoiseBand: an age change within the running mean of |δ| is no
// information (explore: INC); one that stands out of it counts.
func TestNoiseBand(t *testing.T) {
	r := regulatorWith(t, func(tu *Tuning) { tu.NoiseBand = 1 })
	r.setRate(100)
	r.grad.noise = msd(10).Seconds()
	_, a, _ := gradientAt(r, 100, 110, msd(200), msd(208), 0, 0) // +8 ms: noise
	require.Equal(t, ActionInc, a)
	require.InDelta(t, 0.00975, r.grad.noise, 1e-12, "the EWMA takes the sample after the test: 10 + (8 − 10)/8 ms")
	_, a, _ = gradientAt(r, 100, 110, msd(200), msd(230), 0, 0) // +30 ms: stands out
	require.Equal(t, ActionDec, a)

	r = regulatorWith(t, func(tu *Tuning) { tu.NoiseBand = 0 })
	r.setRate(100)
	r.grad.noise = msd(10).Seconds()
	_, a, _ = gradientAt(r, 100, 110, msd(200), msd(208), 0, 0)
	require.Equal(t, ActionDec, a, "without the band +8 ms counts")
}

// TestGradientNoAck: two epochs in a row without an ACK while updates were
// out is a DEC, and the step grows with every further one.
func TestGradientNoAck(t *testing.T) {
	r := regulatorWith(t, nil)
	r.setRate(100)
	st := EpochStats{}
	a, _ := r.gradient(&st, true, 0, false)
	require.Equal(t, ActionHold, a, "one epoch without an ACK: not yet")
	a, l := r.gradient(&st, true, 0, false)
	require.Equal(t, ActionDec, a)
	r.setRate(l)
	a, l2 := r.gradient(&st, true, 0, false)
	require.Equal(t, ActionDec, a)
	require.Less(t, float64(l2)/float64(l), 1/1.5+1e-9)
	r.grad.acked = true
	a, _ = r.gradient(&st, true, 0, false)
	require.NotEqual(t, ActionDec, a, "an ACK ends the run")
	a, _ = r.gradient(&st, false, 0, false)
	require.Equal(t, ActionHold, a, "nothing outstanding: nothing to hear")
}

// TestSendAndDeliveryRate: ρ counts every update sent between two
// acknowledged ones (lost ones too) over their send times; the delivery rate
// over their delivery times.
func TestSendAndDeliveryRate(t *testing.T) {
	a := rateMark{seq: 10, sent: ms(100), recv: ms(150), valid: true}
	b := rateMark{seq: 30, sent: ms(300), recv: ms(400), valid: true}
	rho, ok := sendRate(a, b)
	require.True(t, ok)
	require.InDelta(t, 100, rho, 1e-9)
	d, ok := deliveryRate(a, b)
	require.True(t, ok)
	require.InDelta(t, 80, d, 1e-9, "the queue grew by 50 ms: delivered slower than sent")
	_, ok = sendRate(a, rateMark{})
	require.False(t, ok)
	_, ok = sendRate(b, a)
	require.False(t, ok, "backwards")
	_, ok = deliveryRate(a, rateMark{seq: 30, sent: a.sent + 1, recv: a.recv, valid: true})
	require.False(t, ok, "no time between the deliveries")

	var g gradientState
	g.onAck(5, ms(10), ms(20))
	g.onAck(3, ms(5), ms(30)) // older: not the newest
	require.Equal(t, uint64(5), g.newest.seq)
	var st EpochStats
	g.measure(&st)
	require.False(t, g.rhoOK, "one mark only")
	g.onAck(25, ms(210), ms(220))
	g.measure(&st)
	require.InDelta(t, 100, g.rho, 1e-9)
	require.InDelta(t, 100, float64(st.SendRate), 1e-9)
	require.InDelta(t, 100, float64(st.DeliveryRate), 1e-9)
}

// TestEpochUpdates: at high rates the epoch is EpochUpdates updates long,
// never shorter than SRTT nor longer than MinEpoch.
func TestEpochUpdates(t *testing.T) {
	r := regulatorWith(t, nil)
	r.rtt.Update(2 * time.Millisecond)
	for _, tc := range []struct {
		rate Rate
		want time.Duration
	}{
		{1000, 20 * time.Millisecond},
		{10, 200 * time.Millisecond},  // 20 updates would be 2 s: MinEpoch
		{20000, 2 * time.Millisecond}, // 1 ms: SRTT
	} {
		r.setRate(tc.rate)
		require.Equal(t, tc.want, r.epochLength(), "%v Hz", tc.rate)
	}
	off := regulatorWith(t, func(tu *Tuning) { tu.EpochUpdates = 0 })
	off.rtt.Update(2 * time.Millisecond)
	off.setRate(1000)
	require.Equal(t, 200*time.Millisecond, off.epochLength())
}

// TestRTOForgetsThePath: after a retransmission timeout the rule's step and
// history and the delivery bound's capacity are forgotten.
func TestRTOForgetsThePath(t *testing.T) {
	// Without the backlog bound (10/40 ms = 250 Hz), so that the rate
	// reaches the 500 Hz capacity.
	tp := newTestPath(t, regulatorWith(t, func(tu *Tuning) { tu.BacklogBound = 0 }), 20*time.Millisecond, 20*time.Millisecond, 500)
	tp.run(sec(10))
	r := tp.p.(*Regulator)
	require.True(t, r.deliv.satValid, "the capacity was found")
	r.OnRetransmissionTimeout(tp.now)
	require.False(t, r.deliv.satValid)
	require.Zero(t, r.deliv.capacity)
	require.Equal(t, stepStart, r.grad.step)
	require.False(t, r.grad.prevOK)
	require.InDelta(t, 1/r.smoothedRTT().Seconds(), float64(r.Rate()), 1e-9, "one update per SRTT")
}
