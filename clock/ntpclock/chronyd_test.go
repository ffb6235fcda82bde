package ntpclock_test

// The NTP clock against a real NTP server: chronyd on a loopback port
// (internal/ntptest), no mock of the NTP library.

import (
	"context"
	"testing"
	"time"

	"github.com/beevik/ntp"
	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/clock/ntpclock"
	"github.com/fresh-udp/fresh/internal/ntptest"
)

// shiftedClock is the system clock with its wall clock off by by.
type shiftedClock struct {
	*clock.System
	by time.Duration
}

func (s shiftedClock) Wall() time.Time { return s.System.Wall().Add(s.by) }

// ntpBound is how far an NTP-corrected clock may be from the true time
// after a sample whose round trip took rtt: chronyd serves this host's
// own clock, so the only error is the path's asymmetry, at most half the
// round trip (RFC 5905 §8: the offset θ is within ±δ/2), plus a
// millisecond for the timestamps' reading. A loaded machine's slow round
// trip widens it; a wrong correction does not fit it.
func ntpBound(rtt time.Duration) time.Duration { return rtt/2 + time.Millisecond }

// requireWallWithin requires c's wall time within bound of the true time,
// reading it between two readings of the system clock, so that the test
// goroutine descheduled between reads widens the window instead of
// failing the check.
func requireWallWithin(t *testing.T, c *ntpclock.Clock, bound time.Duration, msg string) {
	t.Helper()
	before := time.Now()
	w := c.Wall()
	after := time.Now()
	require.False(t, w.Before(before.Add(-bound)) || w.After(after.Add(bound)),
		"%s: wall %v not within %v of [%v, %v]", msg, w, bound, before, after)
}

func TestNTPClockAgainstChronyd(t *testing.T) {
	addr := ntptest.StartChronyd(t, true)
	base := shiftedClock{System: clock.NewSystem(), by: 3 * time.Second}
	c, err := ntpclock.New(base, ntpclock.Config{Server: addr, Timeout: time.Second})
	require.NoError(t, err)

	require.InDelta(t, float64(3*time.Second), float64(time.Until(c.Wall())), float64(50*time.Millisecond),
		"before sync: the shifted base clock")
	require.False(t, c.Synchronized())

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, c.Sync(ctx))

	st := c.Status()
	require.True(t, st.Synchronized)
	require.Equal(t, uint64(1), st.Steps, "the first sync steps")
	require.Equal(t, uint8(8), st.Stratum)
	require.Equal(t, addr, st.Server)
	require.NoError(t, st.Err)
	require.Positive(t, st.RTT)
	require.Less(t, st.RTT, time.Second, "a round trip within the query's Timeout")
	bound := ntpBound(st.RTT)
	require.InDelta(t, float64(-3*time.Second), float64(st.Offset), float64(bound), "round trip %v", st.RTT)
	require.Equal(t, st.LastSync.Add(64*time.Second), st.NextSync)

	requireWallWithin(t, c, bound, "NTP-corrected wall time vs true time")
	before := time.Now()
	w, err := c.SyncedWall()
	require.NoError(t, err)
	require.False(t, w.Before(before.Add(-bound)) || w.After(time.Now().Add(bound)), "SyncedWall %v", w)

	// A re-sync finds only the second sample's error: slewed toward it
	// (500 ppm), so the correction stays between the two samples'.
	require.NoError(t, c.Sync(ctx))
	require.Equal(t, uint64(1), c.Status().Steps)
	require.Equal(t, uint64(2), c.Status().Syncs)
	requireWallWithin(t, c, max(bound, ntpBound(c.Status().RTT)), "after the re-sync")
	t.Logf("after sync: status %+v", c.Status())
}

func TestNTPRunAgainstChronyd(t *testing.T) {
	addr := ntptest.StartChronyd(t, true)
	base := shiftedClock{System: clock.NewSystem(), by: 3 * time.Second}
	c, err := ntpclock.New(base, ntpclock.Config{Server: addr, Timeout: time.Second, Interval: 50 * time.Millisecond})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var rtt time.Duration // the longest round trip seen: the first sample's sets the step
	require.Eventually(t, func() bool {
		st := c.Status()
		rtt = max(rtt, st.RTT)
		return st.Syncs >= 3
	}, 10*time.Second, 10*time.Millisecond, "Run re-syncs every Interval")
	requireWallWithin(t, c, max(10*time.Millisecond, ntpBound(rtt)), "after Run's syncs")

	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(2 * time.Second):
		t.Fatal("Run did not stop on context cancel")
	}
}

func TestNTPRejectsUnsynchronizedChronyd(t *testing.T) {
	// Without "local", chronyd has no reference and says so: stratum 0,
	// leap indicator 3 ("alarm"). Validate rejects it (ntp checks the
	// stratum first and names it a kiss-of-death).
	addr := ntptest.StartChronyd(t, false)
	base := shiftedClock{System: clock.NewSystem(), by: 3 * time.Second}
	c, err := ntpclock.New(base, ntpclock.Config{Server: addr, Timeout: time.Second})
	require.NoError(t, err)

	err = c.Sync(context.Background())
	require.ErrorIs(t, err, ntpclock.ErrInvalidResponse)
	require.ErrorIs(t, err, ntp.ErrKissOfDeath)
	st := c.Status()
	require.False(t, st.Synchronized)
	require.Equal(t, uint64(0), st.Syncs)
	require.ErrorIs(t, st.Err, ntpclock.ErrInvalidResponse)
	require.InDelta(t, float64(16*time.Second), float64(st.NextSync.Sub(c.Now())), float64(time.Second),
		"a failure retries after RetryInterval")
	require.InDelta(t, float64(3*time.Second), float64(time.Until(c.Wall())), float64(50*time.Millisecond),
		"a rejected answer changes nothing")
}
