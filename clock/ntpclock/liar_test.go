package ntpclock_test

// The NTP client against servers that misbehave (internal/ntptest's
// liar on loopback): every one must leave the clock unsynchronized with
// the reason in Status().Err, and the correction untouched.

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/beevik/ntp"
	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/clock/ntpclock"
	"github.com/fresh-udp/fresh/internal/ntptest"
)

func TestNTPLyingServers(t *testing.T) {
	for _, tc := range []struct {
		lie     ntptest.Lie
		want    error // errors.Is target
		invalid bool  // wraps ErrInvalidResponse (the server answered)
	}{
		{ntptest.Silent, os.ErrDeadlineExceeded, false},
		{ntptest.Garbage, nil, false},
		{ntptest.KissOfDeath, ntp.ErrKissOfDeath, true},
		{ntptest.Stratum16, ntp.ErrInvalidStratum, true},
		{ntptest.HoursOff, ntpclock.ErrOffsetTooLarge, true},
	} {
		t.Run(tc.lie.String(), func(t *testing.T) {
			t.Parallel()
			addr := ntptest.StartLiar(t, tc.lie)
			c, err := ntpclock.New(clock.NewSystem(), ntpclock.Config{Server: addr, Timeout: 300 * time.Millisecond})
			require.NoError(t, err)
			before := time.Now()
			err = c.Sync(context.Background())
			t.Logf("%s: %v", tc.lie, err)
			require.Error(t, err)
			require.ErrorContains(t, err, addr, "the error names the server")
			if tc.want != nil {
				require.ErrorIs(t, err, tc.want)
			}
			require.Equal(t, tc.invalid, errors.Is(err, ntpclock.ErrInvalidResponse))
			st := c.Status()
			require.False(t, st.Synchronized)
			require.Equal(t, err, st.Err)
			require.Zero(t, st.Correction, "the clock was not touched")
			require.WithinDuration(t, before, c.Wall(), time.Second)
		})
	}
}

// Without the panic threshold the lie is believed: the first sync steps
// the clock by hours (what the default threshold prevents).
func TestNTPHoursOffBelievedWithoutPanicThreshold(t *testing.T) {
	addr := ntptest.StartLiar(t, ntptest.HoursOff)
	c, err := ntpclock.New(clock.NewSystem(), ntpclock.Config{Server: addr, Timeout: time.Second, PanicThreshold: -1})
	require.NoError(t, err)
	require.NoError(t, c.Sync(context.Background()))
	require.True(t, c.Synchronized())
	require.InDelta(t, float64(ntptest.LiarOffset), float64(c.Status().Correction), float64(time.Second))
}
