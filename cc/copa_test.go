package cc

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// copaInDefault returns a Copa in default mode (slow start already left)
// with a 20-packet window and one round at testRTT behind it, so RTTmin =
// RTTstanding = testRTT, and the harness with nothing outstanding.
func copaInDefault(t testing.TB) (*Copa, *harness) {
	c := NewCopa(CopaConfig{MSS: testMSS, InitialWindow: 20 * testMSS})
	h := newHarness(t, c, testMSS)
	c.exitSlowStart(h.now())
	h.send(20)
	h.advance(testRTT)
	h.ackAll(testRTT)
	require.Equal(t, ModeDefault, c.Metrics().Mode)
	require.Equal(t, testRTT, c.standing.get())
	require.Equal(t, testRTT, c.minRTT.get())
	return c, h
}

// copaAck acknowledges one packet with no RTT sample (the filters stay as
// they are) in the middle of a round, the flow window-limited.
func copaAck(c *Copa, h *harness) {
	c.roundEnd = 1 << 40 // no round ends
	c.OnAck(h.now(), AckSample{PacketNumber: 1, Bytes: testMSS, PriorInFlight: c.Window()})
}

func TestCopaDefaults(t *testing.T) {
	c := NewCopa(CopaConfig{})
	require.Equal(t, "copa", c.Name())
	require.Equal(t, InitialWindowPackets*DefaultMSS, c.Window())
	m := c.Metrics()
	require.Equal(t, ModeSlowStart, m.Mode)
	require.True(t, m.InSlowStart)
	require.Equal(t, SignalNone, m.Signal)
	require.Zero(t, c.PacingRate(), "no RTT sample: do not pace")
	require.Equal(t, 2.0, c.invDelta, "δ = 0.5")
	require.Equal(t, 2*testMSS, NewCopa(CopaConfig{MSS: testMSS, InitialWindow: 1}).Window(), "2-packet floor")

	r, err := New("copa", 1400)
	require.NoError(t, err)
	require.Equal(t, "copa", r.Name())
	require.Equal(t, 10*ByteCount(1400), r.Window())
}

// RTTstanding is the smallest RTT of the last srtt/2; RTTmin of the last
// 10 s; d_q their difference.
func TestCopaRTTStandingWindow(t *testing.T) {
	c := NewCopa(CopaConfig{MSS: testMSS})
	h := newHarness(t, c, testMSS)
	sample := func(rtt time.Duration) {
		h.send(1)
		h.ack(1, rtt)
	}
	sample(testRTT) // srtt = 100 ms: the window is about 50 ms
	h.advance(10 * time.Millisecond)
	sample(60 * time.Millisecond)
	for range 4 { // 40 ms more: inside the window
		h.advance(10 * time.Millisecond)
		sample(testRTT)
		require.Equal(t, 60*time.Millisecond, c.standing.get())
	}
	require.Less(t, c.rtt.Smoothed()/2, 50*time.Millisecond+time.Millisecond)
	for range 3 { // 70 ms after the 60 ms sample: out of the window
		h.advance(10 * time.Millisecond)
		sample(testRTT)
	}
	require.Equal(t, testRTT, c.standing.get(), "the low sample left RTTstanding")
	require.Equal(t, 60*time.Millisecond, c.minRTT.get(), "but not RTTmin")
	require.Equal(t, 40*time.Millisecond, c.dq)
	require.Equal(t, 60*time.Millisecond, c.Metrics().MinRTT)

	for range 9 { // 9 s on: RTTmin still holds the 60 ms sample
		h.advance(time.Second)
		sample(testRTT)
	}
	require.Equal(t, 60*time.Millisecond, c.minRTT.get())
	h.advance(time.Second)
	sample(testRTT)
	require.Equal(t, testRTT, c.minRTT.get(), "RTTmin forgets after 10 s")
}

// λ = cwnd/RTTstanding against λt = 1/(δ·d_q): below the target the window
// grows by v/(δ·cwnd) packets per packet acknowledged, above it shrinks by
// as much.
func TestCopaTargetRate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		packets ByteCount
		step    float64 // bytes per ACK
	}{
		// d_q = 10 ms: λt = 200 packets/s. 20 packets over 110 ms is
		// 181.8/s, below: +1/(0.5·20) packets.
		{"below the target: up", 20, +100},
		// 25 packets over 110 ms is 227.3/s, above: −1/(0.5·25).
		{"above the target: down", 25, -80},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, h := copaInDefault(t)
			c.standing.reset(0, 110*time.Millisecond)
			c.cwnd = float64(tc.packets * testMSS)
			before := c.cwnd
			copaAck(c, h)
			require.Equal(t, 10*time.Millisecond, c.dq)
			require.InDelta(t, tc.step, c.cwnd-before, 1e-9)
		})
	}
}

// v doubles every round once the window has moved the same way for three
// rounds in a row, and is back to 1 at the first ACK that moves it the
// other way.
func TestCopaVelocity(t *testing.T) {
	c, h := copaInDefault(t)
	var vs []float64
	for range 8 {
		h.roundTrip(testRTT) // no queue: λt unbounded, always up
		vs = append(vs, c.velocity)
	}
	// Round 1 starts the count (its start window was taken by the
	// fixture's last ACK); rounds 2–4 repeat "up" once, twice, three times.
	require.Equal(t, []float64{1, 1, 1, 2, 4, 8, 16, 32}, vs)
	require.Equal(t, +1, c.dir)

	// A standing queue of 50 ms: above the target at the first ACK.
	h.send(1)
	h.advance(150 * time.Millisecond)
	h.ack(1, 150*time.Millisecond)
	require.Equal(t, 1.0, c.velocity, "reset at the first ACK going down")
	require.Equal(t, -1, c.dir)
}

// Alternating directions (up three rounds, down one) never let v double:
// each change of direction restarts the count.
func TestCopaVelocityStaysOneWhileDirectionAlternates(t *testing.T) {
	c, h := copaInDefault(t)
	for range 4 {
		for range 3 {
			h.roundTrip(testRTT)
			require.Equal(t, 1.0, c.velocity)
		}
		h.roundTrip(150 * time.Millisecond)
		require.Equal(t, 1.0, c.velocity)
	}
	require.Equal(t, ModeDefault, c.Metrics().Mode, "the queue emptied every 4 rounds")
}

// Slow start doubles the window every round while λ <= λt, goes on with a
// queue below the target, and ends at the first ACK with λ > λt, which
// already takes the window down.
func TestCopaSlowStartExit(t *testing.T) {
	c := NewCopa(CopaConfig{MSS: testMSS})
	h := newHarness(t, c, testMSS)
	for _, want := range []ByteCount{20, 40, 80} {
		h.roundTrip(testRTT)
		require.Equal(t, want*testMSS, c.Window())
		require.True(t, c.Metrics().InSlowStart)
	}
	// 0.5 ms of queue: 80 packets over 100.5 ms is 796/s, below λt =
	// 4000/s.
	h.roundTrip(100500 * time.Microsecond)
	require.Equal(t, 160*testMSS, c.Window())
	require.Equal(t, ModeSlowStart, c.Metrics().Mode)

	// 5 ms of queue: 160 packets over 105 ms is 1524/s, above λt = 400/s.
	h.advance(105 * time.Millisecond)
	h.ack(1, 105*time.Millisecond)
	m := c.Metrics()
	require.Equal(t, ModeDefault, m.Mode)
	require.False(t, m.InSlowStart)
	require.Less(t, m.Window, 160*testMSS, "the exit ACK already decreases")
	h.ackAll(105 * time.Millisecond)
	require.Less(t, c.Window(), 160*testMSS)
}

// The window never falls below 2 packets. (The target alone keeps it
// above: at equilibrium cwnd = (1/δ)·RTTstanding/d_q > 2 packets; a step
// from just above the floor crosses it.)
func TestCopaWindowFloor(t *testing.T) {
	c, h := copaInDefault(t)
	c.standing.reset(0, time.Second) // d_q = 900 ms
	c.cwnd = 2.5 * float64(testMSS)  // above the target: −800 bytes
	copaAck(c, h)
	require.Equal(t, 2*testMSS, c.Window())
	require.Equal(t, 2*testMSS, c.Metrics().Window)
}

// Pacing is 2·cwnd/RTTstanding, not over SRTT.
func TestCopaPacingRate(t *testing.T) {
	c, h := copaInDefault(t)
	h.roundTrip(testRTT)
	h.roundTrip(120 * time.Millisecond)
	require.Equal(t, 120*time.Millisecond, c.standing.get())
	require.NotEqual(t, 120*time.Millisecond, c.rtt.Smoothed())
	want := 2 * c.cwnd * 8 / 0.120
	require.InDelta(t, want, float64(c.PacingRate()), 1)
	require.Equal(t, c.PacingRate(), c.Metrics().PacingRate)
}

// A queue that never nearly empties (d_q = 50 ms, RTTmax − RTTmin = 50 ms)
// switches to competitive mode once it has lasted 5 smoothed RTTs, not
// before.
func TestCopaCompetitiveOnStandingQueue(t *testing.T) {
	c, h := copaInDefault(t)
	start := h.now()
	for c.Metrics().Mode == ModeDefault {
		h.roundTrip(150 * time.Millisecond)
		require.Less(t, h.now().Sub(start), 3*time.Second, "never switched")
	}
	require.Equal(t, ModeCompetitive, c.Metrics().Mode)
	require.Greater(t, h.now().Sub(start), 5*c.rtt.Smoothed())
	require.Equal(t, 50*time.Millisecond, c.dq)
}

// A standing queue that empties now and then (every fourth round) keeps
// default mode however long it lasts, and so does no queue at all (d_q = 0
// and RTTmax = RTTmin: "nearly empty" includes empty).
func TestCopaDefaultWhileQueueEmpties(t *testing.T) {
	c, h := copaInDefault(t)
	for range 10 {
		h.roundTrip(testRTT)
	}
	require.Equal(t, ModeDefault, c.Metrics().Mode)
	for range 10 {
		for range 3 {
			h.roundTrip(150 * time.Millisecond)
		}
		h.roundTrip(testRTT)
		require.Equal(t, ModeDefault, c.Metrics().Mode)
	}
}

// competitiveCopa returns a Copa that a standing queue took to
// competitive mode.
func competitiveCopa(t testing.TB) (*Copa, *harness) {
	c, h := copaInDefault(t)
	for n := 0; c.Metrics().Mode != ModeCompetitive; n++ {
		h.roundTrip(150 * time.Millisecond)
		require.Less(t, n, 20, "never switched")
	}
	return c, h
}

// In competitive mode 1/δ grows by 1 per round without loss and halves on a
// loss (once per congestion event, never below 2); the first nearly empty
// queue returns the flow to default mode with δ = 0.5.
func TestCopaCompetitiveDelta(t *testing.T) {
	c, h := competitiveCopa(t)
	inv := c.invDelta
	for range 6 {
		h.roundTrip(150 * time.Millisecond)
		require.Equal(t, inv+1, c.invDelta)
		inv = c.invDelta
	}
	require.Equal(t, ModeCompetitive, c.Metrics().Mode)
	w := c.Window()
	h.sendWindow()
	h.lose(1)
	require.Equal(t, inv/2, c.invDelta, "a loss halves 1/δ")
	h.lose(1)
	require.Equal(t, inv/2, c.invDelta, "once per congestion event")
	require.Equal(t, w, c.Window(), "the window itself is not cut")
	h.roundTrip(150 * time.Millisecond) // the round with the loss adds nothing
	require.Equal(t, inv/2, c.invDelta)

	c.invDelta = 3
	h.sendWindow()
	h.lose(1)
	require.Equal(t, 2.0, c.invDelta, "δ never above 0.5")

	h.roundTrip(testRTT) // the queue is empty again
	require.Equal(t, ModeDefault, c.Metrics().Mode)
	require.Equal(t, 2.0, c.invDelta)
}

// In default mode and slow start a loss changes nothing.
func TestCopaDefaultModeIgnoresLoss(t *testing.T) {
	c, h := copaInDefault(t)
	h.sendWindow()
	w := c.Window()
	h.lose(3)
	require.Equal(t, w, c.Window())
	require.Equal(t, 2.0, c.invDelta)
	require.Equal(t, ModeDefault, c.Metrics().Mode)
}

// A retransmission timeout: 2 packets, δ = 0.5, v = 1, slow start.
func TestCopaRetransmissionTimeout(t *testing.T) {
	c, h := competitiveCopa(t)
	c.velocity = 8
	c.OnRetransmissionTimeout(h.now())
	m := c.Metrics()
	require.Equal(t, 2*testMSS, m.Window)
	require.Equal(t, ModeSlowStart, m.Mode)
	require.Equal(t, 2.0, c.invDelta)
	require.Equal(t, 1.0, c.velocity)
}

// An application-limited flow does not grow however empty the queue.
func TestCopaNoIncreaseWhenAppLimited(t *testing.T) {
	c, h := copaInDefault(t)
	w := c.Window()
	for range 10 {
		h.send(3)
		h.advance(testRTT)
		h.ackAll(testRTT)
	}
	require.Equal(t, w, c.Window())
}

// Odd input before and between samples: nothing panics, the floor holds.
func TestCopaOddSamples(t *testing.T) {
	c := NewCopa(CopaConfig{MSS: testMSS})
	c.OnLoss(0, LossEvent{PacketNumber: 5, Bytes: testMSS})
	c.OnRetransmissionTimeout(0)
	c.OnAck(0, AckSample{PacketNumber: 7})
	require.Zero(t, c.PacingRate())
	c.OnAck(0, AckSample{PacketNumber: 8, Bytes: testMSS, RTT: time.Nanosecond, PriorInFlight: 1 << 30})
	c.OnAck(-5, AckSample{PacketNumber: 9, Bytes: testMSS, RTT: 3 * time.Hour, PriorInFlight: 1 << 30})
	require.GreaterOrEqual(t, c.Window(), 2*testMSS)
	require.Positive(t, c.PacingRate())
	require.True(t, c.CanSend(0))
}

func BenchmarkCopaOnAck(b *testing.B)        { benchOnAck(b, NewCopa(CopaConfig{})) }
func BenchmarkCopaOnPacketSent(b *testing.B) { benchOnPacketSent(b, NewCopa(CopaConfig{})) }
