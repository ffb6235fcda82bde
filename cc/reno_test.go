package cc

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func newTestReno(t testing.TB, iwPackets int) (*Reno, *harness) {
	r := NewReno(RenoConfig{MSS: testMSS, InitialWindow: ByteCount(iwPackets) * testMSS})
	return r, newHarness(t, r, testMSS)
}

// renoInCA brings a Reno flow to congestion avoidance with a window of
// cwndPackets and nothing outstanding: one loss out of a 2·cwnd flight, the
// rest of that flight acknowledged (partial ACKs), recovery still open until
// the next new packet is acknowledged.
func renoInCA(t testing.TB, cwndPackets int) (*Reno, *harness) {
	r, h := newTestReno(t, 2*cwndPackets)
	h.sendWindow()
	h.lose(1)
	h.ackAll(testRTT)
	require.Equal(t, ByteCount(cwndPackets)*testMSS, r.Window())
	require.True(t, r.Metrics().InRecovery)
	return r, h
}

func TestRenoDefaults(t *testing.T) {
	r := NewReno(RenoConfig{})
	require.Equal(t, "reno", r.Name())
	require.Equal(t, InitialWindowPackets*DefaultMSS, r.Window())
	m := r.Metrics()
	require.True(t, m.InSlowStart)
	require.Zero(t, m.Ssthresh, "ssthresh is infinite before the first loss")
	require.Equal(t, SignalNone, m.Signal)
	require.Zero(t, r.PacingRate(), "no RTT sample, no pacing")

	c, err := New("reno", 1400)
	require.NoError(t, err)
	require.Equal(t, "reno", c.Name())
	require.Equal(t, InitialWindowPackets*ByteCount(1400), c.Window())
}

func TestRenoSlowStartDoublesPerRTT(t *testing.T) {
	r, h := newTestReno(t, 10)
	for _, want := range []ByteCount{20, 40, 80, 160} {
		h.roundTrip(testRTT)
		require.Equal(t, want*testMSS, r.Window())
		require.True(t, r.Metrics().InSlowStart)
	}
}

func TestRenoCongestionAvoidanceOneMSSPerRTT(t *testing.T) {
	r, h := renoInCA(t, 10)
	require.False(t, r.Metrics().InSlowStart)
	prev := r.Window()
	for round := range 20 {
		h.roundTrip(testRTT)
		got := r.Window() - prev
		// RFC 5681 eq. 3 adds MSS²/cwnd per ACK with cwnd rising during the
		// round, so one round adds a little less than one MSS: here between
		// 0.9 and 1.0 MSS for windows of 10–30 packets.
		require.GreaterOrEqual(t, got, testMSS*9/10, "round %d", round)
		require.LessOrEqual(t, got, testMSS, "round %d", round)
		prev = r.Window()
	}
	require.False(t, r.Metrics().InRecovery)
}

func TestRenoFractionalGrowthAccumulates(t *testing.T) {
	// 100-packet window, 1-byte "packets" acknowledged: each ACK adds
	// 1000·1/100000 = 0.01 byte. Truncating per ACK would never grow.
	r, _ := renoInCA(t, 100)
	for pn := PacketNumber(1000); pn < 1000+200_000; pn++ {
		r.OnAck(0, AckSample{PacketNumber: pn, Bytes: 1, PriorInFlight: r.Window()})
	}
	// Per byte acknowledged dw = MSS/w, so w² grows by 2·MSS per byte:
	// w = √(w0² + 2·MSS·N) = √(100000² + 2·1000·200000) ≈ 101 980 B.
	w0 := float64(100 * testMSS)
	want := math.Sqrt(w0*w0 + 2*float64(testMSS)*200_000)
	require.InDelta(t, want, float64(r.Window()), 1)
}

func TestRenoLossHalvesOncePerEvent(t *testing.T) {
	r, h := newTestReno(t, 10)
	h.roundTrip(testRTT)
	h.roundTrip(testRTT) // cwnd 40 packets, 40 outstanding (pn 30..69)
	require.Equal(t, 40*testMSS, r.Window())

	h.lose(1)
	m := r.Metrics()
	require.Equal(t, 20*testMSS, m.Window)
	require.Equal(t, 20*testMSS, m.Ssthresh)
	require.True(t, m.InRecovery)
	require.False(t, m.InSlowStart)

	h.lose(3) // same flight: same congestion event
	require.Equal(t, 20*testMSS, r.Window())
}

func TestRenoPartialAndFullAck(t *testing.T) {
	r, h := newTestReno(t, 20)
	h.sendWindow() // pn 0..19
	h.lose(1)      // recover = 19
	require.Equal(t, 10*testMSS, r.Window())

	// Partial ACKs: packets sent before the reduction. In recovery, no growth.
	h.ack(10, testRTT)
	require.True(t, r.Metrics().InRecovery)
	require.Equal(t, 10*testMSS, r.Window())

	// A later loss from the same flight does not reduce again.
	h.lose(1)
	require.Equal(t, 10*testMSS, r.Window())
	h.ackAll(testRTT)
	require.True(t, r.Metrics().InRecovery)
	require.Equal(t, 10*testMSS, r.Window())

	// Full ACK: a packet sent after the reduction ends recovery and grows
	// the window as a congestion-avoidance ACK (+MSS²/cwnd = 100 B).
	h.send(10)
	h.ack(1, testRTT)
	require.False(t, r.Metrics().InRecovery)
	require.Equal(t, 10*testMSS+100, r.Window())

	// A straggler from before the old reduction, declared lost late, still
	// belongs to that event: no second reduction.
	r.OnLoss(h.now(), LossEvent{PacketNumber: 5, Bytes: testMSS})
	require.Equal(t, 10*testMSS+100, r.Window())

	// A loss of a packet sent after the reduction is a new event.
	h.lose(1)
	require.Equal(t, (10*testMSS+100)/2, r.Window())
	require.True(t, r.Metrics().InRecovery)
}

func TestRenoRetransmissionTimeout(t *testing.T) {
	r, h := newTestReno(t, 10)
	h.roundTrip(testRTT)
	h.roundTrip(testRTT) // cwnd 40 packets
	r.OnRetransmissionTimeout(h.now())
	m := r.Metrics()
	require.Equal(t, testMSS, m.Window, "RFC 5681 §3.1: loss window is 1 SMSS")
	require.Equal(t, 20*testMSS, m.Ssthresh)
	require.True(t, m.InSlowStart)
	require.False(t, m.InRecovery)

	// Backed-off RTO without an ACK in between: ssthresh held.
	r.OnRetransmissionTimeout(h.now())
	require.Equal(t, 20*testMSS, r.Metrics().Ssthresh)
	require.Equal(t, testMSS, r.Window())

	// The packets outstanding at the timeout are lost: no further reduction.
	h.lose(len(h.sent))
	require.Equal(t, testMSS, r.Window())
	require.Equal(t, 20*testMSS, r.Metrics().Ssthresh)

	// Slow start again from one packet.
	for _, want := range []ByteCount{2, 4, 8, 16} {
		h.roundTrip(testRTT)
		require.Equal(t, want*testMSS, r.Window())
		require.True(t, r.Metrics().InSlowStart)
	}
	// The next round reaches ssthresh after 4 ACKs; the other 12 ACKs of the
	// round grow it by MSS²/cwnd each (≈ 12·50 B).
	h.roundTrip(testRTT)
	require.False(t, r.Metrics().InSlowStart)
	require.Greater(t, r.Window(), 20*testMSS+550)
	require.Less(t, r.Window(), 20*testMSS+600)
}

func TestRenoRTOInRecoveryKeepsSsthresh(t *testing.T) {
	r, h := newTestReno(t, 40)
	h.sendWindow()
	h.lose(1)
	require.Equal(t, 20*testMSS, r.Metrics().Ssthresh)
	r.OnRetransmissionTimeout(h.now())
	require.Equal(t, 20*testMSS, r.Metrics().Ssthresh, "same congestion event: ssthresh not halved again")
	require.Equal(t, testMSS, r.Window())
}

func TestRenoTwoPacketFloor(t *testing.T) {
	tests := []struct {
		name    string
		iw      ByteCount
		losses  int
		wantWin ByteCount
	}{
		{"initial window floored", 1 * testMSS, 0, 2 * testMSS},
		{"3 packets halved to the floor", 3 * testMSS, 1, 2 * testMSS},
		{"repeated events stay at the floor", 2 * testMSS, 4, 2 * testMSS},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReno(RenoConfig{MSS: testMSS, InitialWindow: tc.iw})
			h := newHarness(t, r, testMSS)
			for range tc.losses {
				h.send(1)
				h.lose(1) // each packet sent after the last reduction: a new event
			}
			require.Equal(t, tc.wantWin, r.Window())
			if tc.losses > 0 {
				require.Equal(t, 2*testMSS, r.Metrics().Ssthresh)
			}
		})
	}
}

func TestRenoNoGrowthWhenAppLimited(t *testing.T) {
	t.Run("slow start", func(t *testing.T) {
		r, h := newTestReno(t, 10)
		h.send(2)
		h.ackAll(testRTT)
		require.Equal(t, 10*testMSS, r.Window())
	})
	t.Run("congestion avoidance", func(t *testing.T) {
		r, h := renoInCA(t, 20)
		h.send(1)
		h.ack(1, testRTT) // full ACK: leaves recovery; app-limited, no growth
		require.False(t, r.Metrics().InRecovery)
		for range 5 {
			h.send(5) // 5 of 20 packets: not window-limited
			h.advance(testRTT)
			h.ackAll(testRTT)
		}
		require.Equal(t, 20*testMSS, r.Window())
	})
}

func TestRenoCanSendAndPacing(t *testing.T) {
	r, h := newTestReno(t, 10)
	require.True(t, r.CanSend(9999))
	require.False(t, r.CanSend(10000))
	h.roundTrip(testRTT)
	// 20 000 B per 100 ms = 1.6 Mbit/s, ×2 in slow start.
	require.Equal(t, Bandwidth(3_200_000), r.PacingRate())
	require.Equal(t, testRTT, r.Metrics().SRTT)
	require.Equal(t, testRTT, r.Metrics().MinRTT)
}

func BenchmarkRenoOnAck(b *testing.B)        { benchOnAck(b, NewReno(RenoConfig{})) }
func BenchmarkRenoOnPacketSent(b *testing.B) { benchOnPacketSent(b, NewReno(RenoConfig{})) }
