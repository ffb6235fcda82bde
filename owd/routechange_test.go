package owd

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A route change to a longer path: the extra delay looks like a queue, the
// window falls to its floor, and it must grow back once OWDmin has
// followed the new base (the 30 s history), through slow start, not
// hundreds of round trips of congestion avoidance.
func TestControllerFollowsLongerPath(t *testing.T) {
	run := func(t *testing.T, rfc6817 bool) (windowAfter float64, minAfter time.Duration) {
		cfg := Config{MSS: mss}
		if rfc6817 {
			cfg.Tuning.Analyzer.BucketLength = time.Minute
		}
		h := newHarness(mustNew(New(cfg)))
		h.toAvoidance()
		h.ackN(2000, 50*time.Millisecond, 100*time.Millisecond) // 2 s at the old base
		before := h.cwndPackets()
		// +100 ms each way from now on: 32 s of ACKs, one per ms.
		h.ackN(32000, 150*time.Millisecond, 300*time.Millisecond)
		return h.cwndPackets() / before, h.c.owdA.Min()
	}
	grown, base := run(t, false)
	t.Logf("default history: OWDmin %v, window ×%.1f of before", base, grown)
	require.Equal(t, 150*time.Millisecond, base, "OWDmin followed the longer path")
	require.Greater(t, grown, 4.0, "the window grew back, past the old path's (the BDP tripled)")

	// The fault this defends against: with RFC 6817's 10-minute history
	// the old base stays and the window sits at its floor.
	starved, old := run(t, true)
	t.Logf("RFC 6817 history: OWDmin %v, window ×%.2f of before", old, starved)
	require.Equal(t, 50*time.Millisecond, old)
	require.Less(t, starved, 0.5)
}
