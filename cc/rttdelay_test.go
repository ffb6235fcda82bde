package cc

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// vegasDiff is Vegas' queue estimate written out independently:
// (expected − actual)·baseRTT in packets, expected = W/baseRTT, actual = W/RTT.
func vegasDiff(wPackets float64, base, rtt time.Duration) float64 {
	expected := wPackets / base.Seconds()
	actual := wPackets / rtt.Seconds()
	return (expected - actual) * base.Seconds()
}

// rttDelayInCA returns an RTTDelay in congestion avoidance with a 20-packet
// window, baseRTT = testRTT (100 ms) and nothing outstanding: a 40-packet
// flight lost one packet and the rest was acknowledged at the base RTT.
func rttDelayInCA(t testing.TB, cfg RTTDelayConfig) (*RTTDelay, *harness) {
	cfg.MSS = testMSS
	cfg.InitialWindow = 40 * testMSS
	v := NewRTTDelay(cfg)
	h := newHarness(t, v, testMSS)
	h.sendWindow()
	h.lose(1)
	h.advance(testRTT)
	h.ackAll(testRTT)
	require.Equal(t, 20*testMSS, v.Window())
	require.Equal(t, testRTT, v.Metrics().MinRTT)
	return v, h
}

func TestRTTDelayDefaults(t *testing.T) {
	v := NewRTTDelay(RTTDelayConfig{})
	require.Equal(t, "rttdelay", v.Name())
	require.Equal(t, InitialWindowPackets*DefaultMSS, v.Window())
	require.Equal(t, [3]float64{2, 4, 1}, [3]float64{v.alpha, v.beta, v.gamma})
	require.Equal(t, SignalNone, v.Metrics().Signal, "no RTT sample yet")

	odd := NewRTTDelay(RTTDelayConfig{Alpha: 5, Beta: 3})
	require.Equal(t, 5.0, odd.beta, "β raised to α")

	c, err := New("rttdelay", 1400)
	require.NoError(t, err)
	require.Equal(t, "rttdelay", c.Name())
}

func TestRTTDelaySignal(t *testing.T) {
	v, _ := rttDelayInCA(t, RTTDelayConfig{})
	require.Equal(t, SignalRTT, v.Metrics().Signal)
}

// TestRTTDelayRule: rounds at a fixed RTT. The first round after recovery
// is not evaluated (its window is new); every later round moves the window
// by exactly +1, 0 or −1 MSS according to diff = W(1 − baseRTT/RTT).
func TestRTTDelayRule(t *testing.T) {
	tests := []struct {
		name string
		rtt  time.Duration
		step ByteCount // per evaluated round
	}{
		{"no queue: diff 0 < α, increase", testRTT, testMSS},
		{"diff 1.7 < α, increase", 109 * time.Millisecond, testMSS},
		{"diff 3.05 in [α, β], hold", 118 * time.Millisecond, 0},
		{"diff 6.7 > β, decrease", 150 * time.Millisecond, -testMSS},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, h := rttDelayInCA(t, RTTDelayConfig{})
			d := vegasDiff(20, testRTT, tc.rtt)
			h.roundTrip(tc.rtt)
			require.Equal(t, 20*testMSS, v.Window(), "first round: not evaluated")
			for round := 1; round <= 4; round++ {
				prev := v.Window()
				h.roundTrip(tc.rtt)
				require.Equal(t, prev+tc.step, v.Window(), "round %d", round)
				if round == 1 {
					require.InDelta(t, d, v.diff, 1e-9, "diff from W = 20")
				}
				require.False(t, v.Metrics().InSlowStart)
			}
		})
	}
}

func TestRTTDelayNoIncreaseWhenAppLimited(t *testing.T) {
	v, h := rttDelayInCA(t, RTTDelayConfig{})
	for range 10 {
		h.send(5) // 5 of 20 packets
		h.advance(testRTT)
		h.ackAll(testRTT)
	}
	require.Equal(t, 20*testMSS, v.Window())
	require.Zero(t, v.diff, "rounds were evaluated, diff 0")
}

func TestRTTDelayDecreaseFloor(t *testing.T) {
	t.Run("defaults settle where diff enters [α, β]", func(t *testing.T) {
		v, h := rttDelayInCA(t, RTTDelayConfig{})
		for range 40 {
			h.roundTrip(time.Second) // diff = 0.9·W: > β = 4 down to W = 5
		}
		require.Equal(t, 4*testMSS, v.Window())
		require.InDelta(t, 3.6, v.diff, 1e-9)
	})
	t.Run("two-packet floor", func(t *testing.T) {
		v, h := rttDelayInCA(t, RTTDelayConfig{Alpha: 0.5, Beta: 1})
		for range 40 {
			h.roundTrip(time.Second) // diff = 0.9·W > 1 even at W = 2
		}
		require.Equal(t, 2*testMSS, v.Window())
		require.InDelta(t, 1.8, v.diff, 1e-9)
		require.False(t, v.Metrics().InSlowStart)
	})
}

func TestRTTDelaySlowStart(t *testing.T) {
	v := NewRTTDelay(RTTDelayConfig{MSS: testMSS})
	h := newHarness(t, v, testMSS)
	// At the base RTT (diff 0) slow start doubles the window every round.
	for _, want := range []ByteCount{20, 40, 80} {
		h.roundTrip(testRTT)
		require.Equal(t, want*testMSS, v.Window())
		require.True(t, v.Metrics().InSlowStart)
	}
	// A little queue, diff < γ: slow start goes on.
	rtt := 100500 * time.Microsecond
	h.roundTrip(rtt)
	h.roundTrip(rtt)
	require.Greater(t, v.diff, 0.3, "rounds at 100.5 ms were evaluated")
	require.Less(t, v.diff, 1.0)
	require.True(t, v.Metrics().InSlowStart)
	require.Equal(t, 320*testMSS, v.Window())

	// diff > γ: slow start ends at W − (diff − γ) packets, where W is the
	// window at the start of the round that measured the queue.
	rtt = 110 * time.Millisecond
	h.roundTrip(rtt) // measured in this round, evaluated at the next round's start
	require.True(t, v.Metrics().InSlowStart)
	w := v.roundCwnd / float64(testMSS)
	h.advance(rtt)
	h.ack(1, rtt) // first ACK of the next round ends the measuring round
	d := vegasDiff(w, testRTT, rtt)
	require.Greater(t, d, 1.0)
	m := v.Metrics()
	require.False(t, m.InSlowStart)
	require.InDelta(t, (w-(d-1))*float64(testMSS), float64(m.Window), 1)
	require.Equal(t, m.Window, m.Ssthresh)
}

func TestRTTDelayLossHalves(t *testing.T) {
	v, h := rttDelayInCA(t, RTTDelayConfig{})
	h.roundTrip(testRTT)
	h.roundTrip(testRTT) // 21 packets
	require.Equal(t, 21*testMSS, v.Window())
	h.lose(2)
	require.Equal(t, 10500*ByteCount(1), v.Window())
	require.True(t, v.Metrics().InRecovery)
	// The round begun before the loss is not evaluated: recovery ACKs at
	// a high RTT do not cut the window further.
	h.advance(time.Second)
	h.ackAll(time.Second)
	require.Equal(t, 10500*ByteCount(1), v.Window())

	v.OnRetransmissionTimeout(h.now())
	require.Equal(t, testMSS, v.Window())
	require.Equal(t, 10500*ByteCount(1), v.Metrics().Ssthresh, "RTO during recovery keeps ssthresh")
}

func BenchmarkRTTDelayOnAck(b *testing.B)        { benchOnAck(b, NewRTTDelay(RTTDelayConfig{})) }
func BenchmarkRTTDelayOnPacketSent(b *testing.B) { benchOnPacketSent(b, NewRTTDelay(RTTDelayConfig{})) }
