package owd

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock"
)

// feedRounds runs r through n rounds of 10 ACKs over 100 ms each, the
// window and queueing delay of round i given by w(i) and q(i); the raw
// samples spread over [q, q+jag) within each round.
func feedRounds(r *response, n int, jag time.Duration, w func(int) float64, q func(int) time.Duration) {
	now := clock.Mono(0)
	rng := rand.New(rand.NewPCG(9, 10))
	for i := range n {
		for range 10 {
			now = now.Add(10 * time.Millisecond)
			raw := q(i) + time.Duration(rng.Float64()*float64(jag))
			r.observe(now, w(i), q(i), raw, 100*time.Millisecond)
		}
	}
}

func sawtooth(i int) float64 { return 20 + float64(i%8) } // a window that moves

func TestResponseOwnQueueLearnsNothing(t *testing.T) {
	var r response
	// The delay follows the previous round's window: the flow's own queue.
	feedRounds(&r, 64, 10*time.Millisecond, sawtooth, func(i int) time.Duration {
		return time.Duration(sawtooth(i-1)-18) * time.Millisecond
	})
	require.Zero(t, r.floor)
	c, ok := r.lagCorrelation()
	require.True(t, ok)
	require.Greater(t, c, 0.9)
}

func TestResponseNoiseRaisesFloor(t *testing.T) {
	var r response
	rng := rand.New(rand.NewPCG(1, 2))
	// Delay that does not follow the window: noise of 0–8 ms per round,
	// jagged within the round.
	feedRounds(&r, 64, 10*time.Millisecond, sawtooth, func(int) time.Duration {
		return time.Duration(rng.Float64() * float64(8*time.Millisecond))
	})
	require.Greater(t, r.floor, 8*time.Millisecond, "responseGain × the largest round delay")
	require.LessOrEqual(t, r.floor, responseCap)
}

func TestResponseFloorCapped(t *testing.T) {
	var r response
	rng := rand.New(rand.NewPCG(3, 4))
	// A competitor's queue of 200–300 ms, unrelated to the window and
	// jagged within rounds: capped at responseCap.
	feedRounds(&r, 64, 50*time.Millisecond, sawtooth, func(int) time.Duration {
		return 200*time.Millisecond + time.Duration(rng.Float64()*float64(100*time.Millisecond))
	})
	require.Equal(t, responseCap, r.floor, "never licenses a long queue")
}

func TestResponseSmoothQueueCappedBySpread(t *testing.T) {
	var r response
	// A queue of 5–10 ms that does not follow the window (it drifts on a
	// period of its own) and is smooth within a round, as an AQM holding
	// its target beside a loss-based flow: the floor stays within twice
	// the rounds' spread of about 1 ms, far below the queue.
	feedRounds(&r, 64, time.Millisecond, sawtooth, func(i int) time.Duration {
		return time.Duration((7.5 + 2.5*math.Sin(float64(i)/7)) * float64(time.Millisecond))
	})
	c, ok := r.lagCorrelation()
	require.True(t, ok)
	require.Less(t, c, responseLow, "the queue does not follow the window")
	require.Greater(t, r.floor, time.Duration(0))
	require.LessOrEqual(t, r.floor, 3*time.Millisecond)
}

func TestResponseFloorDecaysWhenDelayFollowsWindow(t *testing.T) {
	var r response
	r.floor = responseCap
	feedRounds(&r, 300, 0, sawtooth, func(i int) time.Duration {
		return time.Duration(sawtooth(i-1)-18) * time.Millisecond
	})
	// 300 rounds of 100 ms = 30 s = 3 decay constants (less the first 16
	// rounds that fill the history).
	require.Less(t, r.floor, responseCap/10)
}

func TestResponseSteadyWindowNoVerdict(t *testing.T) {
	var r response
	rng := rand.New(rand.NewPCG(5, 6))
	feedRounds(&r, 64, 10*time.Millisecond, func(int) float64 { return 20 }, func(int) time.Duration {
		return time.Duration(rng.Float64() * float64(8*time.Millisecond))
	})
	require.Zero(t, r.floor, "a window that did not move made no experiment")
}

// The mechanism end to end: order-kept delay noise the window does not
// cause holds the delay rule's window far below the path's without the
// learned floor.
func TestNoiseResponseKeepsWindowOpen(t *testing.T) {
	run := func(disable bool) float64 {
		cfg := Config{MSS: mss}
		cfg.Tuning.DisableNoiseResponse = disable
		cfg.Tuning.DisableBaseDelayProbe = true
		h := newHarness(mustNew(New(cfg)))
		h.toAvoidance()
		rng := rand.New(rand.NewPCG(7, 8))
		// A 10 ms-correlated burst of 0–15 ms on a 50 ms path, unrelated to
		// the window; one ACK per ms, so 100 ACKs per 100 ms round trip.
		var noise time.Duration
		for i := range 60000 {
			if i%10 == 0 {
				noise = time.Duration(rng.Float64() * float64(15*time.Millisecond))
			}
			h.ack(50*time.Millisecond+noise, 100*time.Millisecond+noise)
		}
		return h.cwndPackets()
	}
	with, without := run(false), run(true)
	t.Logf("window: %.1f packets with the learned floor, %.1f without", with, without)
	require.Greater(t, with, 2*without)
}
