package owd

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The fair-share term's rules, one row each: SRTT 100 ms, a bottleneck
// packet time of 1 ms (a flow alone fills the link with 100 packets).
func TestFairShareExtra(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name   string
		window float64 // packets
		edit   func(c *Controller)
		want   time.Duration
	}{
		{"alone at the link's rate: nothing", 100, nil, 0},
		{"above the link's rate: nothing", 150, nil, 0},
		{"half the link: one more packet time", 50, nil, 1 * ms},
		{"a third of it: two more", 100.0 / 3, nil, 2 * ms},
		{"a tenth: capped at half MuFloorDelay", 10, nil, 2500 * time.Microsecond},
		{"while Copa's test counts a standing queue: nothing", 20, func(c *Controller) { c.comp.empty.full = 1 }, 0},
		{"no packet time yet: nothing", 20, func(c *Controller) { c.disp.nCur = 0 }, 0},
		{"turned off: nothing", 20, func(c *Controller) { c.cfg.Tuning.DisableFairShare = true }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(mustNew(New(Config{MSS: mss})))
			h.ackN(4, 50*ms, 100*ms)
			c := h.c
			c.disp.cur, c.disp.nCur = ms, dispersionPairs
			c.cwnd = tc.window * mss
			if tc.edit != nil {
				tc.edit(c)
			}
			require.InDelta(t, float64(tc.want), float64(c.fairShareExtra()), float64(10*time.Microsecond))
		})
	}
}

// μ carries the term in OWDv units (relative to the floored base), so the
// rule holds that much more queue; and Copa's test counts it as the flow's
// own (observeEmptiness reads targets().fair).
func TestFairShareRaisesMu(t *testing.T) {
	ms := time.Millisecond
	h := newHarness(mustNew(New(Config{MSS: mss})))
	h.toAvoidance()
	c := h.c
	c.disp.cur, c.disp.nCur = ms, dispersionPairs
	c.cwnd = 5 * mss // far under the link's rate: the term is at its cap
	on := c.targets(h.now)
	c.cfg.Tuning.DisableFairShare = true
	off := c.targets(h.now)
	require.Equal(t, 2500*time.Microsecond, on.fair)
	require.Zero(t, off.fair)
	require.InDelta(t, 2.5/50, on.mu-off.mu, 1e-9, "2.5 ms over a 50 ms base")
}
