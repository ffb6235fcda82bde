package clock

import (
	"math"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// The history is 16 bytes a window (a monitor keeps one per source).
func TestInbandWindowIs16Bytes(t *testing.T) {
	require.Equal(t, uintptr(16), unsafe.Sizeof(inbandWindow{}))
	_, err := NewInband(InbandConfig{Window: MaxInbandWindow + time.Microsecond})
	require.ErrorIs(t, err, ErrInvalidConfig)
	_, err = NewInband(InbandConfig{Window: MaxInbandWindow, Windows: 4, MinWindows: 2})
	require.NoError(t, err)
}

// The history keeps delays as int32 µs relative to a per-direction base:
// clocks any distance apart (a device whose clock reads 1970, or one far
// ahead) give the same accuracy as the acceptance test, and so does a
// clock step of hours.
func TestInbandHugeOffsets(t *testing.T) {
	since1970 := time.Duration(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	cfg := historyConfigs["transport 500ms x 120"]
	for _, off := range []time.Duration{-since1970 + time.Hour, since1970, 500 * time.Millisecond} {
		for seed := uint64(1); seed <= 3; seed++ {
			h := newTwoHosts(seed, off, 100, jittery, jittery)
			e, err := NewInband(cfg)
			require.NoError(t, err)
			errs, last := runInband(t, e, h, 60*time.Second, 1)
			require.Greater(t, len(errs), 90)
			require.Less(t, maxAbs(errs), time.Millisecond, "offset %v seed %d", off, seed)
			thetaErr := e.Offset(last.t1) - h.trueTheta(last.at)
			require.Less(t, max(thetaErr, -thetaErr), time.Millisecond, "offset %v seed %d", off, seed)
			require.InDelta(t, 100, e.SkewPPM(), 5)
			require.Zero(t, e.Status().Dropped)

			// A step of 2 h (beyond the ±35 min an int32 of µs spans) is
			// detected and relearned like any other.
			h.offset -= 2 * time.Hour
			errs = feedFrom(t, e, h, 60*time.Second, 6*time.Second)
			require.Equal(t, uint64(1), e.Steps())
			require.Greater(t, len(errs), 90, "synced again for the last second")
			require.Less(t, maxAbs(errs), time.Millisecond)
		}
	}
}

// Skew drift over a long-lived flow moves a direction's apparent delays
// further than an int32 of µs spans (900 ppm for 30 days: 39 min): the
// base follows and nothing is lost.
func TestInbandRebasesOverLongDrift(t *testing.T) {
	quiet := simPath{Base: 20 * time.Millisecond}
	h := newTwoHosts(1, 0, 900, quiet, quiet)
	e, err := NewInband(InbandConfig{Window: time.Hour, Windows: 64, MinWindows: 8})
	require.NoError(t, err)
	var first int64
	for i := range 30 * 24 {
		x := h.packet(h.start + int64(i)*int64(time.Hour))
		require.NoError(t, e.AddExchange(x.t1, x.t2, x.t3, x.t4))
		if i == 0 {
			first = e.base[fwd]
		}
		if i > 8 {
			owd, ok := e.OWD(x.t1, x.t2)
			require.True(t, ok, "hour %d", i)
			require.InDelta(t, float64(x.owd), float64(owd), float64(time.Millisecond), "hour %d", i)
		}
	}
	drift := h.trueTheta(h.start + 30*24*int64(time.Hour))
	require.Greater(t, drift.Microseconds(), int64(math.MaxInt32), "the test drifts beyond int32")
	require.NotEqual(t, first, e.base[fwd], "the forward base moved")
	require.NotEqual(t, int64(0), e.base[rev])
	require.Zero(t, e.Status().Dropped)
	require.Zero(t, e.Steps())
	require.InDelta(t, 900, e.SkewPPM(), 1)
}

// One sample whose delay no base can hold with the history's (hours away)
// is dropped; the history stays.
func TestInbandFarSampleDropped(t *testing.T) {
	h := newTwoHosts(2, 500*time.Millisecond, 100, jittery, jittery)
	e, err := NewInband(InbandConfig{Window: 250 * time.Millisecond, Windows: 240, MinWindows: 8})
	require.NoError(t, err)
	_, last := runInband(t, e, h, 20*time.Second, 1)
	before := e.Status()
	require.True(t, before.Synced)
	e.AddForward(last.t1+1000, last.t2+1000+Stamp(3*time.Hour/time.Microsecond))
	after := e.Status()
	require.Equal(t, before.Dropped+1, after.Dropped)
	require.Equal(t, before.Samples, after.Samples)
	require.True(t, after.Synced)
	require.Equal(t, before.ForwardWindows, after.ForwardWindows)
	require.Equal(t, before.Offset, after.Offset)
}
