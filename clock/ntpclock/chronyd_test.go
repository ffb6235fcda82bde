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
	require.InDelta(t, float64(-3*time.Second), float64(st.Offset), float64(10*time.Millisecond))
	require.Less(t, st.RTT, 10*time.Millisecond)
	require.Equal(t, st.LastSync.Add(64*time.Second), st.NextSync)

	diff := c.Wall().Sub(time.Now())
	require.Less(t, diff.Abs(), 10*time.Millisecond, "NTP-corrected wall time vs true time")
	w, err := c.SyncedWall()
	require.NoError(t, err)
	require.Less(t, time.Since(w).Abs(), 10*time.Millisecond)

	// A re-sync finds only µs of error: slewed, still within 10 ms.
	require.NoError(t, c.Sync(ctx))
	require.Equal(t, uint64(1), c.Status().Steps)
	require.Equal(t, uint64(2), c.Status().Syncs)
	require.Less(t, c.Wall().Sub(time.Now()).Abs(), 10*time.Millisecond)
	t.Logf("after sync: wall − true = %v; status %+v", diff, c.Status())
}

func TestNTPRunAgainstChronyd(t *testing.T) {
	addr := ntptest.StartChronyd(t, true)
	base := shiftedClock{System: clock.NewSystem(), by: 3 * time.Second}
	c, err := ntpclock.New(base, ntpclock.Config{Server: addr, Timeout: time.Second, Interval: 50 * time.Millisecond})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	require.Eventually(t, func() bool { return c.Status().Syncs >= 3 }, 5*time.Second, 10*time.Millisecond,
		"Run re-syncs every Interval")
	require.Less(t, c.Wall().Sub(time.Now()).Abs(), 10*time.Millisecond)

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
