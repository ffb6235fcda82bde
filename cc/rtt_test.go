package cc

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRTTStatsRFC6298(t *testing.T) {
	var r RTTStats
	require.False(t, r.HasSample())
	r.Update(0) // ignored
	require.False(t, r.HasSample())

	r.Update(100 * time.Millisecond)
	require.Equal(t, 100*time.Millisecond, r.Smoothed(), "§2.2: SRTT = R")
	require.Equal(t, 50*time.Millisecond, r.Var(), "§2.2: RTTVAR = R/2")

	r.Update(200 * time.Millisecond)
	// §2.3: RTTVAR = 3/4·50 + 1/4·|100−200| = 62.5 ms; SRTT = 7/8·100 + 1/8·200 = 112.5 ms.
	require.Equal(t, 62500*time.Microsecond, r.Var())
	require.Equal(t, 112500*time.Microsecond, r.Smoothed())
	require.Equal(t, 100*time.Millisecond, r.Min())
	require.Equal(t, 200*time.Millisecond, r.Latest())

	r.ResetMin()
	require.Equal(t, 200*time.Millisecond, r.Min())
}

func TestWindowLimited(t *testing.T) {
	const mss = 1000
	tests := []struct {
		name          string
		inFlight, win ByteCount
		slowStart     bool
		want          bool
	}{
		{"full window", 10 * mss, 10 * mss, false, true},
		{"within 3 packets", 7 * mss, 10 * mss, false, true},
		{"app-limited in CA", 5 * mss, 20 * mss, false, false},
		{"half window in slow start", 11 * mss, 20 * mss, true, true},
		{"app-limited in slow start", 5 * mss, 20 * mss, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, WindowLimited(tc.inFlight, tc.win, mss, tc.slowStart))
		})
	}
}

func TestPacingRate(t *testing.T) {
	require.Zero(t, PacingRate(10000, 0, false), "no RTT sample: no pacing")
	// 10 000 B per 100 ms = 800 kbit/s; ×1.2 in CA, ×2 in slow start.
	require.Equal(t, Bandwidth(960000), PacingRate(10000, 100*time.Millisecond, false))
	require.Equal(t, Bandwidth(1600000), PacingRate(10000, 100*time.Millisecond, true))
}

func TestRegistryUnknown(t *testing.T) {
	_, err := New("no-such-controller", 0)
	require.ErrorIs(t, err, ErrUnknown)
}
