package cc

import (
	"math"
	"testing"
	"time"

	"github.com/fresh-udp/fresh/clock"
	"github.com/stretchr/testify/require"
)

// The RFC 9438 formulas, written out again here so the tests do not trust
// the implementation's own helpers. Windows in segments, time in seconds.
const (
	rfcC    = 0.4
	rfcBeta = 0.7
)

func rfcK(wMax, cwndEpoch float64) float64 { return math.Cbrt((wMax - cwndEpoch) / rfcC) }

func rfcWCubic(t, k, wMax float64) float64 { return rfcC*math.Pow(t-k, 3) + wMax }

// cubicAfterLoss returns a Cubic that had wMaxPackets in flight, lost one and
// had the rest acknowledged with RTT testRTT (so SRTT = testRTT exactly): it
// is in recovery with cwnd = 0.7·wMaxPackets and nothing outstanding.
func cubicAfterLoss(t testing.TB, cfg CubicConfig, wMaxPackets int) (*Cubic, *harness) {
	cfg.MSS = testMSS
	cfg.InitialWindow = ByteCount(wMaxPackets) * testMSS
	c := NewCubic(cfg)
	h := newHarness(t, c, testMSS)
	h.sendWindow()
	h.lose(1)
	h.advance(testRTT)
	h.ackAll(testRTT)
	require.InDelta(t, rfcBeta*float64(wMaxPackets)*float64(testMSS), float64(c.Window()), 1)
	require.True(t, c.Metrics().InRecovery)
	return c, h
}

// ackOne acknowledges one window-limited packet numbered pn at now.
func ackOne(c Controller, now clock.Mono, pn PacketNumber) {
	c.OnAck(now, AckSample{PacketNumber: pn, Bytes: testMSS, RTT: testRTT, PriorInFlight: c.Window()})
}

func TestCubicDefaults(t *testing.T) {
	c := NewCubic(CubicConfig{})
	require.Equal(t, "cubic", c.Name())
	require.Equal(t, InitialWindowPackets*DefaultMSS, c.Window())
	require.True(t, c.fastConvergence)
	require.InDelta(t, 0.5294, cubicAlpha, 1e-4)

	got, err := New("cubic", 1400)
	require.NoError(t, err)
	require.Equal(t, "cubic", got.Name())
	require.Equal(t, InitialWindowPackets*ByteCount(1400), got.Window())
}

func TestCubicSlowStartAsReno(t *testing.T) {
	c := NewCubic(CubicConfig{MSS: testMSS})
	h := newHarness(t, c, testMSS)
	for _, want := range []ByteCount{20, 40, 80} {
		h.roundTrip(testRTT)
		require.Equal(t, want*testMSS, c.Window())
	}
}

func TestCubicBetaReduction(t *testing.T) {
	c, h := cubicAfterLoss(t, CubicConfig{}, 100)
	m := c.Metrics()
	require.Equal(t, 70*testMSS, m.Window, "cwnd = β·cwnd (§4.6)")
	require.Equal(t, 70*testMSS, m.Ssthresh)
	require.InDelta(t, 100, c.wMax, 1e-9)
	require.InDelta(t, 100, c.cwndPrior, 1e-9)

	// More losses from the same flight: one reduction per event.
	c.OnLoss(h.now(), LossEvent{PacketNumber: 50, Bytes: testMSS})
	require.Equal(t, 70*testMSS, c.Window())

	// Floor: 2 packets (0.7·2 = 1.4 is raised to 2).
	small := NewCubic(CubicConfig{MSS: testMSS, InitialWindow: 2 * testMSS})
	hs := newHarness(t, small, testMSS)
	for range 3 {
		hs.send(1)
		hs.lose(1)
		require.Equal(t, 2*testMSS, small.Window())
		require.Equal(t, 2*testMSS, small.Metrics().Ssthresh)
	}
}

func TestCubicK(t *testing.T) {
	c, h := cubicAfterLoss(t, CubicConfig{}, 1000)
	h.send(1)
	h.ackFull(testRTT) // full ACK: the epoch starts here with cwnd_epoch = 700
	require.True(t, c.inEpoch)
	require.Equal(t, h.now(), c.epochStart)
	// K = ∛(W_max(1−β)/C) = ∛(1000·0.3/0.4) = ∛750 ≈ 9.0856 s.
	require.InDelta(t, math.Cbrt(750), c.k, 1e-12)
	require.InDelta(t, 9.0856, c.k, 1e-4)
	// The curve starts at cwnd_epoch and reaches W_max at K.
	require.InDelta(t, 700, c.wCubic(0), 1e-9)
	require.InDelta(t, 1000, c.wCubic(c.k), 1e-9)
}

// TestCubicPerAckIncrease checks one ACK's growth at several points of the
// epoch against RFC 9438 §4.2 computed independently: target =
// W_cubic(t+RTT) clamped to [cwnd, 1.5·cwnd], cwnd += (target−cwnd)/cwnd.
func TestCubicPerAckIncrease(t *testing.T) {
	k := rfcK(1000, 700)
	rtt := testRTT.Seconds()
	tests := []struct {
		name string
		t    float64 // seconds since the epoch began
	}{
		{"concave, early", 1},
		{"concave, late", 4},
		{"plateau", k},
		{"convex", k + 3},
		{"convex, clamped to 1.5·cwnd", 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, h := cubicAfterLoss(t, CubicConfig{}, 1000)
			h.send(1)
			h.ackFull(testRTT) // starts the epoch
			t0 := h.now()
			cwnd := c.lw.cwnd / float64(testMSS)
			require.Less(t, c.wEst, rfcWCubic(tc.t, k, 1000), "cubic region, not Reno-friendly")

			ackOne(c, t0.Add(time.Duration(tc.t*float64(time.Second))), h.nextPN+100)

			target := min(max(rfcWCubic(tc.t+rtt, k, 1000), cwnd), 1.5*cwnd)
			want := cwnd + (target-cwnd)/cwnd
			require.InDelta(t, want*float64(testMSS), c.lw.cwnd, 1e-6)
		})
	}
	// Spot values of the formula itself: W_cubic(1 s) ≈ 788.6, W_cubic(K+3 s) = 1010.8.
	require.InDelta(t, 788.6, rfcWCubic(1, k, 1000), 0.1)
	require.InDelta(t, 1010.8, rfcWCubic(k+3, k, 1000), 0.1)
}

// TestCubicTrajectory runs a window-limited flow for 12 s after a loss at
// W_max = 1000 packets (RTT 100 ms, so the cubic region rules) and checks
// that the window follows W_cubic: after every round it lies between
// W_cubic(t−RTT) and W_cubic(t+RTT), it flattens at W_max around t = K and
// probes beyond it afterwards.
func TestCubicTrajectory(t *testing.T) {
	c, h := cubicAfterLoss(t, CubicConfig{}, 1000)
	k := rfcK(1000, 700)
	rtt := testRTT.Seconds()
	h.roundTrip(testRTT) // first ACK starts the epoch
	t0 := c.epochStart
	var atK float64
	for h.now().Sub(t0) < 12*time.Second {
		h.roundTrip(testRTT)
		tt := h.now().Sub(t0).Seconds()
		w := c.lw.cwnd / float64(testMSS)
		require.GreaterOrEqual(t, w, rfcWCubic(tt-rtt, k, 1000), "t=%.1f", tt)
		require.LessOrEqual(t, w, rfcWCubic(tt+rtt, k, 1000), "t=%.1f", tt)
		if math.Abs(tt-k) < rtt/2 {
			atK = w
		}
	}
	require.InDelta(t, 1000, atK, 1, "plateau at W_max when t = K")
	require.Greater(t, c.Window(), 1010*testMSS, "convex probing after K")
}

func TestCubicFastConvergence(t *testing.T) {
	tests := []struct {
		name     string
		cfg      CubicConfig
		wantWMax float64
	}{
		// Second loss at cwnd 70 < W_max 100: W_max = 70·(1+0.7)/2 = 59.5.
		{"on", CubicConfig{}, 59.5},
		{"off", CubicConfig{NoFastConvergence: true}, 70},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, h := cubicAfterLoss(t, tc.cfg, 100)
			h.send(1)
			h.lose(1) // sent after the first reduction: a new event
			require.InDelta(t, tc.wantWMax, c.wMax, 1e-9)
			require.Equal(t, 49*testMSS, c.Window(), "cwnd = 0.7·70")

			// The new epoch's K uses the lowered W_max (eq. 2 with
			// cwnd_epoch = 49).
			h.send(1)
			h.ackFull(testRTT)
			require.InDelta(t, rfcK(tc.wantWMax, 49), c.k, 1e-12)
		})
	}
}

// TestCubicRenoFriendlyRegion: at a small BDP (W_max = 20 packets, RTT 1 ms)
// the cubic curve is far too slow (K ≈ 2.5 s = 2466 RTTs) and W_est rules:
// α_cubic ≈ 0.53 packet per RTT until W_est reaches cwnd_prior = 20, then
// 1 packet per RTT, as Reno.
func TestCubicRenoFriendlyRegion(t *testing.T) {
	const rtt = time.Millisecond
	c, h := cubicAfterLoss(t, CubicConfig{}, 20)
	k := rfcK(20, 14)
	alpha := 3 * (1 - rfcBeta) / (1 + rfcBeta)
	h.roundTrip(rtt) // starts the epoch
	t0 := c.epochStart
	prev := c.lw.cwnd / float64(testMSS)
	for round := range 40 {
		h.roundTrip(rtt)
		w := c.lw.cwnd / float64(testMSS)
		tt := h.now().Sub(t0).Seconds()
		require.Greater(t, w, rfcWCubic(tt, k, 20)+1, "round %d: W_est above W_cubic", round)
		require.InDelta(t, c.wEst, w, 1e-9, "round %d: cwnd = W_est", round)
		// One round acknowledges ⌈cwnd⌉ packets, so the step is
		// α·⌈cwnd⌉/cwnd: up to 1/cwnd (< 7.5 %) above α.
		switch {
		case w < 20:
			require.InDelta(t, alpha, w-prev, 0.075*alpha, "round %d", round)
		case prev >= 20:
			require.InDelta(t, 1, w-prev, 0.075, "round %d", round)
		default: // W_est crossed cwnd_prior within this round
			require.Greater(t, w-prev, alpha)
			require.Less(t, w-prev, 1.075)
		}
		prev = w
	}
}

func TestCubicEpochResetOnLoss(t *testing.T) {
	c, h := cubicAfterLoss(t, CubicConfig{}, 100)
	for range 10 {
		h.roundTrip(testRTT)
	}
	require.True(t, c.inEpoch)
	first := c.epochStart
	h.lose(1)
	require.False(t, c.inEpoch)
	cwndEpoch := c.lw.cwnd / float64(testMSS)
	wMax := c.wMax
	h.ackAll(testRTT) // partial ACKs do not start an epoch
	require.False(t, c.inEpoch)
	h.advance(testRTT)
	h.send(1)
	h.ackFull(testRTT)
	require.True(t, c.inEpoch)
	require.Equal(t, h.now(), c.epochStart)
	require.Greater(t, c.epochStart, first)
	require.InDelta(t, rfcK(wMax, cwndEpoch), c.k, 1e-12)
	require.InDelta(t, cwndEpoch, c.wEst, 0.01, "W_est restarts at cwnd_epoch")
}

// TestCubicAppLimitedShiftsEpoch: time in which the flow does not use its
// window is left out of t (RFC 9438 §5.8): the epoch start moves forward by
// the application-limited stretch and the window does not grow during it.
func TestCubicAppLimitedShiftsEpoch(t *testing.T) {
	c, h := cubicAfterLoss(t, CubicConfig{}, 100)
	for range 5 {
		h.roundTrip(testRTT)
	}
	start := c.epochStart

	h.advance(testRTT)
	h.ackAll(testRTT) // drains the flight: the last ACKs find the flow app-limited
	require.True(t, c.appLimited)
	stretchBegin := h.now()
	win := c.Window()
	for range 50 { // 5 s of one packet per RTT
		h.send(1)
		h.advance(testRTT)
		h.ackAll(testRTT)
	}
	require.Equal(t, win, c.Window(), "no growth while application-limited")

	h.sendWindow()
	h.advance(testRTT)
	stretchEnd := h.now()
	h.ack(1, testRTT)
	require.False(t, c.appLimited)
	require.Equal(t, start.Add(stretchEnd.Sub(stretchBegin)), c.epochStart)
	require.Equal(t, 5100*time.Millisecond, stretchEnd.Sub(stretchBegin))
}

// TestCubicRetransmissionTimeout: RFC 9438 §4.8 — cwnd to one MSS,
// ssthresh = β·cwnd, and the next congestion avoidance stage starts with
// K = 0 and W_max = W_est = cwnd_epoch.
func TestCubicRetransmissionTimeout(t *testing.T) {
	c := NewCubic(CubicConfig{MSS: testMSS, InitialWindow: 40 * testMSS})
	h := newHarness(t, c, testMSS)
	h.sendWindow()
	c.OnRetransmissionTimeout(h.now())
	m := c.Metrics()
	require.Equal(t, testMSS, m.Window)
	require.Equal(t, 28*testMSS, m.Ssthresh)
	require.True(t, m.InSlowStart)
	require.Zero(t, c.wMax)
	h.lose(len(h.sent)) // the flight is declared lost: same event
	require.Equal(t, 28*testMSS, c.Metrics().Ssthresh)

	for !c.inEpoch {
		h.roundTrip(testRTT)
	}
	require.Zero(t, c.k)
	require.InDelta(t, 28, c.wMax, 1e-9, "W_max = cwnd_epoch")
	require.InDelta(t, 40, c.cwndPrior, 1e-9)
	require.GreaterOrEqual(t, c.wEst, 28.0)
}

// TestCubicRetransmissionTimeoutClearsWMax: a W_max left by an earlier loss
// is forgotten at a timeout (§4.8), so the next epoch is K = 0 at
// W_max = cwnd_epoch rather than climbing back towards the old W_max.
func TestCubicRetransmissionTimeoutClearsWMax(t *testing.T) {
	c, h := cubicAfterLoss(t, CubicConfig{}, 100) // W_max = 100, cwnd 70
	for range 3 {
		h.roundTrip(testRTT)
	}
	require.InDelta(t, 100, c.wMax, 1e-9)
	cwnd := c.lw.cwnd
	c.OnRetransmissionTimeout(h.now())
	require.Zero(t, c.wMax)
	require.InDelta(t, cwnd/float64(testMSS), c.cwndPrior, 1e-9)
	require.InDelta(t, cubicBeta*cwnd, float64(c.Metrics().Ssthresh), 1)
	h.lose(len(h.sent))
	for !c.inEpoch {
		h.roundTrip(testRTT)
	}
	require.Zero(t, c.k)
	require.InDelta(t, float64(c.Metrics().Ssthresh)/float64(testMSS), c.wMax, 0.01)
}

func TestCubicNoGrowthWhenAppLimited(t *testing.T) {
	c, h := cubicAfterLoss(t, CubicConfig{}, 40)
	h.send(1)
	h.ackFull(testRTT)
	win := c.Window()
	for range 20 {
		h.send(4) // 4 of 28 packets
		h.advance(testRTT)
		h.ackAll(testRTT)
	}
	require.Equal(t, win, c.Window())
}

func BenchmarkCubicOnAck(b *testing.B)        { benchOnAck(b, NewCubic(CubicConfig{})) }
func BenchmarkCubicOnPacketSent(b *testing.B) { benchOnPacketSent(b, NewCubic(CubicConfig{})) }
