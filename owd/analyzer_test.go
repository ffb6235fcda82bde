package owd

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock"
)

func TestAnalyzerCurrentIsMinOfLastFour(t *testing.T) {
	a := NewAnalyzer(AnalyzerConfig{})
	var now clock.Mono
	for i, d := range []time.Duration{30, 40, 50, 60} {
		a.Add(now.Add(time.Duration(i)*time.Millisecond), d*time.Millisecond)
	}
	require.True(t, a.Ready())
	require.Equal(t, 30*time.Millisecond, a.Current())
	a.Add(now.Add(5*time.Millisecond), 70*time.Millisecond) // 30 leaves the filter
	require.Equal(t, 40*time.Millisecond, a.Current())
	require.Equal(t, 30*time.Millisecond, a.Min(), "OWDmin remembers it")
	require.InDelta(t, (40.0-30)/30, a.Variation(), 1e-12, "Eq. 1")
	require.Equal(t, 10*time.Millisecond, a.QueueingDelay())
}

func TestAnalyzerIgnoresImpossibleSamples(t *testing.T) {
	a := NewAnalyzer(AnalyzerConfig{})
	a.Add(0, 0)
	a.Add(0, -time.Millisecond)
	require.Zero(t, a.Samples())
	require.Zero(t, a.Min())
}

func TestAnalyzerBaseFloor(t *testing.T) {
	// Loopback-like path: OWDmin 100 µs. Eq. 1 divides by the 1 ms floor,
	// so 500 µs of queueing is OWDv 0.5, not 5.
	a := NewAnalyzer(AnalyzerConfig{CurrentFilter: 1})
	a.Add(0, 100*time.Microsecond)
	a.Add(1, 600*time.Microsecond)
	require.InDelta(t, 0.5, a.Variation(), 1e-12)
	// μ floor: 5 ms / max(OWDmin, 1 ms) = 5.
	require.InDelta(t, 5, a.Mu(1), 1e-12)
}

func TestAnalyzerHistoryRouteChange(t *testing.T) {
	tests := []struct {
		name     string
		cfg      AnalyzerConfig
		after    time.Duration // new path from this time on
		wantMin  time.Duration
		newDelay time.Duration
	}{
		// Shorter path: taken at once.
		{"shorter path at once", AnalyzerConfig{}, time.Second, 20 * time.Millisecond, 20 * time.Millisecond},
		// Longer path: the old minimum survives 9 more 3 s buckets…
		{"longer path remembered for 27 s", AnalyzerConfig{}, 27 * time.Second, 30 * time.Millisecond, 80 * time.Millisecond},
		// …and is forgotten once all 10 buckets have rolled.
		{"longer path adopted after 30 s", AnalyzerConfig{}, 31 * time.Second, 80 * time.Millisecond, 80 * time.Millisecond},
		// RFC 6817's one-minute buckets: 10 minutes.
		{"RFC 6817 history remembers for 9 min", AnalyzerConfig{BucketLength: time.Minute}, 9 * time.Minute, 30 * time.Millisecond, 80 * time.Millisecond},
		{"RFC 6817 history adopts after 10 min", AnalyzerConfig{BucketLength: time.Minute}, 11 * time.Minute, 80 * time.Millisecond, 80 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAnalyzer(tc.cfg)
			var now clock.Mono
			a.Add(now, 30*time.Millisecond) // old path, first bucket only
			for now.Sub(0) < tc.after {
				now = now.Add(time.Second)
				a.Add(now, tc.newDelay)
			}
			require.Equal(t, tc.wantMin, a.Min())
		})
	}
}

func TestAnalyzerHistoryIdleGap(t *testing.T) {
	a := NewAnalyzer(AnalyzerConfig{})
	a.Add(0, 30*time.Millisecond)
	// Silent for an hour, then a longer path: the old history is stale.
	now := clock.Mono(0).Add(time.Hour)
	a.Add(now, 80*time.Millisecond)
	require.Equal(t, 80*time.Millisecond, a.Min())
}

func TestAnalyzerMuDecay(t *testing.T) {
	a := NewAnalyzer(AnalyzerConfig{})
	a.Add(0, 10*time.Millisecond) // μ floor = 5/10 = 0.5
	a.ResetMax(0, 4)
	require.InDelta(t, 2, a.Mu(0), 1e-12, "β·OWDv_max")
	tenS := clock.Mono(0).Add(10 * time.Second)
	require.InDelta(t, 4*math.Exp(-1), a.MaxVariation(tenS), 1e-9, "τ = 10 s")
	a.TrackMax(tenS, 3) // larger than the decayed 1.47
	require.InDelta(t, 1.5, a.Mu(tenS), 1e-12)
	a.TrackMax(tenS, 1) // smaller: no change
	require.InDelta(t, 1.5, a.Mu(tenS), 1e-12)
	long := clock.Mono(0).Add(time.Minute)
	require.InDelta(t, 0.5, a.Mu(long), 1e-12, "decays to the floor")
}

func TestAnalyzerJitterRaisesNoiseFloor(t *testing.T) {
	quiet, noisy := NewAnalyzer(AnalyzerConfig{}), NewAnalyzer(AnalyzerConfig{})
	var now clock.Mono
	for i := range 400 {
		now = now.Add(time.Millisecond)
		// A smooth ramp (a queue building) barely moves J …
		quiet.Add(now, 30*time.Millisecond+time.Duration(i)*10*time.Microsecond)
		// … alternating ±4 ms per packet (random delay) does.
		d := 30 * time.Millisecond
		if i%2 == 0 {
			d += 8 * time.Millisecond
		}
		noisy.Add(now, d)
	}
	require.Less(t, quiet.Jitter(), 100*time.Microsecond)
	require.InDelta(t, float64(8*time.Millisecond), float64(noisy.Jitter()), float64(500*time.Microsecond), "RFC 3550 J")
	require.Equal(t, 5*time.Millisecond, quiet.NoiseFloor(), "MuFloorDelay")
	require.InDelta(t, float64(40*time.Millisecond), float64(noisy.NoiseFloor()), float64(3*time.Millisecond), "JitterGain·J")
	// μ's floor follows: 40 ms of noise on a 30 ms base is OWDv 1.33.
	require.InDelta(t, 40.0/30, noisy.Mu(now), 0.1)
	off := NewAnalyzer(AnalyzerConfig{JitterGain: -1})
	off.Add(0, 30*time.Millisecond)
	off.Add(1, 38*time.Millisecond)
	require.Equal(t, 5*time.Millisecond, off.NoiseFloor(), "jitter ignored")
}
