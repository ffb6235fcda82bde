package transport

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock"
)

// wait reports whether w fires within limit, and which of its timers did.
func (w *wakeTimer) wait(limit time.Duration) (fired, near bool) {
	select {
	case <-w.nearC():
		w.fired(true)
		return true, true
	case <-w.farC():
		w.fired(false)
		return true, false
	case <-time.After(limit):
		return false, false
	}
}

// The driver's deadline fires on the timer its distance picks (a Go
// timer when near, the system's when far), after it moved earlier or
// later, and never once disarmed or moved away. (Only lower bounds on
// time are checked: a loaded machine fires timers late, never early.)
func TestWakeTimer(t *testing.T) {
	clk := clock.NewSystem()
	var w wakeTimer
	defer w.close()
	fired, _ := w.wait(50 * time.Millisecond)
	require.False(t, fired, "nothing armed")

	// Near: the Go timer.
	now := clk.Now()
	w.set(now.Add(5*time.Millisecond), now)
	fired, near := w.wait(5 * time.Second)
	require.True(t, fired)
	require.True(t, near)

	// Far, then moved a minute later: it must not fire at the first time.
	now = clk.Now()
	w.set(now.Add(farDeadline+20*time.Millisecond), now)
	w.set(now.Add(time.Minute), clk.Now())
	fired, _ = w.wait(farDeadline + 200*time.Millisecond)
	require.False(t, fired, "the deadline moved away fired")

	// Far, moved earlier (still far): fires, on the far timer.
	now = clk.Now()
	w.set(now.Add(farDeadline+10*time.Millisecond), now)
	start := time.Now()
	fired, near = w.wait(5 * time.Second)
	require.True(t, fired)
	require.False(t, near)
	require.GreaterOrEqual(t, time.Since(start), farDeadline, "not before its time")

	// Far, then near: the near one fires first.
	now = clk.Now()
	w.set(now.Add(time.Minute), now)
	w.set(now.Add(5*time.Millisecond), now)
	fired, near = w.wait(5 * time.Second)
	require.True(t, fired)
	require.True(t, near)

	// Disarmed: nothing fires, near or far.
	now = clk.Now()
	w.set(now.Add(5*time.Millisecond), now)
	w.set(0, now)
	w.set(now.Add(farDeadline+5*time.Millisecond), clk.Now())
	w.set(0, clk.Now())
	fired, _ = w.wait(farDeadline + 200*time.Millisecond)
	require.False(t, fired)
}
