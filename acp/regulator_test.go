package acp

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// The scenario harness drives a regulator over a path with a 100 ms RTT and a
// 50 ms forward delay in epochs of exactly 100 ms (InitialRTT = SRTT = 100 ms):
//
//   - every 10 ms a regular update is sent; it is acknowledged 100 ms later
//     (RTT sample 100 ms, OWD 50 ms unless the plan says otherwise), so ACKs
//     arrive every 10 ms and Z = 10 ms exactly;
//   - regular updates sent in epoch k are generated off_k before they are
//     sent (stale data makes the monitor's age higher);
//   - right after epoch k starts, extra_k additional updates are sent and
//     left outstanding; they are declared lost at the start of epoch k+1.
//
// Ten regular updates are always outstanding, so B̄_k = 10 + extra_k. The ACK
// lag is 50 ms, so epoch k measures the monitor's sawtooth over
// [100k − 50, 100k + 50] ms, where the monitor receives the regular updates of
// epoch k−1 every 10 ms, each tooth rising from 50 + off_{k−1} to
// 60 + off_{k−1} ms: Δ̄_k = 55 ms + off_{k−1} (k ≥ 1; epoch 0 sees no ACK).
// Hence b_k = extra_k − extra_{k−1}, δ_k = off_{k−1} − off_{k−2}, and the first
// epoch that can act is k = 2. A rule then sets λ = 1/Z + b*/T = 100 + 10·b* Hz.
//
// This holds while off grows by less than the 10 ms tick from one epoch to
// the next: otherwise the first updates of an epoch are older than the last
// one delivered, hence stale (TestHarnessMeasurements checks that case).
const (
	hTick  = 10 * time.Millisecond
	hRTT   = 100 * time.Millisecond
	hOWD   = 50 * time.Millisecond
	hTicks = int(hRTT / hTick) // ticks per epoch
	hZ     = hTick
)

type epochPlan struct {
	extra int           // extra outstanding updates during the epoch
	off   time.Duration // generation offset of the epoch's regular updates
}

// ackMode is how the harness stamps ACKs.
type ackMode struct {
	owd      time.Duration // reported OWD (hOWD if 0)
	unsynced bool          // ClockSynced = false
}

type harness struct {
	t    *testing.T
	r    *Regulator
	pn   cc.PacketNumber
	sent map[clock.Mono]cc.PacketNumber // regular updates by send time
	lost []cc.PacketNumber              // extras to declare lost next epoch
	ack  ackMode
	// epochsOf is the number of 100 ms plan epochs per regulator epoch
	// (1 unless MinEpoch stretches epochs); run checks closes against it.
	epochsOf int
}

// literal is a Config running ACP's literal rule plus the refinements set in
// tun: the harness's arithmetic is the rule's, each test turns on what it
// tests.
func literal(tun Tuning) Config { return Config{Tuning: &tun} }

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	if cfg.InitialRTT == 0 {
		cfg.InitialRTT = hRTT
	}
	r, err := NewRegulator(cfg)
	require.NoError(t, err)
	return &harness{t: t, r: r, sent: map[clock.Mono]cc.PacketNumber{}, epochsOf: 1}
}

func (h *harness) send(now, gen clock.Mono) cc.PacketNumber {
	pn := h.pn
	h.pn++
	h.r.OnUpdateSent(now, pn, gen)
	return pn
}

func (h *harness) ackAt(now clock.Mono) {
	sentAt := now - clock.Mono(hRTT)
	pn, ok := h.sent[sentAt]
	if !ok {
		return
	}
	owd := h.ack.owd
	if owd == 0 {
		owd = hOWD
	}
	h.r.OnAck(now, cc.AckSample{
		PacketNumber: pn, Bytes: 1024, SentTime: sentAt, RTT: hRTT,
		OWD: owd, OWDValid: true, ClockSynced: !h.ack.unsynced,
	})
	delete(h.sent, sentAt)
}

// run plays the plan and returns the stats of each epoch, read right after
// the event that closed it.
func (h *harness) run(plan []epochPlan) []EpochStats {
	stats := make([]EpochStats, len(plan))
	for k := 0; k <= len(plan); k++ {
		for i := range hTicks {
			now := clock.Mono(time.Duration(k)*hRTT + time.Duration(i)*hTick)
			h.ackAt(now) // at i = 0 this event closes epoch k−1
			if i == 0 && k > 0 {
				stats[k-1] = h.r.LastEpoch()
				if k%h.epochsOf == 0 {
					require.Equal(h.t, int64(k/h.epochsOf-1), stats[k-1].Index, "epoch closed on time at %v", now)
				}
			}
			if k == len(plan) {
				return stats
			}
			if i == 0 {
				for _, pn := range h.lost {
					h.r.OnLoss(now, cc.LossEvent{PacketNumber: pn, Bytes: 1024})
				}
				h.lost = h.lost[:0]
			}
			h.sent[now] = h.send(now, now-clock.Mono(plan[k].off))
			if i == 0 {
				for range plan[k].extra {
					h.lost = append(h.lost, h.send(now, now))
				}
			}
		}
	}
	return stats
}

// plan builds a plan from parallel lists of extras and offsets (ms).
func plan(extra []int, offMS []float64) []epochPlan {
	p := make([]epochPlan, len(extra))
	for k := range p {
		p[k] = epochPlan{extra: extra[k], off: msd(offMS[k])}
	}
	return p
}

// wantRate is the rule's rate for b* on the harness path: 1/Z + b*/T.
func wantRate(bstar float64) Rate {
	return Rate(1/hZ.Seconds() + bstar/hRTT.Seconds())
}

func TestHarnessMeasurements(t *testing.T) {
	extra, off := []int{0, 2, 5, 1}, []float64{0, 5, 7, 0}
	h := newHarness(t, literal(Tuning{}))
	st := h.run(plan(extra, off))
	require.False(t, st[0].AgeValid, "no delivery known in epoch 0")
	require.Equal(t, ActionHold, st[1].Action, "epoch 1: epoch 0 had no age")
	for k := 1; k < len(st); k++ {
		require.InDelta(t, float64(10+extra[k]), st[k].Backlog, 1e-9, "B̄_%d", k)
		require.True(t, st[k].AgeValid)
		require.Equal(t, msd(55+off[k-1]), st[k].Age, "Δ̄_%d", k)
		require.Equal(t, hRTT, st[k].End.Sub(st[k].Start))
		require.Equal(t, hZ, st[k].Z)
		require.Equal(t, hRTT, st[k].T)
		require.Equal(t, cc.SignalOWD, st[k].Signal)
	}
	require.Equal(t, ms(50), st[1].AgeFrom, "age starts at the first delivery")
	require.Equal(t, ms(200-50), st[1].AgeTo, "horizon = close − ACK lag")

	// Stale updates: off jumps from 0 to 20 ms, so the updates sent at 100
	// and 110 ms (generated at 80 and 90 ms) are no newer than the one sent
	// at 90 ms (generated at 90 ms) and change nothing. Over epoch 2's window
	// [150, 250] the age rises from 60 to 80 ms until the delivery at 170,
	// then eight teeth of 70→80 ms: (1400 + 8·750) ms² / 100 ms = 74 ms.
	st = newHarness(t, literal(Tuning{})).run(plan([]int{0, 0, 0}, []float64{0, 20, 0}))
	require.Equal(t, msd(74), st[2].Age)
}

// TestDecisionTableRows drives one epoch into each row of ACP's decision table
// through the public event API. Epochs 0–2 are arranged to hold (epoch 2 has
// b = 0 or δ = 0), so epoch 3's row is reached from a non-(+,+) epoch.
func TestDecisionTableRows(t *testing.T) {
	tests := []struct {
		name   string
		extra  []int
		offMS  []float64
		b      float64 // b_3
		delta  float64 // δ_3, ms
		action Action
		bstar  float64
	}{
		{"b>0 δ>0 first: DEC", []int{0, 0, 0, 1}, []float64{0, 0, 5, 0}, 1, 5, ActionDec, -1},
		{"b<0 δ>0: INC", []int{0, 0, 2, 1}, []float64{0, 0, 5, 0}, -1, 5, ActionInc, +1},
		{"b>0 δ<0: INC", []int{0, 0, 0, 1}, []float64{5, 5, 0, 0}, 1, -5, ActionInc, +1},
		{"b<0 δ<0: DEC", []int{1, 1, 1, 0}, []float64{5, 5, 0, 0}, -1, -5, ActionDec, -1},
		{"b=0: hold", []int{0, 0, 0, 0}, []float64{0, 0, 5, 0}, 0, 5, ActionHold, 0},
		{"δ=0: hold", []int{0, 0, 0, 1}, []float64{0, 0, 0, 0}, 1, 0, ActionHold, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, literal(Tuning{}))
			st := h.run(plan(tc.extra, tc.offMS))
			require.Equal(t, ActionHold, st[2].Action, "set-up epoch must hold")
			e := st[3]
			require.True(t, e.Compared)
			require.InDelta(t, tc.b, e.B, 1e-9)
			require.Equal(t, msd(tc.delta), e.Delta)
			require.Equal(t, tc.action, e.Action)
			require.Equal(t, tc.bstar, e.BStar)
			require.Zero(t, e.Gamma)
			want := Rate(1 / hRTT.Seconds()) // hold: still the start rate, one update per RTT
			if tc.action != ActionHold {
				want = wantRate(tc.bstar)
			}
			require.InDelta(t, float64(want), float64(e.Rate), 1e-9)
			require.InDelta(t, float64(want), float64(h.r.Rate()), 1e-9)
		})
	}
}

// TestGammaGrowthAndReset: consecutive (b>0, δ>0) epochs give DEC, MDEC(1),
// MDEC(2), MDEC(3) (clamped at λ_min), an INC resets γ, and the next
// (b>0, δ>0) epoch is a DEC again, then MDEC(1).
func TestGammaGrowthAndReset(t *testing.T) {
	h := newHarness(t, literal(Tuning{}))
	extra := []int{0, 0, 0, 1, 2, 3, 4, 3, 4, 5}
	off := []float64{0, 0, 5, 10, 15, 20, 25, 30, 35, 40}
	st := h.run(plan(extra, off))
	minRate := h.r.Config().MinRate
	tests := []struct {
		k      int
		action Action
		gamma  int
		bstar  float64 // computed by hand from B̄_k = 10 + extra_k
		rate   Rate
	}{
		{3, ActionDec, 0, -1, wantRate(-1)},                // 90 Hz
		{4, ActionMDec, 1, -0.5 * 12, wantRate(-6)},        // 40 Hz
		{5, ActionMDec, 2, -0.75 * 13, wantRate(-9.75)},    // 2.5 Hz
		{6, ActionMDec, 3, -0.875 * 14, minRate},           // 100 − 122.5 < 0: λ_min
		{7, ActionInc, 0, +1, wantRate(+1)},                // b<0, δ>0: γ reset
		{8, ActionDec, 0, -1, wantRate(-1)},                // new run starts with DEC
		{9, ActionMDec, 1, -0.5 * 15, wantRate(-0.5 * 15)}, // 25 Hz
	}
	for _, tc := range tests {
		e := st[tc.k]
		require.Equal(t, tc.action, e.Action, "epoch %d", tc.k)
		require.Equal(t, tc.gamma, e.Gamma, "epoch %d", tc.k)
		require.InDelta(t, tc.bstar, e.BStar, 1e-9, "epoch %d", tc.k)
		require.InDelta(t, float64(tc.rate), float64(e.Rate), 1e-9, "epoch %d", tc.k)
	}
}

// TestMinUpdatesPerRTT: the γ run of TestGammaGrowthAndReset with λ_min
// raised to MinUpdatesPerRTT/SRTT (SRTT = 100 ms): epoch 5 (2.5 Hz) is raised
// to the floor if the floor is higher, epoch 6 (< 0 Hz) lands on it instead of
// 0.1 Hz; faster rates are untouched.
func TestMinUpdatesPerRTT(t *testing.T) {
	extra := []int{0, 0, 0, 1, 2, 3, 4}
	off := []float64{0, 0, 5, 10, 15, 20, 25}
	tests := []struct {
		perRTT float64
		floor  Rate
	}{
		{0, 0.1}, // off: MinRate
		{1, 10},  // never slower than Lazy
		{0.5, 5},
	}
	for _, tc := range tests {
		st := newHarness(t, literal(Tuning{MinUpdatesPerRTT: tc.perRTT})).run(plan(extra, off))
		require.InDelta(t, float64(wantRate(-6)), float64(st[4].Rate), 1e-9, "40 Hz is above any floor")
		require.InDelta(t, float64(max(tc.floor, wantRate(-9.75))), float64(st[5].Rate), 1e-9, "perRTT %v", tc.perRTT)
		require.InDelta(t, float64(tc.floor), float64(st[6].Rate), 1e-9, "perRTT %v", tc.perRTT)
	}
	// The floor never exceeds MaxRate.
	r, err := NewRegulator(Config{MaxRate: 2, InitialRTT: hRTT, Tuning: &Tuning{MinUpdatesPerRTT: 1}})
	require.NoError(t, err)
	require.Equal(t, Rate(2), r.minRate())
}

func TestRateClampedAtMax(t *testing.T) {
	h := newHarness(t, Config{MaxRate: 105, Tuning: &Tuning{}})
	st := h.run(plan([]int{0, 0, 2, 1}, []float64{0, 0, 5, 0})) // INC → 110 Hz
	require.Equal(t, ActionInc, st[3].Action)
	require.Equal(t, Rate(105), st[3].Rate)
	require.Equal(t, Rate(105), h.r.Rate())
}

// TestAgeSource checks true monitor age against the RTT approximation. The
// receiver reports OWD 90 ms (e.g. its clock is 40 ms off) on a path whose
// real forward delay the harness makes 50 ms with ACKs 100 ms after sending.
// Synced and plausible → r = sent + 90 ms, Δ̄ = 95 ms + off; otherwise
// r = ACK arrival − RTT/2 = sent + 50 ms, Δ̄ = 55 ms + off.
func TestAgeSource(t *testing.T) {
	tests := []struct {
		name    string
		source  AgeSource
		mode    ackMode
		wantAge time.Duration // Δ̄_2 with off_1 = 5 ms
		signal  cc.DelaySignal
	}{
		{"synced OWD: true age", AgeFromOWD, ackMode{owd: msd(90)}, msd(95 + 5), cc.SignalOWD},
		{"unsynced: RTT/2 fallback", AgeFromOWD, ackMode{owd: msd(90), unsynced: true}, msd(55 + 5), cc.SignalRTT},
		{"OWD > RTT: implausible, fallback", AgeFromOWD, ackMode{owd: msd(150)}, msd(55 + 5), cc.SignalRTT},
		{"AgeFromRTT ignores OWD", AgeFromRTT, ackMode{owd: msd(90)}, msd(55 + 5), cc.SignalRTT},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, literal(Tuning{AgeSource: tc.source}))
			h.ack = tc.mode
			st := h.run(plan([]int{0, 0, 0}, []float64{0, 5, 0}))
			require.True(t, st[2].AgeValid)
			require.Equal(t, tc.wantAge, st[2].Age)
			require.Equal(t, tc.signal, st[2].Signal)
			require.Equal(t, tc.signal, h.r.Signal())
		})
	}
}

// TestMinEpoch: with MinEpoch above SRTT, epochs last MinEpoch and b*/T uses it.
func TestMinEpoch(t *testing.T) {
	h := newHarness(t, literal(Tuning{MinEpoch: 2 * hRTT}))
	h.epochsOf = 2
	h.run(plan([]int{0, 0, 0, 0, 0, 0}, []float64{0, 0, 0, 0, 0, 0})) // 600 ms
	require.EqualValues(t, 3, h.r.Counters().Epochs, "closed at 200, 400, 600 ms")
	e := h.r.LastEpoch()
	require.Equal(t, 2*hRTT, e.End.Sub(e.Start))
	require.Equal(t, 2*hRTT, e.T)
	require.Equal(t, ms(800), h.r.EpochEnd(), "the epoch that began at 600 ms")
}

func TestDecide(t *testing.T) {
	tests := []struct {
		b, d float64
		want row
	}{
		{1, 1, rowUpUp},
		{-1, 1, rowDownUp},
		{1, -1, rowUpDown},
		{-1, -1, rowDownDown},
		{0, 1, rowNone},
		{1, 0, rowNone},
		{0, 0, rowNone},
		{math.NaN(), 1, rowNone},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, decide(tc.b, tc.d), "b=%v δ=%v", tc.b, tc.d)
	}
}

// TestApplyGamma runs rows through the γ state machine directly.
func TestApplyGamma(t *testing.T) {
	r, err := NewRegulator(literal(Tuning{Kappa: 2}))
	require.NoError(t, err)
	const backlog = 8.0
	steps := []struct {
		rw     row
		action Action
		gamma  int
		bstar  float64
	}{
		{rowUpUp, ActionDec, 0, -2},
		{rowUpUp, ActionMDec, 1, -4},    // −(1 − 1/2)·8
		{rowUpUp, ActionMDec, 2, -6},    // −(1 − 1/4)·8
		{rowNone, ActionHold, 2, 0},     // hold ends the run …
		{rowUpUp, ActionDec, 0, -2},     // … so this is DEC, γ = 0
		{rowUpUp, ActionMDec, 1, -4},    //
		{rowDownDown, ActionDec, 0, -2}, // resets γ
		{rowUpDown, ActionInc, 0, 2},    //
		{rowDownUp, ActionInc, 0, 2},    //
	}
	for i, s := range steps {
		a, bstar := r.apply(s.rw, backlog)
		require.Equal(t, s.action, a, "step %d", i)
		require.Equal(t, s.gamma, r.gamma, "step %d", i)
		require.Equal(t, s.bstar, bstar, "step %d", i)
	}
}

func TestNextRate(t *testing.T) {
	tests := []struct {
		name   string
		z      time.Duration
		bstar  float64
		T      time.Duration
		lo, hi Rate
		want   Rate
	}{
		{"INC", msd(10), 1, msd(100), 0.1, 1000, 110},
		{"DEC", msd(10), -1, msd(100), 0.1, 1000, 90},
		{"MDEC", msd(20), -2.5, msd(50), 0.1, 1000, 0}, // 50 − 50 = 0 → λ_min
		{"clamped low", msd(100), -5, msd(100), 0.1, 1000, 0.1},
		{"clamped high", msd(1), 1, msd(100), 0.1, 500, 500},
		{"Z = 0: unbounded", 0, -1, msd(100), 0.1, 1000, 1000},
		{"slow path", time.Second, 1, 2 * time.Second, 0.1, 1000, 1.5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want == 0 {
				want = tc.lo
			}
			require.InDelta(t, float64(want), float64(nextRate(tc.z, tc.bstar, tc.T, tc.lo, tc.hi)), 1e-9)
		})
	}
}

func TestStartRateAndPacing(t *testing.T) {
	r, err := NewRegulator(literal(Tuning{}))
	require.NoError(t, err)
	require.Equal(t, Rate(1), r.Rate(), "one update per InitialRTT = 1 s")
	require.Equal(t, clock.Mono(0), r.NextSendTime(), "nothing sent: send now")
	require.Equal(t, "acp", r.Name())

	r.OnUpdateSent(ms(5), 0, ms(5))
	require.Equal(t, ms(1005), r.NextSendTime())
	r.OnAck(ms(205), cc.AckSample{PacketNumber: 0, RTT: msd(200)})
	require.Equal(t, Rate(5), r.Rate(), "one update per SRTT once sampled")
	require.Equal(t, ms(205), r.NextSendTime())
	require.Equal(t, 5.0, float64(r.Rate()))
	require.Equal(t, msd(200), r.rtt.Smoothed())
	require.Equal(t, DefaultUpdateSize, r.Config().UpdateSize, "the size a report turns λ into bit/s with")
	require.Zero(t, r.Backlog())
}

func TestBacklogLossAndLateAck(t *testing.T) {
	r, err := NewRegulator(literal(Tuning{}))
	require.NoError(t, err)
	for pn := range cc.PacketNumber(3) {
		r.OnUpdateSent(ms(float64(pn)), pn, ms(float64(pn)))
	}
	require.Equal(t, 3, r.Backlog())
	r.OnLoss(ms(10), cc.LossEvent{PacketNumber: 1})
	r.OnLoss(ms(10), cc.LossEvent{PacketNumber: 1}) // twice: counted once
	require.Equal(t, 2, r.Backlog())
	r.OnAck(ms(20), cc.AckSample{PacketNumber: 1, RTT: msd(19)}) // late ACK of a lost update
	require.Equal(t, 2, r.Backlog(), "already out of the backlog")
	require.True(t, r.saw.started, "a late ACK still delivers the update to the age process")
	r.OnAck(ms(21), cc.AckSample{PacketNumber: 0, RTT: msd(21)})
	require.Equal(t, 1, r.Backlog())
	r.OnAck(ms(22), cc.AckSample{PacketNumber: 0}) // duplicate
	r.OnAck(ms(23), cc.AckSample{PacketNumber: 99})
	require.Equal(t, 1, r.Backlog())
	// One epoch closed: at 21 ms, since SRTT became 19 ms at 20 ms.
	require.Equal(t, Counters{Sent: 3, Acked: 2, Lost: 1, LateAcks: 1, UnknownAcks: 2, Epochs: 1}, r.Counters())
}

// TestRingOverflow: with capacity 4, the fifth and sixth outstanding updates
// evict the oldest two, which are counted lost.
func TestRingOverflow(t *testing.T) {
	r, err := NewRegulator(Config{Capacity: 3, Tuning: &Tuning{}}) // rounded up to 4
	require.NoError(t, err)
	require.Equal(t, 4, r.ring.len())
	for pn := range cc.PacketNumber(6) {
		r.OnUpdateSent(ms(1), pn, ms(1))
	}
	require.Equal(t, 4, r.Backlog())
	require.EqualValues(t, 2, r.Counters().Evicted)
	r.OnAck(ms(2), cc.AckSample{PacketNumber: 0})
	require.EqualValues(t, 1, r.Counters().UnknownAcks, "evicted: forgotten")
	r.OnAck(ms(2), cc.AckSample{PacketNumber: 5})
	require.Equal(t, 3, r.Backlog())
}

func TestZIsEWMA(t *testing.T) {
	r, err := NewRegulator(literal(Tuning{ZGain: 0.25}))
	require.NoError(t, err)
	require.Zero(t, r.Z())
	r.OnAck(ms(0), cc.AckSample{PacketNumber: 100})
	require.Zero(t, r.Z(), "one ACK: no interval yet")
	r.OnAck(ms(10), cc.AckSample{PacketNumber: 101})
	require.Equal(t, msd(10), r.Z(), "first interval")
	r.OnAck(ms(30), cc.AckSample{PacketNumber: 102})
	require.Equal(t, msd(12.5), r.Z(), "10 + (20 − 10)/4")
	r.OnAck(ms(30), cc.AckSample{PacketNumber: 103}) // same ACK frame: interval 0
	require.Equal(t, msd(12.5*0.75), r.Z())
}

// TestEventsNeverGoBack: an event stamped before the previous one is taken at
// the previous one's time, so integrals never run backwards.
func TestEventsNeverGoBack(t *testing.T) {
	r, err := NewRegulator(literal(Tuning{}))
	require.NoError(t, err)
	r.OnUpdateSent(ms(100), 0, ms(100))
	r.OnUpdateSent(ms(50), 1, ms(50))
	require.Equal(t, ms(100), r.ring.get(1).sent)
	require.Equal(t, ms(1100), r.NextSendTime())
}

// TestRetransmissionTimeoutRestarts: after an RTO the regulator is back at one
// update per SRTT and needs two measured epochs before acting again.
func TestRetransmissionTimeoutRestarts(t *testing.T) {
	h := newHarness(t, literal(Tuning{}))
	st := h.run(plan([]int{0, 0, 2, 1}, []float64{0, 0, 5, 0}))
	require.Equal(t, ActionInc, st[3].Action)
	require.InDelta(t, 110, float64(h.r.Rate()), 1e-9)
	h.r.OnRetransmissionTimeout(clock.Mono(4 * hRTT))
	require.Equal(t, Rate(10), h.r.Rate())
	require.False(t, h.r.prevValid)
}

func TestConfigValidation(t *testing.T) {
	good, err := Config{}.withDefaults()
	require.NoError(t, err)
	rec := RecommendedTuning()
	rec.Kappa, rec.ZGain = 1, 0.125
	require.Equal(t, Config{
		UpdateSize: 1024, InitialRTT: time.Second,
		MinRate: 0.1, MaxRate: 1000, Capacity: 1024, Tuning: &rec,
	}, good)
	bad := []Config{
		{UpdateSize: -1},
		{InitialRTT: -1},
		{MinRate: -1},
		{MaxRate: Rate(math.NaN())},
		{MinRate: 10, MaxRate: 5},
		{MinRate: 2000}, // above the default MaxRate
		{Capacity: -1},
		{Tuning: &Tuning{Kappa: -1}},
		{Tuning: &Tuning{Kappa: math.Inf(1)}},
		{Tuning: &Tuning{ZGain: 1.5}},
		{Tuning: &Tuning{AgeSource: 7}},
		{Tuning: &Tuning{MinEpoch: -1}},
		{Tuning: &Tuning{MinUpdatesPerRTT: -1}},
		{Tuning: &Tuning{MinUpdatesPerRTT: math.Inf(1)}},
		{Tuning: &Tuning{EpochZ: -1}},
		{Tuning: &Tuning{IncFraction: 1.5}},
		{Tuning: &Tuning{StepMin: -0.1}},
		{Tuning: &Tuning{StepMin: 0.5, StepMax: 0.1}},
		{Tuning: &Tuning{StepMax: math.Inf(1)}},
		{Tuning: &Tuning{RateBand: 0.05}}, // not below StepMin: a step would look like no change
		{Tuning: &Tuning{QueueBound: -1}},
		{Tuning: &Tuning{QueueBound: math.NaN()}},
		{Tuning: &Tuning{SourceHeadroom: -1}},
		{Tuning: &Tuning{NoiseBand: math.Inf(1)}},
		{Tuning: &Tuning{EpochUpdates: -1}},
		{Tuning: &Tuning{StartBurst: -3}},
	}
	for _, c := range bad {
		_, err := NewRegulator(c)
		require.ErrorIs(t, err, ErrInvalidConfig, "%+v", c)
	}
	_, err = NewLiteral(Config{Tuning: &Tuning{}})
	require.ErrorIs(t, err, ErrInvalidConfig, "NewLiteral takes no Tuning")
}

func TestRegulatorNoAllocs(t *testing.T) {
	h := newHarness(t, literal(Tuning{}))
	h.run(plan([]int{0, 0, 1}, []float64{0, 0, 0})) // warm up: epochs closing
	tp := newTestPath(t, regulatorWith(t, nil), hOWD, hOWD, 500)
	tp.run(sec(5)) // the recommended regulator, warmed up on a path
	for _, r := range []*Regulator{h.r, tp.p.(*Regulator)} {
		now := clock.Mono(time.Hour)
		pn := cc.PacketNumber(1 << 20)
		allocs := testing.AllocsPerRun(1000, func() {
			now += clock.Mono(hTick)
			r.OnUpdateOffered(now)
			r.OnUpdateSent(now, pn, now)
			r.OnAck(now+clock.Mono(hRTT), cc.AckSample{PacketNumber: pn, RTT: hRTT, OWD: hOWD, OWDValid: true, ClockSynced: true})
			r.OnLoss(now, cc.LossEvent{PacketNumber: pn - 1})
			_, _ = r.Signal(), r.Rate()
			_ = r.NextSendTime()
			pn++
		})
		require.Zero(t, allocs, r.Name())
	}
}

func BenchmarkRegulatorOnUpdateSent(b *testing.B) {
	r, err := NewRegulator(literal(Tuning{}))
	require.NoError(b, err)
	b.ReportAllocs()
	now := clock.Mono(0)
	for i := range b.N {
		now += clock.Mono(time.Millisecond)
		r.OnUpdateSent(now, cc.PacketNumber(i), now) // evicts after the ring fills
	}
}

func BenchmarkRegulatorOnAck(b *testing.B) {
	r, err := NewRegulator(literal(Tuning{}))
	require.NoError(b, err)
	const batch = 512 // < ring capacity: every ACK finds its update
	now := clock.Mono(0)
	pn := cc.PacketNumber(0)
	b.ReportAllocs()
	b.StopTimer()
	for done := 0; done < b.N; done += batch {
		n := min(batch, b.N-done)
		first := pn
		for range n {
			now += clock.Mono(time.Millisecond)
			r.OnUpdateSent(now, pn, now)
			pn++
		}
		b.StartTimer()
		for p := first; p < pn; p++ {
			now += clock.Mono(time.Millisecond)
			r.OnAck(now, cc.AckSample{PacketNumber: p, RTT: 50 * time.Millisecond,
				OWD: 25 * time.Millisecond, OWDValid: true, ClockSynced: true})
		}
		b.StopTimer()
	}
}

// TestExploreOnHold: a steady path (b = 0) holds under the literal rule and
// takes an INC step with ExploreOnHold.
func TestExploreOnHold(t *testing.T) {
	p := plan([]int{0, 0, 0, 0}, []float64{0, 0, 0, 0})
	st := newHarness(t, literal(Tuning{})).run(p)
	require.Equal(t, ActionHold, st[3].Action)
	st = newHarness(t, literal(Tuning{ExploreOnHold: true})).run(p)
	require.True(t, st[3].Compared)
	require.Equal(t, ActionInc, st[3].Action)
	require.InDelta(t, 1, st[3].BStar, 1e-9, "+κ")
	require.InDelta(t, float64(wantRate(1)), float64(st[3].Rate), 1e-6)
}

// TestIncFraction: INC moves the backlog by max(κ, IncFraction·B̄).
func TestIncFraction(t *testing.T) {
	tests := []struct {
		frac, backlog, want float64
	}{
		{0, 10, 1},      // literal: +κ
		{0.5, 10, 5},    // proportional
		{0.5, 1.5, 1},   // never below κ
		{0.25, 100, 25}, // a long fat path climbs fast
	}
	for _, tc := range tests {
		h := newHarness(t, literal(Tuning{IncFraction: tc.frac}))
		act, bstar := h.r.apply(rowUpDown, tc.backlog)
		require.Equal(t, ActionInc, act)
		require.InDelta(t, tc.want, bstar, 1e-12, "frac %v backlog %v", tc.frac, tc.backlog)
	}
	_, err := NewRegulator(literal(Tuning{IncFraction: 1.5}))
	require.ErrorIs(t, err, ErrInvalidConfig)
}

// TestZCountsLosses: with ZCountsLosses a loss is a departure for Z (an
// interval sample, and one more departure in the epoch); without it only
// ACKs are. Updates 0–3 are sent at 0 ms; 0 is acknowledged at 100 ms, 1
// declared lost at 110 ms, 2 acknowledged at 120 ms; 3 is lost at 120 ms,
// with the ACK that revealed it (a zero interval).
func TestZCountsLosses(t *testing.T) {
	tests := []struct {
		name       string
		on         bool
		z          time.Duration
		departures int
	}{
		{"ACKs only (paper)", false, msd(20), 2},    // one interval: 120 − 100
		{"losses count", true, msd(10 - 10.0/8), 4}, // 10, 10, then 0: 10 + (0 − 10)/8
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewRegulator(Config{InitialRTT: time.Hour, Tuning: &Tuning{ZCountsLosses: tc.on}})
			require.NoError(t, err)
			for pn := range cc.PacketNumber(4) {
				r.OnUpdateSent(0, pn, 0)
			}
			r.OnAck(ms(100), cc.AckSample{PacketNumber: 0})
			r.OnLoss(ms(110), cc.LossEvent{PacketNumber: 1})
			r.OnAck(ms(120), cc.AckSample{PacketNumber: 2})
			r.OnLoss(ms(120), cc.LossEvent{PacketNumber: 3})
			r.OnLoss(ms(120), cc.LossEvent{PacketNumber: 3}) // repeated: not a departure
			require.Equal(t, tc.z, r.Z())
			require.Zero(t, r.Backlog())
			r.Tick(clock.Mono(time.Hour)) // closes the epoch
			require.Equal(t, tc.departures, r.LastEpoch().Departures)
		})
	}
}

// TestEpochZ: with EpochZ = n and at least n departures in the epoch, the
// rate uses Z = epoch length / departures; with fewer, or EpochZ = 0, the
// EWMA. Epoch 0 is [0, 100 ms] (InitialRTT 100 ms, no RTT sample); five ACKs
// at 50, 51, 52, 53 and 90 ms give the EWMA 1, 1, 1, then 1 + (37 − 1)/8 =
// 5.5 ms, while the epoch delivered at one update per 100/5 = 20 ms.
func TestEpochZ(t *testing.T) {
	tests := []struct {
		epochZ int
		z      time.Duration
	}{
		{0, msd(5.5)},
		{4, msd(20)},
		{5, msd(20)},
		{6, msd(5.5)},
	}
	for _, tc := range tests {
		r, err := NewRegulator(Config{InitialRTT: hRTT, Tuning: &Tuning{EpochZ: tc.epochZ}})
		require.NoError(t, err)
		for pn := range cc.PacketNumber(10) {
			r.OnUpdateSent(0, pn, 0)
		}
		for i, at := range []float64{50, 51, 52, 53, 90} {
			r.OnAck(ms(at), cc.AckSample{PacketNumber: cc.PacketNumber(i)})
		}
		require.Equal(t, msd(5.5), r.Z(), "the EWMA itself is unchanged")
		r.Tick(ms(100))
		st := r.LastEpoch()
		require.EqualValues(t, 0, st.Index)
		require.Equal(t, 5, st.Departures)
		require.Equal(t, tc.z, st.Z, "EpochZ %d", tc.epochZ)
	}
}

// TestEpochZSetsTheRate: the harness's "b<0, δ>0: INC" epoch with two
// losses declared at its start. Its Z is 10 ms by either estimate unless
// losses count, and 100 ms / 12 departures with ZCountsLosses and EpochZ.
func TestEpochZSetsTheRate(t *testing.T) {
	p := plan([]int{0, 0, 2, 1}, []float64{0, 0, 5, 0})
	tests := []struct {
		cfg  Config
		z    time.Duration
		rate Rate
	}{
		{literal(Tuning{}), hZ, wantRate(1)},                                   // 110 Hz
		{literal(Tuning{EpochZ: 8}), hZ, wantRate(1)},                          // 10 ACKs in 100 ms
		{literal(Tuning{ZCountsLosses: true, EpochZ: 8}), hRTT / 12, 120 + 10}, // 10 ACKs + 2 losses
	}
	for _, tc := range tests {
		st := newHarness(t, tc.cfg).run(p)
		e := st[3]
		require.Equal(t, ActionInc, e.Action, "%+v", tc.cfg)
		require.Equal(t, tc.z, e.Z, "%+v", tc.cfg)
		require.InDelta(t, float64(tc.rate), float64(e.Rate), 1e-4, "%+v", tc.cfg)
	}
}

// TestBinaryInc: the ceiling is λ_k of the DEC that starts a (b>0, δ>0) run;
// an INC below it goes at most halfway (or +κ/T if that is more); an INC at
// or above it clears it. T = 100 ms, κ = 1: κ/T = 10 Hz.
func TestBinaryInc(t *testing.T) {
	tests := []struct {
		name        string
		ceiling     Rate // before
		rate        Rate // λ_k
		action      Action
		upUp        bool
		lambda      Rate // the table's λ_{k+1}
		want        Rate
		wantCeiling Rate
	}{
		{"DEC starting a (+,+) run records λ_k", 0, 300, ActionDec, true, 290, 290, 300},
		{"later DEC of a new run replaces it", 500, 300, ActionDec, true, 290, 290, 300},
		{"MDEC keeps it", 300, 290, ActionMDec, true, 150, 150, 300},
		{"DEC on (−,−) keeps it", 300, 200, ActionDec, false, 190, 190, 300},
		{"INC bisects", 300, 100, ActionInc, false, 400, 200, 300},
		{"INC below the bisection is kept", 300, 100, ActionInc, false, 150, 150, 300},
		{"INC close below: +κ/T", 300, 295, ActionInc, false, 400, 305, 300},
		{"INC from the ceiling clears it", 300, 300, ActionInc, false, 400, 400, 0},
		{"INC that lowers λ is untouched", 300, 250, ActionInc, false, 240, 240, 300},
		{"no ceiling: INC untouched", 0, 100, ActionInc, false, 400, 400, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewRegulator(literal(Tuning{BinaryInc: true}))
			require.NoError(t, err)
			r.ceiling, r.rate = tc.ceiling, tc.rate
			got := r.binaryInc(tc.action, tc.upUp, tc.rate, tc.lambda, hRTT)
			require.InDelta(t, float64(tc.want), float64(got), 1e-9)
			require.Equal(t, tc.wantCeiling, r.ceiling)
		})
	}
}

// TestBinaryIncInTheTable: the γ run of TestGammaGrowthAndReset. Epoch 3's
// DEC starts the run at the start rate, 10 Hz, which becomes the ceiling;
// the MDECs take λ to λ_min (0.1 Hz), and epoch 7's INC, 110 Hz by the
// table, goes only to max(0.1 + 10, (0.1 + 10)/2) = 10.1 Hz. Without
// BinaryInc it is 110 Hz. An RTO clears the ceiling.
func TestBinaryIncInTheTable(t *testing.T) {
	extra := []int{0, 0, 0, 1, 2, 3, 4, 3}
	off := []float64{0, 0, 5, 10, 15, 20, 25, 30}
	st := newHarness(t, literal(Tuning{})).run(plan(extra, off))
	require.Equal(t, ActionInc, st[7].Action)
	require.InDelta(t, float64(wantRate(1)), float64(st[7].Rate), 1e-9)

	h := newHarness(t, literal(Tuning{BinaryInc: true}))
	st = h.run(plan(extra, off))
	require.Equal(t, ActionDec, st[3].Action)
	require.Equal(t, Rate(10), st[3].Ceiling)
	require.Equal(t, ActionMDec, st[6].Action)
	require.Equal(t, Rate(10), st[6].Ceiling, "MDECs keep it")
	require.Equal(t, ActionInc, st[7].Action)
	require.InDelta(t, 10.1, float64(st[7].Rate), 1e-9)
	require.Equal(t, Rate(10), h.r.ceiling)
	h.r.OnRetransmissionTimeout(ms(800)) // the close of epoch 7: no epoch closes now
	require.EqualValues(t, 8, h.r.Counters().Epochs)
	require.Zero(t, h.r.ceiling)
}
