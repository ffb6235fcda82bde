package cc

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestHTCPDefaults(t *testing.T) {
	h := NewHTCP(HTCPConfig{})
	require.Equal(t, "htcp", h.Name())
	require.Equal(t, InitialWindowPackets*DefaultMSS, h.Window())
	require.Equal(t, time.Second, h.deltaL)
	require.Equal(t, 100*time.Millisecond, h.refRTT)
	require.Equal(t, 0.5, h.beta)
	require.True(t, h.adaptiveBackoff)
	require.True(t, h.adaptiveReset)
	require.False(t, h.rttScaling)

	c, err := New("htcp", 1400)
	require.NoError(t, err)
	require.Equal(t, "htcp", c.Name())
}

func TestHTCPAlphaTable(t *testing.T) {
	tests := []struct {
		delta, deltaL time.Duration
		want          float64
	}{
		{500 * time.Millisecond, time.Second, 1},
		{time.Second, time.Second, 1},
		{2 * time.Second, time.Second, 1 + 10*1 + 0.25*1},      // 11.25
		{5 * time.Second, time.Second, 1 + 10*4 + 0.25*16},     // 45
		{1500 * time.Millisecond, time.Second, 1 + 5 + 0.0625}, // 6.0625
		{2 * time.Second, 2 * time.Second, 1},                  // Δ_L configurable
	}
	for _, tc := range tests {
		require.InDelta(t, tc.want, htcpAlpha(tc.delta, tc.deltaL), 1e-12, "Δ=%v Δ_L=%v", tc.delta, tc.deltaL)
	}
}

// htcpLossAt gives a fresh H-TCP (cfg plus testMSS, a 100-packet initial
// window) the RTT samples minRTT and maxRTT without growing the window, then
// one loss at now = 1 s. It returns the controller and the time of the loss.
func htcpLossAt(t testing.TB, cfg HTCPConfig, minRTT, maxRTT time.Duration) (*HTCP, *harness) {
	cfg.MSS = testMSS
	cfg.InitialWindow = 100 * testMSS
	c := NewHTCP(cfg)
	h := newHarness(t, c, testMSS)
	h.sendWindow()
	h.advance(time.Second)
	// RTT samples while application-limited: measured, no growth.
	c.OnAck(h.now(), AckSample{PacketNumber: 0, Bytes: testMSS, RTT: minRTT})
	c.OnAck(h.now(), AckSample{PacketNumber: 1, Bytes: testMSS, RTT: maxRTT})
	require.Equal(t, 100*testMSS, c.Window())
	c.OnLoss(h.now(), LossEvent{PacketNumber: 2, Bytes: testMSS})
	h.sent = h.sent[3:] // keep the harness's books: pn 0–2 are gone
	h.inFlight -= 3 * testMSS
	return c, h
}

func TestHTCPAdaptiveBackoff(t *testing.T) {
	tests := []struct {
		name           string
		minRTT, maxRTT time.Duration
		cfg            HTCPConfig
		wantBeta       float64
	}{
		{"ratio inside the range", 100 * time.Millisecond, 150 * time.Millisecond, HTCPConfig{}, 100.0 / 150},
		{"ratio 0.8", 100 * time.Millisecond, 125 * time.Millisecond, HTCPConfig{}, 0.8},
		{"clamped to 0.8", 100 * time.Millisecond, 110 * time.Millisecond, HTCPConfig{}, 0.8},
		{"no queue: clamped to 0.8", 100 * time.Millisecond, 100 * time.Millisecond, HTCPConfig{}, 0.8},
		{"clamped to 0.5", 100 * time.Millisecond, 300 * time.Millisecond, HTCPConfig{}, 0.5},
		{"fixed backoff", 100 * time.Millisecond, 125 * time.Millisecond, HTCPConfig{NoAdaptiveBackoff: true}, 0.5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := htcpLossAt(t, tc.cfg, tc.minRTT, tc.maxRTT)
			require.InDelta(t, tc.wantBeta, c.beta, 1e-12)
			// The reduction uses β: cwnd = ssthresh = β·100 packets.
			want := ByteCount(tc.wantBeta * float64(100*testMSS))
			require.InDelta(t, float64(want), float64(c.Window()), 1)
			require.InDelta(t, float64(want), float64(c.Metrics().Ssthresh), 1)
			require.True(t, c.Metrics().InRecovery)
		})
	}
}

func TestHTCPAdaptiveReset(t *testing.T) {
	// First event: cwnd 100 packets, RTTmax 125 ms → β = 0.8, cwnd 80,
	// B(1) = 100 000 B / 0.125 s = 800 kB/s. The second event comes at
	// cwnd 80 packets with RTTmax rtt2.
	tests := []struct {
		name     string
		rtt2     time.Duration
		cfg      HTCPConfig
		wantBeta float64
	}{
		// B(2) = 80 000 / 0.1 = 800 kB/s: unchanged, β = min(1, 0.8).
		{"same throughput", 100 * time.Millisecond, HTCPConfig{}, 0.8},
		// B(2) = 80 000 / 0.16 = 500 kB/s: −37.5 % > 20 %, β reset to 0.5.
		{"throughput changed", 160 * time.Millisecond, HTCPConfig{}, 0.5},
		// Same, with the reset disabled: β = 100/160.
		{"reset disabled", 160 * time.Millisecond, HTCPConfig{NoAdaptiveReset: true}, 100.0 / 160},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, h := htcpLossAt(t, tc.cfg, 100*time.Millisecond, 125*time.Millisecond)
			require.InDelta(t, 0.8, c.beta, 1e-12)
			require.InDelta(t, 800_000, c.lastThroughput, 1e-6)
			require.Equal(t, 80*testMSS, c.Window())

			h.send(1) // sent after the first event
			pn := h.nextPN - 1
			c.OnAck(h.now(), AckSample{PacketNumber: pn, Bytes: testMSS, RTT: tc.rtt2})
			require.Equal(t, tc.rtt2, c.maxRTT, "RTTmax restarts at each event")
			h.send(1)
			c.OnLoss(h.now(), LossEvent{PacketNumber: pn + 1, Bytes: testMSS})
			require.InDelta(t, tc.wantBeta, c.beta, 1e-12)
			require.InDelta(t, tc.wantBeta*80*float64(testMSS), float64(c.Window()), 1)
		})
	}
}

// TestHTCPMaxRTTIgnoresOldPackets: RTT samples of packets sent before the
// last congestion event do not count toward the next RTTmax.
func TestHTCPMaxRTTIgnoresOldPackets(t *testing.T) {
	c, h := htcpLossAt(t, HTCPConfig{}, 100*time.Millisecond, 125*time.Millisecond)
	require.Zero(t, c.maxRTT)
	c.OnAck(h.now(), AckSample{PacketNumber: 50, Bytes: testMSS, RTT: 400 * time.Millisecond})
	require.Zero(t, c.maxRTT)
}

// TestHTCPPerAckIncrease checks cwnd += 2(1−β)·α(Δ)·MSS·acked/cwnd for
// several Δ since the loss and both β regimes.
func TestHTCPPerAckIncrease(t *testing.T) {
	tests := []struct {
		name      string
		maxRTT    time.Duration // sets β via RTTmin = 100 ms
		cfg       HTCPConfig
		delta     time.Duration
		wantPerRT float64 // packets per RTT = 2(1−β)·α
	}{
		{"Reno mode, β 0.5", 300 * time.Millisecond, HTCPConfig{}, 500 * time.Millisecond, 1},
		{"Reno mode, β 0.8", 125 * time.Millisecond, HTCPConfig{}, 500 * time.Millisecond, 2 * 0.2 * 1},
		{"Δ = 2 s, β 0.5", 300 * time.Millisecond, HTCPConfig{}, 2 * time.Second, 11.25},
		{"Δ = 5 s, β 0.8", 125 * time.Millisecond, HTCPConfig{}, 5 * time.Second, 2 * 0.2 * 45},
		// RTT scaling: RTTmin 100 ms = RefRTT changes nothing; RefRTT 50 ms doubles.
		{"scaling at RefRTT", 300 * time.Millisecond, HTCPConfig{RTTScaling: true}, 2 * time.Second, 11.25},
		{"scaling ×2", 300 * time.Millisecond, HTCPConfig{RTTScaling: true, RefRTT: 50 * time.Millisecond}, 2 * time.Second, 22.5},
		// RefRTT 1 s: 11.25·0.1 = 1.125; at Δ = 1.05 s: 1.5006·0.1 → floored to 1.
		{"scaling ÷10", 300 * time.Millisecond, HTCPConfig{RTTScaling: true, RefRTT: time.Second}, 2 * time.Second, 1.125},
		{"scaling floor 1", 300 * time.Millisecond, HTCPConfig{RTTScaling: true, RefRTT: time.Second}, 1050 * time.Millisecond, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, h := htcpLossAt(t, tc.cfg, 100*time.Millisecond, tc.maxRTT)
			lossAt := h.now()
			h.send(1) // a packet sent after the loss: its ACK ends recovery
			cwnd := c.lw.cwnd
			c.OnAck(lossAt.Add(tc.delta), AckSample{PacketNumber: h.nextPN - 1, Bytes: testMSS, PriorInFlight: c.Window()})
			require.False(t, c.Metrics().InRecovery)
			want := cwnd + tc.wantPerRT*float64(testMSS)*float64(testMSS)/cwnd
			require.InDelta(t, want, c.lw.cwnd, 1e-6)
		})
	}
}

// TestHTCPGrowthOverTime runs a window-limited flow for 5 s after a loss
// (β = 0.5, RTT 100 ms) and compares the window gained with the sum over
// rounds of α(Δ) packets: 1 per round for the first second, then fast.
func TestHTCPGrowthOverTime(t *testing.T) {
	c, h := htcpLossAt(t, HTCPConfig{}, 100*time.Millisecond, 300*time.Millisecond)
	lossAt := h.now()
	h.lose(len(h.sent)) // the rest of that flight: same event
	start := c.Window()
	var want float64
	for h.now().Sub(lossAt) < 5*time.Second {
		h.roundTrip(testRTT)
		if !c.Metrics().InRecovery {
			want += htcpAlpha(h.now().Sub(lossAt), time.Second)
		}
	}
	gained := float64(c.Window()-start) / float64(testMSS)
	// ≈ 10 + ∫₁⁵ α dΔ / 0.1 s ≈ 900 packets; within a round cwnd rises, so
	// each round adds a little less than α: allow 5 %.
	require.Greater(t, want, 850.0)
	require.InDelta(t, want, gained, 0.05*want)
	require.Less(t, gained, want)
	// Reno would have gained about 50 packets.
}

func TestHTCPRetransmissionTimeout(t *testing.T) {
	c, h := htcpLossAt(t, HTCPConfig{}, 100*time.Millisecond, 125*time.Millisecond)
	require.InDelta(t, 0.8, c.beta, 1e-12)
	// Leave recovery and get to a new event-free state first.
	h.send(1)
	c.OnAck(h.now(), AckSample{PacketNumber: h.nextPN - 1, Bytes: testMSS, PriorInFlight: c.Window()})
	win := c.lw.cwnd
	h.advance(3 * time.Second)
	c.OnRetransmissionTimeout(h.now())
	m := c.Metrics()
	require.Equal(t, testMSS, m.Window)
	require.InDelta(t, win/2, float64(m.Ssthresh), 1)
	require.Equal(t, 0.5, c.beta, "adaptive state forgotten")
	require.Zero(t, c.lastThroughput)
	require.Equal(t, h.now(), c.lastCongestion, "Δ restarts")
}

func TestHTCPNoGrowthWhenAppLimited(t *testing.T) {
	c, h := htcpLossAt(t, HTCPConfig{}, 100*time.Millisecond, 300*time.Millisecond)
	h.lose(len(h.sent))
	win := c.Window()
	for range 50 {
		h.send(5) // 5 of 50 packets
		h.advance(testRTT)
		h.ackAll(testRTT)
	}
	require.Equal(t, win, c.Window())
}

func BenchmarkHTCPOnAck(b *testing.B)        { benchOnAck(b, NewHTCP(HTCPConfig{})) }
func BenchmarkHTCPOnPacketSent(b *testing.B) { benchOnPacketSent(b, NewHTCP(HTCPConfig{})) }
