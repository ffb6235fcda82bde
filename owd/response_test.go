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
	r := response{batched: true}
	rng := rand.New(rand.NewPCG(1, 2))
	// Delay that does not follow the window: noise of 0–8 ms per round,
	// jagged within the round.
	feedRounds(&r, 64, 10*time.Millisecond, sawtooth, func(int) time.Duration {
		return time.Duration(rng.Float64() * float64(8*time.Millisecond))
	})
	require.Greater(t, r.floor, 8*time.Millisecond, "responseGain × the largest round delay")
	require.LessOrEqual(t, r.floor, max(16*time.Millisecond, time.Duration(spreadGain*r.spread)+time.Millisecond),
		"2 × the largest round delay, or 1.5 × the rounds' spread")
}

// Among flows of its own kind on a FIFO that does not batch, the delay a
// flow sees does not follow its window (the others move the queue) and is
// jagged within a round while the others start and drain. Learned as
// noise, it would give the flow a μ above the others' and the link with
// it; it teaches nothing.
func TestResponseOthersQueueTeachesNothing(t *testing.T) {
	learn := func(batched bool) time.Duration {
		r := response{batched: batched}
		rng := rand.New(rand.NewPCG(1, 2))
		feedRounds(&r, 64, 10*time.Millisecond, sawtooth, func(int) time.Duration {
			return time.Duration(rng.Float64() * float64(8*time.Millisecond))
		})
		return r.floor
	}
	require.Greater(t, learn(true), 8*time.Millisecond, "the same delays on a batching link are noise")
	require.Zero(t, learn(false))
}

// A floor learned in a transient (other flows starting, a burst of
// retries) gives way to what later verdicts of noise find, instead of
// standing at its peak for good.
func TestResponseLaterNoiseLowersFloor(t *testing.T) {
	r := response{batched: true, floor: 20 * time.Millisecond}
	rng := rand.New(rand.NewPCG(1, 2))
	feedRounds(&r, 300, 3*time.Millisecond, sawtooth, func(int) time.Duration {
		return time.Duration(rng.Float64() * float64(3*time.Millisecond))
	})
	require.Positive(t, r.floor, "still noise")
	require.Less(t, r.floor, 8*time.Millisecond)
}

func TestResponseSmoothQueueCappedBySpread(t *testing.T) {
	r := response{batched: true}
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
	r.floor = 20 * time.Millisecond
	feedRounds(&r, 300, 0, sawtooth, func(i int) time.Duration {
		return time.Duration(sawtooth(i-1)-18) * time.Millisecond
	})
	// 300 rounds of 100 ms = 30 s = 3 decay constants (less the first 16
	// rounds that fill the history).
	require.Less(t, r.floor, 2*time.Millisecond)
}

func TestResponseSteadyWindowNoVerdict(t *testing.T) {
	var r response
	rng := rand.New(rand.NewPCG(5, 6))
	feedRounds(&r, 64, 10*time.Millisecond, func(int) float64 { return 20 }, func(int) time.Duration {
		return time.Duration(rng.Float64() * float64(8*time.Millisecond))
	})
	require.Zero(t, r.floor, "a window that did not move made no experiment")
}

// The mechanism end to end: a radio link that holds packets back and
// releases every 10 ms's worth together, 0–15 ms late, adds delay the
// window does not cause; without the learned floor the delay rule holds
// the window far below the path's.
func TestNoiseResponseKeepsWindowOpen(t *testing.T) {
	run := func(disable bool) float64 {
		cfg := Config{MSS: mss}
		cfg.Tuning.DisableNoiseResponse = disable
		cfg.Tuning.DisableBaseDelayProbe = true
		h := newHarness(mustNew(New(cfg)))
		h.toAvoidance()
		rng := rand.New(rand.NewPCG(7, 8))
		// One ACK per ms, so 100 ACKs per 100 ms round trip; the packets
		// of each 10 ms block arrive together at its end plus the noise.
		var noise time.Duration
		for i := range 60000 {
			if i%10 == 0 {
				noise = time.Duration(rng.Float64() * float64(15*time.Millisecond))
			}
			held := time.Duration(9-i%10)*time.Millisecond + noise
			h.ack(50*time.Millisecond+held, 100*time.Millisecond+held)
		}
		return h.cwndPackets()
	}
	with, without := run(false), run(true)
	t.Logf("window: %.1f packets with the learned floor, %.1f without", with, without)
	require.Greater(t, with, 2*without)
}

// On a batching link noise that pins the window (so the correlation has
// no experiment to judge) still sets a floor: the rounds' own spread.
// On a link that does not batch it sets none.
func TestResponseSpreadFloorOnBatchingLink(t *testing.T) {
	for _, batched := range []bool{true, false} {
		r := response{batched: batched}
		rng := rand.New(rand.NewPCG(5, 6))
		feedRounds(&r, 64, 10*time.Millisecond, func(int) float64 { return 20 }, func(int) time.Duration {
			return time.Duration(rng.Float64() * float64(8*time.Millisecond))
		})
		if !batched {
			require.Zero(t, r.floor)
			continue
		}
		require.GreaterOrEqual(t, float64(r.floor), spreadGain*r.spread)
		require.Greater(t, r.floor, 12*time.Millisecond, "1.5 × a spread near the 10 ms jag")
	}
}
