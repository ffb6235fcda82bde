package clock

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// twoHosts simulates a sender and a receiver exchanging data packets and
// ACKs over two jittery paths, in virtual time. True time is int64 ns since
// the Unix epoch; the sender's clock reads true time; the receiver's clock
// reads true time + offset + skew·(true time − start).
type twoHosts struct {
	rng   *rand.Rand
	start int64 // true ns

	offset  time.Duration
	skewPPM float64

	fwd, rev simPath
	// extraFwd, if set, adds a standing queue to the forward path at true
	// elapsed time el.
	extraFwd func(el time.Duration) time.Duration
}

// simPath is a path's delay: base + an exponential queueing delay of mean
// MeanQ, truncated at MaxQ.
type simPath struct{ Base, MeanQ, MaxQ time.Duration }

func (p simPath) delay(r *rand.Rand) time.Duration {
	q := time.Duration(r.ExpFloat64() * float64(p.MeanQ))
	return p.Base + min(q, p.MaxQ)
}

func (h *twoHosts) senderStamp(t int64) Stamp { return Stamp(floorDiv(t, 1000)) }

func (h *twoHosts) receiverStamp(t int64) Stamp {
	el := float64(t - h.start)
	return Stamp(floorDiv(t+int64(h.offset)+int64(math.Round(el*h.skewPPM/1e6)), 1000))
}

// trueTheta is θ = receiver − sender at true time t (ns).
func (h *twoHosts) trueTheta(t int64) time.Duration {
	return h.offset + time.Duration(float64(t-h.start)*h.skewPPM/1e6)
}

// exchange is one data packet sent at true time t and its ACK.
type exchange struct {
	t1, t2, t3, t4 Stamp
	owd            time.Duration // true forward one-way delay
	at             int64         // true send time
}

func (h *twoHosts) packet(t int64) exchange {
	owdF := h.fwd.delay(h.rng)
	if h.extraFwd != nil {
		owdF += h.extraFwd(time.Duration(t - h.start))
	}
	arr := t + int64(owdF)
	ackSent := arr + int64(h.rng.IntN(1000))*int64(time.Microsecond) // ACK delay 0–1 ms
	ackArr := ackSent + int64(h.rev.delay(h.rng))
	return exchange{
		t1: h.senderStamp(t), t2: h.receiverStamp(arr),
		t3: h.receiverStamp(ackSent), t4: h.senderStamp(ackArr),
		owd: owdF, at: t,
	}
}

func newTwoHosts(seed uint64, offset time.Duration, skewPPM float64, fwd, rev simPath) *twoHosts {
	return &twoHosts{
		rng:    rand.New(rand.NewPCG(seed, 0x5eed)),
		start:  time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano(),
		offset: offset, skewPPM: skewPPM, fwd: fwd, rev: rev,
	}
}

// jittery is realistic test traffic: 20 ms base each way plus exponential
// queueing of mean 8 ms, capped at 60 ms.
var jittery = simPath{Base: 20 * time.Millisecond, MeanQ: 8 * time.Millisecond, MaxQ: 60 * time.Millisecond}

// runInband feeds dur of packets every ~10 ms (±0.5 ms) into e; a full
// exchange every `every`-th packet, only the forward sample otherwise
// (every = 1: all exchanges). It returns the OWD errors (estimate − truth)
// of the packets of the last second, and the last packet.
func runInband(t *testing.T, e *Inband, h *twoHosts, dur time.Duration, every int) (errs []time.Duration, last exchange) {
	t.Helper()
	end := h.start + int64(dur)
	i := 0
	for tt := h.start; tt < end; i++ {
		x := h.packet(tt)
		if i%every == 0 {
			require.NoError(t, e.AddExchange(x.t1, x.t2, x.t3, x.t4))
		} else {
			e.AddForward(x.t1, x.t2)
		}
		if end-tt <= int64(time.Second) {
			owd, ok := e.OWD(x.t1, x.t2)
			require.True(t, ok, "estimator must be synced at the end")
			errs = append(errs, owd-x.owd)
		}
		last = x
		tt += int64(10*time.Millisecond) + int64(h.rng.IntN(1000)-500)*int64(time.Microsecond)
	}
	return errs, last
}

func maxAbs(d []time.Duration) time.Duration {
	var m time.Duration
	for _, x := range d {
		m = max(m, x, -x)
	}
	return m
}

func mean(d []time.Duration) time.Duration {
	var s time.Duration
	for _, x := range d {
		s += x
	}
	return s / time.Duration(len(d))
}

// TestInbandOWDWithin1ms is the acceptance test: 500 ms offset, 100
// ppm skew, 20 ms + exponential queueing each way, a sample every ~10 ms;
// after 60 s every OWD of the last second is within 1 ms of the truth.
func TestInbandOWDWithin1ms(t *testing.T) {
	standingQueue := func(el time.Duration) time.Duration {
		if el > 20*time.Second && el < 35*time.Second {
			return 30 * time.Millisecond
		}
		return 0
	}
	for _, tc := range []struct {
		name    string
		offset  time.Duration
		skewPPM float64
		every   int // full exchange every n-th packet (1: every packet)
		extra   func(time.Duration) time.Duration
	}{
		{name: "offset+500ms skew+100ppm", offset: 500 * time.Millisecond, skewPPM: 100, every: 1},
		{name: "offset-500ms skew-100ppm", offset: -500 * time.Millisecond, skewPPM: -100, every: 1},
		{name: "no skew", offset: 500 * time.Millisecond, skewPPM: 0, every: 1},
		{name: "one-direction, a round trip every 2s", offset: 500 * time.Millisecond, skewPPM: 100, every: 200},
		{name: "15s standing queue mid-run", offset: 500 * time.Millisecond, skewPPM: 100, every: 1, extra: standingQueue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 5; seed++ {
				h := newTwoHosts(seed, tc.offset, tc.skewPPM, jittery, jittery)
				h.extraFwd = tc.extra
				e, err := NewInband(InbandConfig{})
				require.NoError(t, err)
				errs, last := runInband(t, e, h, 60*time.Second, tc.every)

				require.Greater(t, len(errs), 90)
				require.Less(t, maxAbs(errs), time.Millisecond, "seed %d: max OWD error over the last second", seed)
				st := e.Status()
				require.True(t, st.Synced)
				require.InDelta(t, tc.skewPPM, st.SkewPPM, 5, "seed %d: skew (ppm)", seed)
				thetaErr := e.Offset(last.t1) - h.trueTheta(last.at)
				require.Less(t, max(thetaErr, -thetaErr), time.Millisecond, "seed %d: offset error", seed)
				// NTP's bound holds: θ within ±ErrorBound, and the bound is
				// about half the base round trip (20 ms), not more.
				require.LessOrEqual(t, max(thetaErr, -thetaErr), st.ErrorBound)
				require.InDelta(t, float64(20*time.Millisecond), float64(st.ErrorBound), float64(2*time.Millisecond))
				t.Logf("seed %d: max |OWD err| %v, mean %v, skew %.2f ppm, θ err %v, bound ±%v",
					seed, maxAbs(errs), mean(errs), st.SkewPPM, thetaErr, st.ErrorBound)
			}
		})
	}
}

// TestInbandAsymmetryBias shows the fundamental limit of four-timestamp
// estimation honestly: with base delays of 30 ms forward and 10 ms back, θ
// is biased by half the asymmetry (+10 ms) and the forward OWD comes out as
// the mean of the two (20 ms, 10 ms short). No in-band method can tell the
// two cases apart; the error stays within ErrorBound.
func TestInbandAsymmetryBias(t *testing.T) {
	fwd := simPath{Base: 30 * time.Millisecond, MeanQ: 8 * time.Millisecond, MaxQ: 60 * time.Millisecond}
	rev := simPath{Base: 10 * time.Millisecond, MeanQ: 8 * time.Millisecond, MaxQ: 60 * time.Millisecond}
	h := newTwoHosts(7, 500*time.Millisecond, 100, fwd, rev)
	e, err := NewInband(InbandConfig{})
	require.NoError(t, err)
	errs, last := runInband(t, e, h, 60*time.Second, 1)

	wantBias := -(fwd.Base - rev.Base) / 2 // OWD error = −(asymmetry)/2
	require.InDelta(t, float64(wantBias), float64(mean(errs)), float64(time.Millisecond))
	for _, x := range errs {
		require.InDelta(t, float64(wantBias), float64(x), float64(time.Millisecond))
	}
	thetaErr := e.Offset(last.t1) - h.trueTheta(last.at)
	require.InDelta(t, float64(-wantBias), float64(thetaErr), float64(time.Millisecond))
	require.LessOrEqual(t, max(thetaErr, -thetaErr), e.Status().ErrorBound)
	// The skew is unaffected by a constant asymmetry.
	require.InDelta(t, 100, e.SkewPPM(), 5)
}

func TestInbandNotSyncedWithoutBothDirections(t *testing.T) {
	h := newTwoHosts(3, 500*time.Millisecond, 100, jittery, jittery)
	e, err := NewInband(InbandConfig{})
	require.NoError(t, err)
	for tt := h.start; tt < h.start+int64(30*time.Second); tt += int64(10 * time.Millisecond) {
		x := h.packet(tt)
		e.AddForward(x.t1, x.t2)
	}
	// Forward samples alone give the skew but cannot split apparent delay
	// into OWD and offset.
	require.False(t, e.Synced())
	require.InDelta(t, 100, e.SkewPPM(), 5)
	_, ok := e.OWD(h.senderStamp(h.start), h.receiverStamp(h.start))
	require.False(t, ok)

	// One round trip anchors θ.
	x := h.packet(h.start + int64(30*time.Second))
	require.NoError(t, e.AddExchange(x.t1, x.t2, x.t3, x.t4))
	require.True(t, e.Synced())
	owd, ok := e.OWD(x.t1, x.t2)
	require.True(t, ok)
	// A single reverse sample carries its own queueing: error ≤ its
	// queueing/2 plus the forward envelope's, within the bound.
	require.Less(t, max(owd-x.owd, x.owd-owd), e.Status().ErrorBound)
}

func TestInbandSyncedNeedsMinWindows(t *testing.T) {
	h := newTwoHosts(4, 500*time.Millisecond, 100, jittery, jittery)
	e, err := NewInband(InbandConfig{Window: 500 * time.Millisecond, MinWindows: 6})
	require.NoError(t, err)
	var syncedAt time.Duration
	for tt := h.start; tt < h.start+int64(10*time.Second); tt += int64(10 * time.Millisecond) {
		x := h.packet(tt)
		require.NoError(t, e.AddExchange(x.t1, x.t2, x.t3, x.t4))
		if e.Synced() {
			syncedAt = time.Duration(tt - h.start)
			break
		}
	}
	// The 6th half-second window opens at 2.5 s on the sender's clock; ACKs
	// (stamped at arrival, ~40 ms after their data) reach it first.
	require.GreaterOrEqual(t, syncedAt, 2400*time.Millisecond)
	require.Less(t, syncedAt, 2500*time.Millisecond)
}

func TestInbandImplausibleSkewNotSynced(t *testing.T) {
	h := newTwoHosts(5, 0, 5000, jittery, jittery) // 5000 ppm: broken clock
	e, err := NewInband(InbandConfig{})
	require.NoError(t, err)
	_, _ = runInbandNoCheck(e, h, 30*time.Second)
	require.False(t, e.Synced())
	require.InDelta(t, DefaultInbandMaxSkewPPM, e.SkewPPM(), 1e-9, "clamped")
}

func runInbandNoCheck(e *Inband, h *twoHosts, dur time.Duration) (n int, last exchange) {
	for tt := h.start; tt < h.start+int64(dur); tt += int64(10 * time.Millisecond) {
		last = h.packet(tt)
		_ = e.AddExchange(last.t1, last.t2, last.t3, last.t4)
		n++
	}
	return n, last
}

func TestInbandHistoryAndRejects(t *testing.T) {
	e, err := NewInband(InbandConfig{Window: time.Second, Windows: 4, MinWindows: 2})
	require.NoError(t, err)
	const s = Stamp(1_000_000) // 1 s in µs

	require.ErrorIs(t, e.AddExchange(10*s, 10*s+5, 10*s+4, 10*s+9), ErrBadExchange, "ACK sent before data received")
	require.ErrorIs(t, e.AddExchange(10*s, 10*s+5, 10*s+6, 10*s-1), ErrBadExchange, "ACK received before data sent")
	require.Equal(t, uint64(2), e.Status().Dropped)
	require.Equal(t, uint64(0), e.Status().Samples)

	// Clocks equal, 1000 µs each way.
	for i := range Stamp(4) {
		require.NoError(t, e.AddExchange(10*s+i*s, 10*s+i*s+1000, 10*s+i*s+1000, 10*s+i*s+2000))
	}
	require.True(t, e.Synced())
	require.Equal(t, time.Duration(0), e.Offset(13*s))
	owd, ok := e.OWD(13*s, 13*s+1500)
	require.True(t, ok)
	require.Equal(t, 1500*time.Microsecond, owd)
	require.Equal(t, time.Millisecond, e.Status().ErrorBound)

	// Older than the 4-window history: dropped.
	e.AddForward(9*s, 9*s+1)
	require.Equal(t, uint64(3), e.Status().Dropped)

	// Beyond the horizon: not answered.
	_, ok = e.OWD(20*s, 20*s+1000)
	require.False(t, ok)

	// A jump far ahead empties the history: one window is too few.
	require.NoError(t, e.AddExchange(100*s, 100*s+1000, 100*s+1000, 100*s+2000))
	require.False(t, e.Synced())
	require.Equal(t, 1, e.Status().ForwardWindows)

	e.Reset()
	require.Equal(t, InbandStatus{}, e.Status())
}

func TestInbandNegativeStamps(t *testing.T) {
	// Windows tile time evenly across zero (floor division).
	require.Equal(t, int64(-1), floorDiv(-1, 1000))
	require.Equal(t, int64(999), floorMod(-1, 1000))
	require.Equal(t, int64(0), floorDiv(999, 1000))
	e, err := NewInband(InbandConfig{Windows: 4, MinWindows: 2})
	require.NoError(t, err)
	for i := Stamp(-2); i < 2; i++ {
		t1 := i * 1_000_000
		require.NoError(t, e.AddExchange(t1, t1+700, t1+700, t1+1000))
	}
	require.True(t, e.Synced())
	require.Equal(t, 200*time.Microsecond, e.Offset(0))
}

func TestInbandConfig(t *testing.T) {
	e, err := NewInband(InbandConfig{})
	require.NoError(t, err)
	require.Equal(t, InbandConfig{Window: time.Second, Windows: 64, MinWindows: 8, MaxSkewPPM: 1000,
		StepThreshold: 20 * time.Millisecond, StepSamples: 3}, e.Config())
	for _, bad := range []InbandConfig{
		{Window: time.Microsecond},
		{Window: -time.Second},
		{Windows: 3},
		{Windows: 8, MinWindows: 9},
		{MinWindows: 1},
		{MaxSkewPPM: -1},
		{MaxSkewPPM: math.NaN()},
		{StepSamples: -1},
	} {
		_, err := NewInband(bad)
		require.ErrorIs(t, err, ErrInvalidConfig, "%+v", bad)
	}
}

func TestLowerHullSlope(t *testing.T) {
	h := make([]int, 8)
	for _, tc := range []struct {
		name string
		x, y []float64
		want float64
		ok   bool
	}{
		{"one point", []float64{0}, []float64{1}, 0, false},
		{"line", []float64{0, 1, 2, 3}, []float64{0, 2, 4, 6}, 2, true},
		// Points above the line (queueing) do not move it.
		{"upward outliers ignored", []float64{0, 1, 2, 3, 4}, []float64{0, 50, 2, 90, 4}, 1, true},
		// The edge spanning the mean x (2.0) is chosen: (1,0)-(3,1).
		{"edge over the mean", []float64{0, 1, 3, 4}, []float64{5, 0, 1, 9}, 0.5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := lowerHullSlope(tc.x, tc.y, h)
			require.Equal(t, tc.ok, ok)
			require.InDelta(t, tc.want, got, 1e-12)
		})
	}
}

func TestStamp(t *testing.T) {
	tm := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	s := StampOf(tm)
	require.Equal(t, Stamp(tm.UnixMicro()), s)
	require.True(t, s.Time().Equal(tm.Truncate(time.Microsecond)))
	require.Equal(t, 1500*time.Microsecond, (s + 1500).Sub(s))
}

// TestInbandZeroAllocs pins what the benchmarks report: no per-sample
// allocation, including the refit a query triggers.
func TestInbandZeroAllocs(t *testing.T) {
	h := newTwoHosts(9, 500*time.Millisecond, 100, jittery, jittery)
	e, err := NewInband(InbandConfig{})
	require.NoError(t, err)
	_, _ = runInbandNoCheck(e, h, 20*time.Second)
	tt := h.start + int64(20*time.Second)
	allocs := testing.AllocsPerRun(1000, func() {
		x := h.packet(tt)
		_ = e.AddExchange(x.t1, x.t2, x.t3, x.t4)
		_, _ = e.OWD(x.t1, x.t2)
		tt += int64(10 * time.Millisecond)
	})
	require.Zero(t, allocs)
}

// benchmarkInband runs step over a ring of pre-computed exchanges on a
// jittery path with 500 ms offset and 100 ppm skew (the estimator is reset
// each time the ring wraps, so its history stays realistic).
func benchmarkInband(b *testing.B, step func(e *Inband, x *exchange)) {
	h := newTwoHosts(1, 500*time.Millisecond, 100, jittery, jittery)
	xs := make([]exchange, 1<<14)
	for i := range xs {
		xs[i] = h.packet(h.start + int64(i)*int64(10*time.Millisecond))
	}
	e, _ := NewInband(InbandConfig{})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		x := &xs[i&(len(xs)-1)]
		if i&(len(xs)-1) == 0 {
			e.Reset()
		}
		step(e, x)
	}
}

func BenchmarkInbandAddExchange(b *testing.B) {
	benchmarkInband(b, func(e *Inband, x *exchange) { _ = e.AddExchange(x.t1, x.t2, x.t3, x.t4) })
}

func BenchmarkInbandAddForward(b *testing.B) {
	benchmarkInband(b, func(e *Inband, x *exchange) { e.AddForward(x.t1, x.t2) })
}

// BenchmarkInbandExchangeAndOWD is the receiver's per-packet cost: record
// the sample, then ask for its OWD (which refits when an envelope moved).
func BenchmarkInbandExchangeAndOWD(b *testing.B) {
	benchmarkInband(b, func(e *Inband, x *exchange) {
		_ = e.AddExchange(x.t1, x.t2, x.t3, x.t4)
		_, _ = e.OWD(x.t1, x.t2)
	})
}

// feedFrom runs packets every ~10 ms from true elapsed time from for dur,
// all full exchanges, and returns the OWD errors of the last second (only
// for packets the estimator could stamp).
func feedFrom(t *testing.T, e *Inband, h *twoHosts, from, dur time.Duration) (errs []time.Duration) {
	t.Helper()
	start, end := h.start+int64(from), h.start+int64(from+dur)
	for tt := start; tt < end; {
		x := h.packet(tt)
		require.NoError(t, e.AddExchange(x.t1, x.t2, x.t3, x.t4))
		if end-tt <= int64(time.Second) {
			if owd, ok := e.OWD(x.t1, x.t2); ok {
				errs = append(errs, owd-x.owd)
			}
		}
		tt += int64(10*time.Millisecond) + int64(h.rng.IntN(1000)-500)*int64(time.Microsecond)
	}
	return errs
}

// A clock step under the history (NTP steps beyond 128 ms) is detected from
// the envelope: the direction whose apparent delay fell below its minimum
// cannot be queueing. The estimator resets and is right again within a few
// seconds; without detection the old history keeps the OWD wrong by the step
// for up to the history length (a minute here). A standing queue of the same
// size is not a step.
func TestInbandDetectsClockSteps(t *testing.T) {
	for cname, cfg := range historyConfigs {
		t.Run(cname, func(t *testing.T) { testInbandDetectsClockSteps(t, cfg) })
	}
}

// historyConfigs are the histories in use: the transport's sessions' and
// the quic-go hook's receiver's.
var historyConfigs = map[string]InbandConfig{
	"transport 500ms x 120": {Window: 500 * time.Millisecond, Windows: 120, MinWindows: 4},
	"quichook 250ms x 240":  {Window: 250 * time.Millisecond, Windows: 240, MinWindows: 8},
}

func testInbandDetectsClockSteps(t *testing.T, cfg InbandConfig) {
	for _, tc := range []struct {
		name      string
		step      time.Duration // added to the receiver's clock at 30 s
		queue     time.Duration // standing forward queue from 30 s instead
		disabled  bool
		wantSteps uint64
		wantErr   time.Duration // max |OWD error| over the last second
	}{
		{name: "receiver clock stepped forward", step: 300 * time.Millisecond, wantSteps: 1, wantErr: time.Millisecond},
		{name: "receiver clock stepped back", step: -300 * time.Millisecond, wantSteps: 1, wantErr: time.Millisecond},
		{name: "a 300 ms standing queue is not a step", queue: 300 * time.Millisecond, wantSteps: 0, wantErr: time.Millisecond},
		{name: "detection off: the old history misleads", step: 300 * time.Millisecond, disabled: true, wantErr: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg
			if tc.disabled {
				c.StepThreshold = -1
			}
			e, err := NewInband(c)
			require.NoError(t, err)
			h := newTwoHosts(3, 500*time.Millisecond, 100, jittery, jittery)
			feedFrom(t, e, h, 0, 30*time.Second)
			require.True(t, e.Synced())
			h.offset += tc.step
			if tc.queue > 0 {
				h.extraFwd = func(el time.Duration) time.Duration {
					if el >= 30*time.Second {
						return tc.queue
					}
					return 0
				}
			}
			errs := feedFrom(t, e, h, 30*time.Second, 6*time.Second)
			require.Equal(t, tc.wantSteps, e.Steps())
			require.Equal(t, tc.wantSteps, e.Status().Steps)
			if tc.wantErr < 0 {
				// Either unsynced (the step reads as an impossible skew)
				// or wrong by about the step: no usable OWD either way.
				require.True(t, len(errs) < 90 || maxAbs(errs) > 100*time.Millisecond,
					"%d samples, max error %v", len(errs), maxAbs(errs))
				return
			}
			require.Greater(t, len(errs), 90, "synced again for the last second")
			require.Less(t, maxAbs(errs), tc.wantErr)
		})
	}
}

// One corrupt stamp far below the envelope is not a step (StepSamples).
func TestInbandOneWildSampleIsNotAStep(t *testing.T) {
	e, err := NewInband(InbandConfig{Window: 250 * time.Millisecond, Windows: 240, MinWindows: 8})
	require.NoError(t, err)
	h := newTwoHosts(5, 500*time.Millisecond, 0, jittery, jittery)
	feedFrom(t, e, h, 0, 10*time.Second)
	x := h.packet(h.start + int64(10*time.Second))
	e.AddForward(x.t1, x.t2-Stamp(time.Second.Microseconds()))
	errs := feedFrom(t, e, h, 10*time.Second+10*time.Millisecond, 2*time.Second)
	require.Zero(t, e.Steps())
	require.Less(t, maxAbs(errs), time.Millisecond, "history kept")
}

// feedLagged is feedFrom as a session sees it: each data packet carries
// the echo (T3, T4) of the ACK of the packet lag places earlier, so the
// reverse samples trail the forward ones by lag packets.
func feedLagged(t *testing.T, e *Inband, h *twoHosts, from, dur time.Duration, lag int, q *[]exchange) (errs []time.Duration) {
	t.Helper()
	start, end := h.start+int64(from), h.start+int64(from+dur)
	for tt := start; tt < end; {
		x := h.packet(tt)
		e.AddForward(x.t1, x.t2)
		*q = append(*q, x)
		if len(*q) > lag {
			old := (*q)[0]
			*q = (*q)[1:]
			e.AddReverse(old.t3, old.t4)
		}
		if end-tt <= int64(time.Second) {
			if owd, ok := e.OWD(x.t1, x.t2); ok {
				errs = append(errs, owd-x.owd)
			}
		}
		tt += int64(10*time.Millisecond) + int64(h.rng.IntN(1000)-500)*int64(time.Microsecond)
	}
	return errs
}

// A 2 s step with the echoes of ACKs sent before it still arriving after
// it was detected (as on a real connection: the echo trails the data by
// an ACK interval and a round trip). Those stale reverse samples must not
// seed the new history: they did, the offset came out 1 s wrong (half
// the step) and Synced said true.
func TestInbandStepWithStaleEchoes(t *testing.T) {
	for _, step := range []time.Duration{-2 * time.Second, 2 * time.Second, -300 * time.Millisecond} {
		t.Run(step.String(), func(t *testing.T) {
			e, err := NewInband(InbandConfig{Window: 250 * time.Millisecond, Windows: 240, MinWindows: 8})
			require.NoError(t, err)
			h := newTwoHosts(9, 500*time.Millisecond, 50, jittery, jittery)
			var q []exchange
			feedLagged(t, e, h, 0, 20*time.Second, 6, &q)
			require.True(t, e.Synced())
			h.offset += step
			errs := feedLagged(t, e, h, 20*time.Second, 5*time.Second, 6, &q)
			st := e.Status()
			t.Logf("step %v: steps %d, dropped %d, offset %v (true %v), max OWD error %v over %d samples",
				step, st.Steps, st.Dropped, st.Offset, h.trueTheta(h.start+int64(25*time.Second)), maxAbs(errs), len(errs))
			require.Equal(t, uint64(1), st.Steps)
			require.True(t, st.Synced)
			require.InDelta(t, float64(h.trueTheta(h.start+int64(25*time.Second))), float64(st.Offset), float64(3*time.Millisecond))
			require.Greater(t, len(errs), 90, "synced again for the last second")
			require.Less(t, maxAbs(errs), 2*time.Millisecond)
		})
	}
}
