package owd

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// The velocity: after four round trips with the queue clearly empty the
// increase doubles each round trip (up to its cap), back to one packet per
// round trip once the queue rises past μ; past the window at which the
// path last filled it is one packet per round trip again.
func TestVelocity(t *testing.T) {
	grown := func(disable bool, rounds int) float64 {
		cfg := noProbe()
		cfg.Tuning.DisableVelocity = disable
		cfg.Tuning.VelocityMax = 8
		h := newHarness(mustNew(New(cfg)))
		h.toAvoidance() // SRTT ≈ 100 ms at 1 ms a packet
		before := h.cwndPackets()
		h.ackN(rounds*100, 50*time.Millisecond, 100*time.Millisecond) // empty queue
		return h.cwndPackets() - before
	}
	slow := grown(true, 10)
	fast := grown(false, 10)
	require.InDelta(t, 10*100/13.0, slow, 60, "one packet per round trip: about +1 per window of ACKs")
	require.Greater(t, fast, 2.5*slow, "doubling after four quiet round trips")

	var v velocity
	now := clock.Mono(0)
	srtt := 100 * time.Millisecond
	speed := 0.0
	for r := range 8 {
		for range 10 {
			now = now.Add(10 * time.Millisecond)
			speed = v.observe(now, 0, 0.1, srtt, 100, 16)
		}
		if r < velocityRounds {
			require.Equal(t, 1.0, speed, "round %d", r)
		}
	}
	require.Equal(t, 16.0, speed, "doubled to the cap")
	require.Equal(t, 1.0, v.observe(now.Add(time.Millisecond), 0.11, 0.1, srtt, 100, 16), "above μ: back to one")
	require.Equal(t, 100.0, v.full, "the window at which the path filled")
	for range 60 { // quiet again, but the window is past where it filled
		now = now.Add(10 * time.Millisecond)
		speed = v.observe(now, 0, 0.1, srtt, 110, 16)
	}
	require.Equal(t, 1.0, speed, "past the last fill: the rule's own pace")
	speed = v.observe(now.Add(time.Millisecond), 0, 0.1, srtt, 130, 16)
	require.Zero(t, v.full, "a quarter past it with no queue: the path has more room")
	require.Greater(t, speed, 1.0)
}

// A queue far above the target (three base delays) is cut once per round
// trip to what would leave μ of it, and the rule's decrease waits for the
// cut to show.
func TestQueueDrain(t *testing.T) {
	run := func(disable bool) (after, later float64) {
		cfg := noProbe()
		cfg.Tuning.DisableQueueDrain = disable
		h := newHarness(mustNew(New(cfg)))
		h.toAvoidance()
		h.ackN(300, 50*time.Millisecond, 100*time.Millisecond)
		before := h.cwnd()
		// A window of packets is out when the queue jumps to 150 ms
		// (OWDcur 4 × OWDmin); their ACKs all report it.
		first := h.pn + 1
		for range 20 {
			h.pn++
			h.c.OnPacketSent(h.now, h.pn, mss, h.c.Window())
		}
		for pn := first; pn <= h.pn; pn++ {
			h.now = h.now.Add(time.Millisecond)
			h.c.OnAck(h.now, cc.AckSample{PacketNumber: pn, Bytes: mss, SentTime: h.now.Add(-250 * time.Millisecond),
				OWD: 200 * time.Millisecond, OWDValid: true, ClockSynced: true, RTT: 250 * time.Millisecond, PriorInFlight: h.c.Window()})
			if pn == first+3 {
				after = h.cwnd() / before // OWDcur is a filtered value from the fourth
			}
		}
		return after, h.cwnd() / before
	}
	after, later := run(false)
	// (1 + μ)/(1 + 3): μ is under 1 here (the jump itself raised the
	// jitter term of the noise floor to about 45 ms).
	require.Less(t, after, 0.5, "cut at once")
	require.Greater(t, after, 0.25)
	require.Equal(t, after, later, "no more until the cut shows")
	after, _ = run(true)
	require.Greater(t, after, 0.9, "without the drain, Eq. 7's decrease of (1 − r)/r² per ACK")
}

func (h *harness) cwnd() float64 { return h.c.cwnd }

// Packets that reach the receiver together (sent apart) mark a link that
// releases them in batches; a FIFO bottleneck never does that, however
// many flows share it.
func TestBunching(t *testing.T) {
	var fifo, radio bunching
	sent := clock.Mono(0)
	arr := time.Duration(0)
	for pn := cc.PacketNumber(1); pn <= 400; pn++ {
		sent = sent.Add(time.Millisecond)
		// FIFO: spaced by the service time (0.9 ms) or more.
		arr = max(arr+900*time.Microsecond, time.Duration(sent)+20*time.Millisecond)
		fifo.onSample(pn, sent, arr-time.Duration(sent))
		// Radio: every fourth packet released with the three before it.
		r := time.Duration(sent) + 20*time.Millisecond + time.Duration(3-(pn-1)%4)*time.Millisecond
		radio.onSample(pn, sent, r-time.Duration(sent))
	}
	require.False(t, fifo.batched())
	require.True(t, radio.batched())
}

// Only a link that releases packets in batches teaches a noise floor;
// on one that does not, the same delay is other flows' queue.
func TestResponseLearnsOnlyOnBatchedLinks(t *testing.T) {
	learn := func(batched bool) time.Duration {
		var r response
		r.batched = batched
		now := clock.Mono(0)
		srtt := 50 * time.Millisecond
		for i := range 4000 {
			now = now.Add(time.Millisecond)
			// Delay noise of 0..40 ms that ignores the window, which moves.
			w := 20 + 5*float64((i/100)%3)
			q := time.Duration((i*7919)%40) * time.Millisecond
			r.observe(now, w, q/2, q, srtt)
		}
		return r.floor
	}
	require.Zero(t, learn(false))
	require.Greater(t, learn(true), 20*time.Millisecond)
}

// A flow that fills its window at some moment of each round trip is
// window-limited, even when the ACKs come in bursts and the bytes in
// flight at most ACKs are far below the window.
func TestWindowLimitedOverTheRoundTrip(t *testing.T) {
	grow := func(bursty bool) float64 {
		cfg := noProbe()
		cfg.Tuning.DisableVelocity = true
		h := newHarness(mustNew(New(cfg)))
		h.toAvoidance()
		before := h.cwndPackets()
		for range 200 {
			// A round trip of 10 packets: when bursty, only the first
			// finds the window full, the rest a third of it.
			first := h.pn + 1
			for i := range 10 {
				h.pn++
				inFlight := h.c.Window()
				if bursty && i > 0 {
					inFlight /= 3
				}
				h.c.OnPacketSent(h.now, h.pn, mss, inFlight)
			}
			for pn := first; pn <= h.pn; pn++ {
				h.now = h.now.Add(time.Millisecond)
				inFlight := h.c.Window()
				if bursty && pn > first {
					inFlight /= 3
				}
				h.c.OnAck(h.now, cc.AckSample{PacketNumber: pn, Bytes: mss, SentTime: h.now, OWD: 50 * time.Millisecond,
					OWDValid: true, ClockSynced: true, RTT: 100 * time.Millisecond, PriorInFlight: inFlight})
			}
		}
		return h.cwndPackets() - before
	}
	full, bursty := grow(false), grow(true)
	require.Greater(t, full, 10.0)
	require.InDelta(t, full, bursty, 0.1*full, "the bursty flow filled its window once a round trip: it grows as the full one")
}

// Two packets sent far apart do not make a packet pair: the other flows'
// packets came between them in the queue.
func TestDispersionNeedsPacketsSentClose(t *testing.T) {
	var d dispersion
	sent := clock.Mono(0)
	for pn := cc.PacketNumber(1); pn <= 40; pn++ {
		sent = sent.Add(100 * time.Millisecond)
		// Queued, and arriving 120 ms apart: the send gap, stretched.
		d.onSample(sent, pn, sent, 300*time.Millisecond+time.Duration(pn)*20*time.Millisecond, true)
	}
	require.Zero(t, d.packetTime(), "a 120 ms gap of packets sent 100 ms apart is no packet time")
}

// The slow-start rate rounds: a round ends at the ACK of the first
// packet sent after it began (so a round's count runs one batch behind
// the batches sent); the last two rounds give a growth, which counts
// from ssRateGrowth up.
func TestSlowStartRateRounds(t *testing.T) {
	var r ssRate
	now, pn := clock.Mono(0), cc.PacketNumber(0)
	// batch sends n packets at once and has them acknowledged one RTT
	// (100 ms) later, the ACKs spread over 1 ms.
	batch := func(n int) {
		first := pn + 1
		pn += cc.PacketNumber(n)
		now = now.Add(100 * time.Millisecond)
		for p := first; p <= pn; p++ {
			now = now.Add(time.Millisecond / time.Duration(n))
			r.observe(now, p, mss, pn)
		}
	}
	batch(5)
	require.False(t, r.growing(), "no round completed yet")
	batch(10)
	batch(20)
	batch(40)
	require.True(t, r.growing(), "the rate doubled each round")
	batch(40)
	batch(40)
	require.False(t, r.growing(), "the rate stayed")
	batch(50)
	batch(62)
	require.False(t, r.growing(), "under ssRateGrowth")
	batch(124)
	batch(124)
	require.True(t, r.growing())
	r.reset()
	require.False(t, r.growing(), "a new slow start knows no rounds")
}
