package netem

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

var lteLike = RateWalk{
	Min: scenario.Rate(cc.MbitPerSecond), Max: scenario.Rate(20 * cc.MbitPerSecond),
	HoldMin: scenario.Duration(200 * time.Millisecond), HoldMax: scenario.Duration(500 * time.Millisecond),
}

// walkSteps replays a walk for d and returns each rate and how long it held.
func walkSteps(seed uint64, cfg RateWalk, d time.Duration) (rates []cc.Bandwidth, holds []time.Duration) {
	w := newRateWalk(cfg, rand.New(rand.NewPCG(seed, streamRateWalk)), at(0))
	from := at(0)
	for from.Before(at(d)) {
		rates = append(rates, w.rate)
		next := w.nextAt
		holds = append(holds, next.Sub(from))
		w.to(next)
		from = next
	}
	return rates, holds
}

func TestRateWalkDistribution(t *testing.T) {
	rates, holds := walkSteps(1, lteLike, time.Hour)
	require.Greater(t, len(rates), 9000)
	var logSum float64
	below2, above10 := 0, 0
	for i, r := range rates {
		require.True(t, r >= cc.MbitPerSecond && r <= 20*cc.MbitPerSecond, "rate %d: %v", i, r)
		require.True(t, holds[i] >= 200*time.Millisecond && holds[i] <= 500*time.Millisecond, "hold %d: %v", i, holds[i])
		logSum += math.Log(float64(r))
		if r < 2*cc.MbitPerSecond {
			below2++
		}
		if r > 10*cc.MbitPerSecond {
			above10++
		}
	}
	n := float64(len(rates))
	// Log-uniform: the geometric mean is √(1·20) Mbit/s, and 1–2 Mbit/s
	// gets as many draws as 10–20 (each ln 2 / ln 20 = 23 %).
	require.InEpsilon(t, math.Sqrt(20)*1e6, math.Exp(logSum/n), 0.03)
	require.InDelta(t, math.Ln2/math.Log(20), float64(below2)/n, 0.015)
	require.InDelta(t, math.Ln2/math.Log(20), float64(above10)/n, 0.015)
	var holdSum time.Duration
	for _, h := range holds {
		holdSum += h
	}
	require.InEpsilon(t, float64(350*time.Millisecond), float64(holdSum)/n, 0.01, "uniform holds: mean 350 ms")
	require.InEpsilon(t, 19/math.Log(20)*1e6, float64(lteLike.MeanRate()), 1e-6)
}

func TestRateWalkSeeded(t *testing.T) {
	a, ha := walkSteps(3, lteLike, time.Minute)
	b, hb := walkSteps(3, lteLike, time.Minute)
	c, _ := walkSteps(4, lteLike, time.Minute)
	require.Equal(t, a, b)
	require.Equal(t, ha, hb)
	require.NotEqual(t, a, c, "another seed, another walk")
	// A fixed walk (min = max, hold_min = hold_max) is a fixed rate.
	fixed := RateWalk{Min: 5e6, Max: 5e6, HoldMin: scenario.Duration(time.Second), HoldMax: scenario.Duration(time.Second)}
	r, h := walkSteps(1, fixed, 10*time.Second)
	require.Len(t, r, 10)
	for i := range r {
		require.Equal(t, 5*cc.MbitPerSecond, r[i])
		require.Equal(t, time.Second, h[i])
	}
}

// TestRateWalkSerializesAtTheRateOfTheDequeue: a saturated walk link
// serializes each packet at the walk's rate at the instant it leaves the
// queue, whatever the caller's call pattern.
func TestRateWalkSerializesAtTheRateOfTheDequeue(t *testing.T) {
	const seed = 7
	l := newLink(t, LinkConfig{RateWalk: &lteLike, Seed: seed, Queue: QueueConfig{Limit: 100000}}, nil)
	var ps []*Packet
	for i := range 20000 { // 30 MB: more than 10 s of the walk can carry
		p := pkt(uint64(i), 1500)
		ps = append(ps, p)
		l.Enqueue(at(0), p)
	}
	deliver(l, at(10*time.Second))
	ref := newRateWalk(lteLike, rand.New(rand.NewPCG(seed, streamRateWalk)), at(0))
	checked, rates := 0, map[cc.Bandwidth]bool{}
	for i, p := range ps {
		if p.ArrivedAt == 0 {
			break
		}
		start := p.EnqueuedAt.Add(p.QueueDelay)
		ref.to(start)
		require.Equal(t, start.Add(TxTime(1500, ref.rate)), p.ArrivedAt, "packet %d dequeued at %v", i, start)
		rates[ref.rate] = true
		checked++
	}
	require.Greater(t, checked, 1000)
	require.Greater(t, len(rates), 20, "the rate changed, about every 350 ms")
}

func TestRateWalkChange(t *testing.T) {
	// A fixed rate, then a walk from 1 s, then a rate again from 2 s.
	l := newLink(t, LinkConfig{Rate: 12 * cc.MbitPerSecond, Seed: 1}, nil)
	walk := RateWalk{Min: 1e6, Max: 1e6, HoldMin: scenario.Duration(time.Second), HoldMax: scenario.Duration(time.Second)}
	require.NoError(t, l.ApplyChange(at(time.Second), scenario.PathChange{RateWalk: &walk}))
	require.Equal(t, &walk, l.Config().RateWalk)
	p := pkt(0, 1500)
	l.Enqueue(at(time.Second), p)
	deliver(l, at(time.Second+20*time.Millisecond))
	require.Equal(t, at(time.Second+12*time.Millisecond), p.ArrivedAt, "1500 B at the walk's 1 Mbit/s")
	rate := scenario.Rate(12 * cc.MbitPerSecond)
	require.NoError(t, l.ApplyChange(at(2*time.Second), scenario.PathChange{Rate: &rate}))
	q := pkt(1, 1500)
	l.Enqueue(at(2*time.Second), q)
	deliver(l, at(3*time.Second))
	require.Equal(t, at(2*time.Second+time.Millisecond), q.ArrivedAt)
	require.Nil(t, l.Config().RateWalk)
}

func TestRateWalkValidation(t *testing.T) {
	ok := lteLike
	for name, mod := range map[string]func(*RateWalk){
		"no min":           func(w *RateWalk) { w.Min = 0 },
		"max below min":    func(w *RateWalk) { w.Max = w.Min - 1 },
		"no hold":          func(w *RateWalk) { w.HoldMin, w.HoldMax = 0, 0 },
		"sub-ms hold":      func(w *RateWalk) { w.HoldMin = scenario.Duration(time.Microsecond) },
		"hold max too low": func(w *RateWalk) { w.HoldMax = w.HoldMin - 1 },
	} {
		w := ok
		mod(&w)
		_, err := NewLink(LinkConfig{RateWalk: &w}, nil)
		require.ErrorIs(t, err, ErrInvalidConfig, name)
	}
	_, err := NewLink(LinkConfig{RateWalk: &ok, Queue: QueueConfig{Discipline: DisciplineCake}}, nil)
	require.NoError(t, err, "cake follows the walk's rate")
}

// The walk's holds in a link: the rate seen by packets changes only at
// the walk's instants (a sanity check of the lazy replay against steps).
func TestRateWalkLazyReplayMatchesSteps(t *testing.T) {
	rates, holds := walkSteps(9, lteLike, 5*time.Second)
	w := newRateWalk(lteLike, rand.New(rand.NewPCG(9, streamRateWalk)), at(0))
	var from clock.Mono
	for i := range rates {
		mid := from.Add(holds[i] / 2)
		w.to(mid)
		require.Equal(t, rates[i], w.rate, "step %d", i)
		from = from.Add(holds[i])
	}
	require.True(t, slices.ContainsFunc(rates, func(r cc.Bandwidth) bool { return r != rates[0] }))
}
