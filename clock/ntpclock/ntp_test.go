package ntpclock

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/fresh-udp/fresh/clock"

	"github.com/beevik/ntp"
	"github.com/stretchr/testify/require"
)

// ---- pure State / Clock tests (no network) ----

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newState(t *testing.T, cfg Config) *State {
	t.Helper()
	s, err := NewState(cfg, 0)
	require.NoError(t, err)
	return s
}

func TestNTPConfigDefaults(t *testing.T) {
	s := newState(t, Config{})
	cfg := s.Config()
	cfg.Logger = nil
	require.Equal(t, Config{
		Server: "pool.ntp.org", Port: 123, Timeout: 5 * time.Second,
		Interval: 64 * time.Second, RetryInterval: 16 * time.Second, MaxAge: 256 * time.Second,
		StepThreshold: 128 * time.Millisecond, MaxSlewPPM: 500, PanicThreshold: 1000 * time.Second,
	}, cfg)

	for _, bad := range []Config{
		{Port: -1}, {Port: 70000}, {Timeout: -1}, {Interval: -time.Second},
		{RetryInterval: -1}, {MaxAge: -1}, {MaxSlewPPM: -1}, {MaxSlewPPM: 1e6},
	} {
		_, err := NewState(bad, 0)
		require.ErrorIs(t, err, ErrInvalidConfig, "%+v", bad)
	}
}

func TestNTPAddress(t *testing.T) {
	for in, want := range map[string]string{
		"time.example":      "time.example:123",
		"time.example:1234": "time.example:1234",
		"127.0.0.1":         "127.0.0.1:123",
		"::1":               "[::1]:123",
		"[::1]":             "[::1]:123",
		"[::1]:5":           "[::1]:5",
	} {
		cfg, err := Config{Server: in}.withDefaults()
		require.NoError(t, err)
		require.Equal(t, want, cfg.address(), in)
	}
}

func TestNTPFirstSyncSteps(t *testing.T) {
	s := newState(t, Config{})
	require.False(t, s.Synchronized(0))
	require.True(t, s.Due(0), "a new state wants a sync at once")
	require.Equal(t, time.Duration(0), s.Correction(0))

	// Even a small first offset is stepped: there is nothing to slew from.
	now := clock.Mono(time.Second)
	require.Equal(t, Stepped, s.Observe(now, Sample{Offset: 40 * time.Millisecond}))
	require.Equal(t, 40*time.Millisecond, s.Correction(now))
	require.True(t, s.Synchronized(now))
	require.Equal(t, now.Add(64*time.Second), s.NextSync())
	require.False(t, s.Due(now.Add(63*time.Second)))
	require.True(t, s.Due(now.Add(64*time.Second)))
}

func TestNTPSlewBoundedRate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		delta time.Duration // second sample − first
		ppm   float64
	}{
		{"up 100ms at 500ppm", 100 * time.Millisecond, 500},
		{"down 100ms at 500ppm", -100 * time.Millisecond, 500},
		{"up 10ms at 50ppm", 10 * time.Millisecond, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newState(t, Config{MaxSlewPPM: tc.ppm})
			first := 3 * time.Second
			s.Observe(0, Sample{Offset: first})
			start := clock.Mono(10 * time.Second)
			require.Equal(t, Slewed, s.Observe(start, Sample{Offset: first + tc.delta}))
			require.Equal(t, first, s.Correction(start), "a slew starts where the correction was")
			require.True(t, s.Status(start).Slewing)

			rate := tc.ppm / 1e6
			full := time.Duration(float64(tc.delta.Abs()) / rate) // time to finish the slew
			prev := s.Correction(start)
			for el := time.Duration(0); el <= full+10*time.Second; el += 250 * time.Millisecond {
				c := s.Correction(start.Add(el))
				// Never faster than MaxSlewPPM, never past the target.
				step := (c - prev).Abs()
				require.LessOrEqual(t, float64(step), float64(250*time.Millisecond)*rate+1, "at %v", el)
				require.LessOrEqual(t, (c - first).Abs(), tc.delta.Abs())
				// Exactly the bounded rate while slewing.
				want := time.Duration(float64(el) * rate)
				if want > tc.delta.Abs() {
					want = tc.delta.Abs()
				}
				if tc.delta < 0 {
					want = -want
				}
				require.InDelta(t, float64(first+want), float64(c), 1, "at %v", el)
				prev = c
			}
			end := start.Add(full + time.Second)
			require.Equal(t, first+tc.delta, s.Correction(end))
			require.False(t, s.Status(end).Slewing)
		})
	}
}

func TestNTPStepAboveThreshold(t *testing.T) {
	s := newState(t, Config{})
	s.Observe(0, Sample{Offset: 0})
	require.Equal(t, Slewed, s.Observe(clock.Mono(time.Second), Sample{Offset: 128 * time.Millisecond}), "at the threshold: slew")
	// Midway through that slew, a sample 200 ms from the current correction
	// is stepped.
	now := clock.Mono(2 * time.Second)
	cur := s.Correction(now)
	require.Equal(t, 500*time.Microsecond, cur)
	require.Equal(t, Stepped, s.Observe(now, Sample{Offset: cur - 200*time.Millisecond}))
	require.Equal(t, cur-200*time.Millisecond, s.Correction(now))
	st := s.Status(now)
	require.Equal(t, uint64(3), st.Syncs)
	require.Equal(t, uint64(2), st.Steps)
	require.False(t, st.Slewing)

	// A negative threshold never steps after the first sync.
	s = newState(t, Config{StepThreshold: -1})
	require.Equal(t, Stepped, s.Observe(0, Sample{Offset: time.Second}))
	require.Equal(t, Slewed, s.Observe(clock.Mono(time.Second), Sample{Offset: -time.Hour}))
	require.Equal(t, time.Second-500*time.Microsecond, s.Correction(clock.Mono(2*time.Second)))
}

func TestNTPSynchronizedExpires(t *testing.T) {
	s := newState(t, Config{Interval: 10 * time.Second}) // MaxAge 40 s
	at := clock.Mono(5 * time.Second)
	s.Observe(at, Sample{Offset: time.Millisecond})
	require.True(t, s.Synchronized(at.Add(40*time.Second)))
	require.False(t, s.Synchronized(at.Add(40*time.Second+1)))
	// Holdover: the correction is kept after expiry.
	require.Equal(t, time.Millisecond, s.Correction(at.Add(time.Hour)))

	// A failure schedules a retry, records the error, keeps the correction.
	boom := errors.New("boom")
	fail := at.Add(10 * time.Second)
	s.ObserveError(fail, boom)
	require.Equal(t, fail.Add(16*time.Second), s.NextSync())
	st := s.Status(fail)
	require.ErrorIs(t, st.Err, boom)
	require.True(t, st.Synchronized)
	require.Equal(t, time.Millisecond, st.Correction)
	s.Observe(fail.Add(time.Second), Sample{Offset: time.Millisecond})
	require.NoError(t, s.Status(fail).Err, "a success clears the error")
}

func TestNTPClockManualBase(t *testing.T) {
	base := clock.NewManual(epoch)
	base.WallOffset = 3 * time.Second // a wrong local clock
	c, err := New(base, Config{})
	require.NoError(t, err)
	require.Equal(t, epoch.Add(3*time.Second), c.Wall(), "unsynchronized: the base clock's time")
	_, err = c.SyncedWall()
	require.ErrorIs(t, err, ErrNotSynchronized)

	base.Advance(time.Second)
	require.Equal(t, Stepped, c.Observe(Sample{Offset: -3 * time.Second, Stratum: 2, Server: "x:123"}))
	require.Equal(t, epoch.Add(time.Second), c.Wall())
	w, err := c.SyncedWall()
	require.NoError(t, err)
	require.Equal(t, epoch.Add(time.Second), w)
	require.Equal(t, base.Now(), c.Now(), "monotonic time is the base clock's, untouched")

	// The base clock drifts 2 ms fast; the next sample slews it out.
	base.Advance(64 * time.Second)
	base.WallOffset += 2 * time.Millisecond
	require.Equal(t, Slewed, c.Observe(Sample{Offset: -3*time.Second - 2*time.Millisecond}))
	require.Equal(t, epoch.Add(65*time.Second+2*time.Millisecond), c.Wall(), "slewing: not jumped")
	base.Advance(2 * time.Second)
	require.Equal(t, epoch.Add(67*time.Second+time.Millisecond), c.Wall(), "1 ms slewed out in 2 s")
	base.Advance(2 * time.Second)
	require.Equal(t, epoch.Add(69*time.Second), c.Wall())

	// Expiry, and the last error carried in SyncedWall's error.
	c.ObserveError(errors.New("unreachable"))
	base.Advance(5 * time.Minute)
	require.False(t, c.Synchronized())
	_, err = c.SyncedWall()
	require.ErrorIs(t, err, ErrNotSynchronized)
	require.ErrorContains(t, err, "unreachable")
}

func TestNTPValidateRejectsBadResponses(t *testing.T) {
	now := time.Now()
	good := ntp.Response{
		ClockOffset: 5 * time.Millisecond, RTT: time.Millisecond, Stratum: 2, Version: 4,
		ReferenceTime: now.Add(-time.Minute), Time: now,
	}
	smp, err := sampleFromResponse("s:123", &good)
	require.NoError(t, err)
	require.Equal(t, Sample{Offset: 5 * time.Millisecond, RTT: time.Millisecond, Stratum: 2, Server: "s:123"}, smp)

	for _, tc := range []struct {
		name string
		edit func(*ntp.Response)
		want error
	}{
		{"kiss of death", func(r *ntp.Response) { r.Stratum = 0 }, ntp.ErrKissOfDeath},
		{"unsynchronized server", func(r *ntp.Response) { r.Leap = ntp.LeapNotInSync }, ntp.ErrInvalidLeapSecond},
		{"stale reference", func(r *ntp.Response) { r.ReferenceTime = now.Add(-72 * time.Hour) }, ntp.ErrServerClockFreshness},
		{"root distance", func(r *ntp.Response) { r.RootDispersion = 17 * time.Second }, ntp.ErrInvalidDispersion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := good
			tc.edit(&r)
			_, err := sampleFromResponse("s:123", &r)
			require.ErrorIs(t, err, ErrInvalidResponse)
			require.ErrorIs(t, err, tc.want)
		})
	}
}

// ---- against a real NTP server: chronyd on loopback ----

func TestNTPNoServer(t *testing.T) {
	// A loopback port nobody listens on: the query fails (ICMP port
	// unreachable → connection refused), not as an invalid response.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := pc.LocalAddr().String()
	require.NoError(t, pc.Close())

	c, err := New(clock.NewSystem(), Config{Server: addr, Timeout: time.Second})
	require.NoError(t, err)
	err = c.Sync(context.Background())
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrInvalidResponse)
	require.ErrorContains(t, err, addr)
	require.False(t, c.Synchronized())
	_, err = c.SyncedWall()
	require.ErrorIs(t, err, ErrNotSynchronized)
}

func TestNTPQueryCancelled(t *testing.T) {
	// A server that never answers: cancelling the context must interrupt the
	// wait well before the 5 s timeout.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer pc.Close()

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err = Query(ctx, Config{Server: pc.LocalAddr().String(), Timeout: 5 * time.Second}, nil)
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, time.Since(start), 2*time.Second)

	// Already cancelled, or a deadline already past: no query at all.
	_, err = Query(ctx, Config{Server: pc.LocalAddr().String()}, nil)
	require.ErrorIs(t, err, context.Canceled)
	dctx, dcancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer dcancel()
	_, err = Query(dctx, Config{Server: pc.LocalAddr().String()}, nil)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// Run stops on cancel while waiting for a silent server too.
	c, err := New(clock.NewSystem(), Config{Server: pc.LocalAddr().String(), Timeout: 5 * time.Second})
	require.NoError(t, err)
	rctx, rcancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(rctx) }()
	// Cancel while Run waits for an answer: once the silent server has
	// the query.
	require.NoError(t, pc.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, _, err = pc.ReadFrom(make([]byte, 512))
	require.NoError(t, err, "Run sent no query")
	rcancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(2 * time.Second):
		t.Fatal("Run did not stop on context cancel during a query")
	}
}
