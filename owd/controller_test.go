package owd

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
)

func noProbe() Config { return Config{MSS: mss, Tuning: Tuning{DisableBaseDelayProbe: true}} }

func TestRegistryNames(t *testing.T) {
	for _, name := range []string{"owd", "owd-eq2"} {
		c, err := cc.New(name, mss)
		require.NoError(t, err)
		require.Equal(t, name, c.Name())
		require.Equal(t, cc.ByteCount(10*mss), c.Window())
	}
}

func TestDefaultIsEq7(t *testing.T) {
	// The same steps as TestEq7Step, through New.
	h := newHarness(mustNew(New(noProbe())))
	h.toAvoidance()
	h.ackN(4, 75*time.Millisecond, 110*time.Millisecond)
	before := h.cwndPackets()
	h.ack(75*time.Millisecond, 110*time.Millisecond)
	require.InDelta(t, before-0.5/2.25, h.cwndPackets(), 1e-9)
	require.Equal(t, "owd", h.c.Name())
}

func TestEq2Rows(t *testing.T) {
	// Pure rule, packets: μ = 0.1, cwnd = 10.
	tests := []struct {
		name string
		v    float64
		want float64
	}{
		{"OWDv > 2μ decreases by 1/cwnd", 0.25, -0.1},
		{"OWDv = 2μ holds", 0.2, 0},
		{"μ < OWDv ≤ 2μ holds", 0.15, 0},
		{"OWDv = μ increases", 0.1, 0.1},
		{"OWDv ≤ μ increases by 1/cwnd", 0, 0.1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.InDelta(t, tc.want, eq2{}.delta(tc.v, 0.1, 0, 0, 10), 1e-12)
		})
	}
}

func TestEq2ThroughController(t *testing.T) {
	tests := []struct {
		name string
		owd  time.Duration // μ = 0.1 after toAvoidance, base 50 ms
		want func(t *testing.T, before, after float64)
	}{
		{"empty queue: +1 packet per window", 50 * time.Millisecond, func(t *testing.T, before, after float64) {
			require.InDelta(t, before+1, after, 0.1)
		}},
		{"OWDv 0.15 in (μ, 2μ]: unchanged", 57500 * time.Microsecond, func(t *testing.T, before, after float64) {
			require.InDelta(t, before, after, 1e-9)
		}},
		{"OWDv 0.6 at a new maximum: −1 packet per window", 80 * time.Millisecond, func(t *testing.T, before, after float64) {
			require.InDelta(t, before-1, after, 0.15)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(mustNew(NewEq2(noProbe())))
			h.toAvoidance()
			require.False(t, h.c.Metrics().InSlowStart)
			// The RTT grows by the forward queueing only: no ACK-path
			// queue, so reverse compensation stays out of the way.
			rtt := 100*time.Millisecond + tc.owd - 50*time.Millisecond
			h.ackN(4, tc.owd, rtt) // fill the OWDcur filter
			before := h.cwndPackets()
			h.ackN(int(math.Round(before)), tc.owd, rtt)
			tc.want(t, before, h.cwndPackets())
		})
	}
}

// Metrics and Delays are read on every Stats poll and, in the simulator,
// at every ACK: they must not allocate.
func TestMetricsAndDelaysDoNotAllocate(t *testing.T) {
	h := newHarness(mustNew(New(noProbe())))
	h.toAvoidance()
	require.Zero(t, testing.AllocsPerRun(100, func() { _, _ = h.c.Metrics(), h.c.Delays() }))
}

func TestMuFloorAndBeta(t *testing.T) {
	h := newHarness(mustNew(NewEq2(noProbe())))
	h.toAvoidance()
	d := h.c.Delays()
	require.Equal(t, 50*time.Millisecond, d.Min)
	require.Equal(t, 60*time.Millisecond, d.Cur)
	require.InDelta(t, 0.2, d.V, 1e-9)
	// μ = max(5 ms/50 ms, 0.5 · 0.2) = 0.1.
	require.InDelta(t, 0.1, d.Mu, 1e-3)
	require.InDelta(t, 0.2, h.c.owdA.MaxVariation(h.now), 1e-3)

	// A larger OWDv in avoidance raises OWDv_max: μ = 0.5 · 0.6.
	h.ackN(8, 80*time.Millisecond, 200*time.Millisecond)
	require.InDelta(t, 0.3, h.c.owdA.Mu(h.now), 1e-2)

	// With no new peak, OWDv_max decays with τ = 10 s; μ falls to its floor.
	h.step = time.Second
	h.ackN(60, 50*time.Millisecond, 100*time.Millisecond)
	require.InDelta(t, 0.1, h.c.owdA.Mu(h.now), 1e-9, "μ floor = 5 ms / OWDmin")
}

func TestSlowStartExit(t *testing.T) {
	t.Run("early exit on OWD queueing", func(t *testing.T) {
		h := newHarness(mustNew(NewEq2(noProbe())))
		h.ackN(8, 50*time.Millisecond, 100*time.Millisecond)
		require.True(t, h.c.Metrics().InSlowStart)
		require.Equal(t, 18.0, h.cwndPackets(), "slow start: +1 packet per ACK")
		// 6 ms queueing is below clamp(50/8) = 6.25 ms: stay.
		h.ackN(4, 56*time.Millisecond, 100*time.Millisecond)
		require.True(t, h.c.Metrics().InSlowStart)
		h.ackN(4, 57*time.Millisecond, 100*time.Millisecond)
		m := h.c.Metrics()
		require.False(t, m.InSlowStart)
		require.Equal(t, m.Window, m.Ssthresh)
	})
	t.Run("disabled: stays in slow start", func(t *testing.T) {
		cfg := noProbe()
		cfg.Tuning.DisableEarlySlowStartExit = true
		h := newHarness(mustNew(NewEq2(cfg)))
		h.toAvoidance()
		require.True(t, h.c.Metrics().InSlowStart)
	})
	t.Run("reverse-path queueing does not trigger it", func(t *testing.T) {
		h := newHarness(mustNew(NewEq2(noProbe())))
		h.ackN(8, 50*time.Millisecond, 100*time.Millisecond)
		h.ackN(8, 50*time.Millisecond, 300*time.Millisecond) // ACK path queue
		require.True(t, h.c.Metrics().InSlowStart)
	})
}

func TestLossDifferentiation(t *testing.T) {
	tests := []struct {
		name    string
		owd     time.Duration
		factor  float64
		disable bool
	}{
		{"short queue: non-congestive ×0.9", 50 * time.Millisecond, 0.9, false},
		{"long queue: congestive ×0.5", 80 * time.Millisecond, 0.5, false},
		{"differentiation off: ×0.5", 50 * time.Millisecond, 0.5, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := noProbe()
			cfg.Tuning.DisableLossDifferentiation = tc.disable
			h := newHarness(mustNew(NewEq2(cfg)))
			h.toAvoidance()
			h.ackN(4, tc.owd, 110*time.Millisecond)
			before := h.cwndPackets()
			h.lose()
			require.InDelta(t, before*tc.factor, h.cwndPackets(), 1e-6)
			require.True(t, h.c.Metrics().InRecovery)
		})
	}
}

// A random loss with the queue clearly empty costs nothing while losses
// are rare; with a queue, or once losses are common, it costs ×0.9. (The
// loss level test, off here, lifts the rate cap where the losses do not
// follow the window: losslevel_test.go.)
func TestFreeRandomLoss(t *testing.T) {
	for _, tc := range []struct {
		name   string
		owd    time.Duration // the queue: OWDmin is 50 ms, μ 0.1 (5 ms)
		losses int           // losses before the one measured, 20 packets apart
		factor float64
	}{
		{"empty queue, rare losses: free", 50 * time.Millisecond, 0, 1},
		{"queue at half of μ: free", 52500 * time.Microsecond, 0, 1},
		{"queue at three quarters of μ: ×0.9", 53750 * time.Microsecond, 0, 0.9},
		{"empty queue, 5 % lost: ×0.9", 50 * time.Millisecond, 40, 0.9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := noProbe()
			cfg.Tuning.DisableLossLevelTest = true
			h := newHarness(mustNew(New(cfg)))
			h.toAvoidance()
			h.ackN(200, 50*time.Millisecond, 100*time.Millisecond)
			for range tc.losses {
				h.lose()
				h.ackN(20, 50*time.Millisecond, 100*time.Millisecond)
			}
			h.ackN(4, tc.owd, 110*time.Millisecond)
			before := h.cwndPackets()
			h.lose()
			require.InDelta(t, before*tc.factor, h.cwndPackets(), 1e-6)
			require.Equal(t, tc.factor < 1, h.c.Metrics().InRecovery, "a free loss starts no recovery episode")
		})
	}
	cfg := noProbe()
	cfg.Tuning.DisableFreeRandomLoss = true
	h := newHarness(mustNew(New(cfg)))
	h.toAvoidance()
	h.ackN(200, 50*time.Millisecond, 100*time.Millisecond)
	before := h.cwndPackets()
	h.lose()
	require.InDelta(t, before*0.9, h.cwndPackets(), 1e-6, "switched off: loss differentiation's ×0.9")
}

func TestRecoveryOneReductionAndPartialAcks(t *testing.T) {
	h := newHarness(mustNew(NewEq2(noProbe())))
	h.toAvoidance()
	h.ackN(4, 80*time.Millisecond, 110*time.Millisecond)
	h.lose()
	after := h.cwndPackets()
	recoverPN := h.pn

	// A loss of a packet sent before the episode began: no second cut.
	h.c.OnLoss(h.now, cc.LossEvent{PacketNumber: recoverPN - 3, Bytes: mss})
	require.Equal(t, after, h.cwndPackets())

	// Partial ACK (a packet sent before the loss was detected): no growth.
	h.c.OnAck(h.now, cc.AckSample{PacketNumber: recoverPN - 1, Bytes: mss, OWD: 50 * time.Millisecond,
		OWDValid: true, ClockSynced: true, PriorInFlight: h.c.Window()})
	require.Equal(t, after, h.cwndPackets())
	require.True(t, h.c.Metrics().InRecovery)

	// ACK of a packet sent after: recovery ends.
	h.ack(50*time.Millisecond, 100*time.Millisecond)
	require.False(t, h.c.Metrics().InRecovery)
}

func TestRetransmissionTimeout(t *testing.T) {
	h := newHarness(mustNew(NewEq2(noProbe())))
	h.toAvoidance()
	before := h.c.Window()
	h.c.OnRetransmissionTimeout(h.now)
	m := h.c.Metrics()
	require.Equal(t, cc.ByteCount(2*mss), m.Window, "restart from the 2-packet floor")
	require.Equal(t, before/2, m.Ssthresh)
	require.True(t, m.InSlowStart)
	require.False(t, m.InRecovery)
}

func TestWindowFloor(t *testing.T) {
	cfg := noProbe()
	// Losses at the floor with a long queue are competitive mode's signal
	// (compete_test.go); this test is about the delay rule's floor.
	cfg.Tuning.DisableCompetitiveMode = true
	h := newHarness(mustNew(NewEq2(cfg)))
	h.toAvoidance()
	for range 10 {
		h.ackN(4, 80*time.Millisecond, 110*time.Millisecond)
		h.lose()
	}
	require.Equal(t, cc.ByteCount(2*mss), h.c.Window())
	h.c.OnRetransmissionTimeout(h.now)
	require.Equal(t, cc.ByteCount(2*mss), h.c.Window())
	h.ackN(100, 200*time.Millisecond, 250*time.Millisecond) // OWDv far above 2μ
	require.Equal(t, cc.ByteCount(2*mss), h.c.Window())
}

func TestApplicationLimitedDoesNotGrow(t *testing.T) {
	h := newHarness(mustNew(NewEq2(noProbe())))
	h.appLimited = true
	h.ackN(20, 50*time.Millisecond, 100*time.Millisecond)
	require.Equal(t, 10.0, h.cwndPackets(), "slow start")
	h.appLimited = false
	h.toAvoidance()
	h.appLimited = true
	// The round trip that filled the window still counts (the most in
	// flight over the last round, as Linux's tcp_is_cwnd_limited); the
	// harness's round trips are one packet long.
	h.ackN(2, 50*time.Millisecond, 100*time.Millisecond)
	before := h.cwndPackets()
	h.ackN(50, 50*time.Millisecond, 100*time.Millisecond)
	require.Equal(t, before, h.cwndPackets(), "avoidance")
}

func TestRTTFallback(t *testing.T) {
	tests := []struct {
		name string
		bad  cc.AckSample
	}{
		{"receiver clock unsynchronised", cc.AckSample{OWD: 50 * time.Millisecond, OWDValid: true, ClockSynced: false, RTT: 100 * time.Millisecond}},
		{"negative OWD", cc.AckSample{OWD: -3 * time.Millisecond, OWDValid: true, ClockSynced: true, RTT: 100 * time.Millisecond}},
		{"OWD longer than the RTT", cc.AckSample{OWD: 500 * time.Millisecond, OWDValid: true, ClockSynced: true, RTT: 100 * time.Millisecond}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(mustNew(NewEq2(noProbe())))
			h.toAvoidance()
			require.Equal(t, cc.SignalOWD, h.c.Metrics().Signal)

			h.ackSample(tc.bad)
			require.Equal(t, cc.SignalRTT, h.c.Metrics().Signal, "entry")
			// Missing samples are no evidence either way.
			h.ackSample(cc.AckSample{RTT: 100 * time.Millisecond})
			require.Equal(t, cc.SignalRTT, h.c.Metrics().Signal)

			h.ackN(15, 50*time.Millisecond, 100*time.Millisecond)
			require.Equal(t, cc.SignalRTT, h.c.Metrics().Signal, "15 good samples are not enough")
			h.ack(50*time.Millisecond, 100*time.Millisecond)
			require.Equal(t, cc.SignalOWD, h.c.Metrics().Signal, "exit after 16")
		})
	}
}

func TestRTTFallbackRunsOnHalfRTT(t *testing.T) {
	h := newHarness(mustNew(NewEq2(noProbe())))
	// No synchronised clock at all: the controller must still leave slow
	// start on RTT/2 queueing (base 50 ms, then 60 ms).
	bad := func(rtt time.Duration) cc.AckSample {
		return cc.AckSample{OWD: time.Hour, OWDValid: true, ClockSynced: false, RTT: rtt}
	}
	for range 8 {
		h.ackSample(bad(100 * time.Millisecond))
	}
	for range 4 {
		h.ackSample(bad(120 * time.Millisecond))
	}
	m := h.c.Metrics()
	require.Equal(t, cc.SignalRTT, m.Signal)
	require.False(t, m.InSlowStart)
	require.Equal(t, 50*time.Millisecond, h.c.Delays().Min, "RTT/2")
}

func TestEq7Step(t *testing.T) {
	// D/d = 1.5: Δw = (1 − 1.5)/1.5² = −0.2222 packets per ACK.
	require.InDelta(t, -0.5/2.25, eq7{}.delta(0.5, 0.1, 75*time.Millisecond, 50*time.Millisecond, 10), 1e-12)
	// OWDv ≤ μ: Eq. 2's increase.
	require.InDelta(t, 0.1, eq7{}.delta(0.05, 0.1, 52500*time.Microsecond, 50*time.Millisecond, 10), 1e-12)
}

func TestBaseDelayProbe(t *testing.T) {
	h := newHarness(mustNew(NewEq2(Config{MSS: mss})))
	h.toAvoidance() // SRTT ≈ 100 ms: first slowdown 200 ms after the exit
	require.Greater(t, h.cwndPackets(), 2.0)

	h.ackN(150, 50*time.Millisecond, 100*time.Millisecond) // 150 ms: not yet
	require.Greater(t, h.cwndPackets(), 2.0)
	h.ackN(60, 50*time.Millisecond, 100*time.Millisecond) // past 200 ms
	require.Equal(t, 2.0, h.cwndPackets(), "slowdown to the 2-packet floor")
	saved := h.c.probe.saved
	start := h.c.probe.start

	h.ackN(150, 50*time.Millisecond, 100*time.Millisecond) // within 2 SRTT: held
	require.Equal(t, 2.0, h.cwndPackets())
	h.ackN(60, 50*time.Millisecond, 100*time.Millisecond) // hold over
	require.NotEqual(t, modeProbe, h.c.mode)
	require.GreaterOrEqual(t, h.cwndPackets(), saved/mss, "window restored at once, no slow-start ramp")
	require.False(t, h.c.Metrics().InSlowStart)
	// Next slowdown: max(9 × its length, 20 s) after its end.
	lasted := h.c.probe.at.Sub(start)
	require.GreaterOrEqual(t, lasted, 20*time.Second)
	require.Less(t, lasted, 21*time.Second)
}

func TestBaseDelayProbeDisabled(t *testing.T) {
	h := newHarness(mustNew(NewEq2(noProbe())))
	h.toAvoidance()
	h.step = 10 * time.Millisecond
	h.ackN(5000, 50*time.Millisecond, 100*time.Millisecond) // 50 s
	require.Greater(t, h.cwndPackets(), 50.0, "never pinned to the floor")
}

// The next slowdown comes ProbeSpacing × the last one's length after it
// when that is longer than ProbeMinInterval: a long round trip makes long
// holds, and LEDBAT++ keeps the share of time spent slowed down at a
// tenth.
func TestProbeSpacingScalesWithTheHold(t *testing.T) {
	h := newHarness(mustNew(NewEq2(Config{MSS: mss})))
	h.step = 10 * time.Millisecond
	h.ackN(8, 1500*time.Millisecond, 3*time.Second)
	h.ackN(4, 1600*time.Millisecond, 3100*time.Millisecond) // out of slow start; SRTT ≈ 3 s
	for h.c.mode != modeProbe {
		h.ack(1500*time.Millisecond, 3*time.Second)
	}
	start := h.now
	for h.c.mode == modeProbe {
		h.ack(1500*time.Millisecond, 3*time.Second)
	}
	lasted := h.now.Sub(start)
	require.Greater(t, lasted, 5*time.Second, "2 SRTT of hold")
	gap := h.c.probe.at.Sub(h.now)
	require.InDelta(t, float64(9*lasted), float64(gap), float64(100*time.Millisecond), "9 × the hold, not the 20 s minimum")
}

// New refuses what it cannot repair and names the field.
func TestNewValidatesConfig(t *testing.T) {
	for _, tc := range []struct {
		field string
		cfg   Config
	}{
		{"NonCongestiveLossFactor", Config{NonCongestiveLossFactor: math.NaN()}},
		{"NonCongestiveLossFactor", Config{NonCongestiveLossFactor: 1.5}},
		{"NonCongestiveLossFactor", Config{NonCongestiveLossFactor: -0.1}},
		{"MSS", Config{MSS: -1}},
		{"InitialWindow", Config{InitialWindow: -1}},
		{"Tuning.ProbeHoldRTTs", Config{Tuning: Tuning{ProbeHoldRTTs: math.Inf(1)}}},
		{"Tuning.VelocityMax", Config{Tuning: Tuning{VelocityMax: math.NaN()}}},
		{"Tuning.SlowStartExitMin", Config{Tuning: Tuning{SlowStartExitMin: -time.Millisecond}}},
		{"Tuning.Analyzer.Beta", Config{Tuning: Tuning{Analyzer: AnalyzerConfig{Beta: -1}}}},
		{"Tuning.Analyzer.JitterGain", Config{Tuning: Tuning{Analyzer: AnalyzerConfig{JitterGain: math.NaN()}}}},
		{"Tuning.Analyzer.HistoryBuckets", Config{Tuning: Tuning{Analyzer: AnalyzerConfig{HistoryBuckets: 65}}}},
		{"Tuning.Analyzer.CurrentFilter", Config{Tuning: Tuning{Analyzer: AnalyzerConfig{CurrentFilter: -1}}}},
	} {
		_, err := New(tc.cfg)
		require.ErrorIs(t, err, ErrInvalidConfig, tc.field)
		require.Contains(t, err.Error(), tc.field)
		_, err = NewEq2(tc.cfg)
		require.ErrorIs(t, err, ErrInvalidConfig, tc.field)
	}
	// Zero is every field's default, and 1 a valid loss factor.
	c, err := New(Config{NonCongestiveLossFactor: 1})
	require.NoError(t, err)
	require.Equal(t, 1.0, c.cfg.NonCongestiveLossFactor)
	c, err = New(Config{})
	require.NoError(t, err)
	require.Equal(t, 0.9, c.cfg.NonCongestiveLossFactor)
}
