package loglimit

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock"
)

// A window logs Burst lines; the first line of the next window says how
// many were not logged, and the count starts again after it.
func TestLimiterWindow(t *testing.T) {
	var l Limiter
	now := clock.Mono(0)
	for range Burst {
		ok, n := l.Allow(now)
		require.True(t, ok)
		require.Zero(t, n)
	}
	for range 5 {
		ok, _ := l.Allow(now.Add(Window / 2))
		require.False(t, ok, "over the burst within the window")
	}
	ok, n := l.Allow(now.Add(Window))
	require.True(t, ok)
	require.EqualValues(t, 5, n)
	ok, n = l.Allow(now.Add(Window))
	require.True(t, ok)
	require.Zero(t, n, "counted once")
}
