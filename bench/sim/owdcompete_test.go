package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/owd"
)

// owdCubicOnly is owd whose competitive mode is CUBIC alone, the
// ablation of Tuning.DisableCompetitiveBBR.
const owdCubicOnly = "owd-test-cubic-only"

func init() { registerOWD(owdCubicOnly, owd.Tuning{DisableCompetitiveBBR: true}) }

// registerOWD registers owd with tuning under name, for a test's ablation.
func registerOWD(name string, tuning owd.Tuning) {
	cc.Register(name, func(mss cc.ByteCount) cc.Controller {
		c, err := owd.New(owd.Config{MSS: mss, Tuning: tuning})
		if err != nil {
			panic(err)
		}
		return c
	})
}

// besideOneBBR is one BBR flow on 10 Mbit/s, 40 ms, in a FIFO of limit
// 1 400-byte packets (36 is one BDP), and the flow under test 2 s later.
func besideOneBBR(t *testing.T, limit int, d time.Duration) *scenario.Scenario {
	s := load(t, "bbr-10mbps-40ms-deep", d)
	s.Forward.Queue.Limit = limit
	s.Reverse.Queue.Limit = limit
	s.Flows = []scenario.Flow{
		{Name: "bbr", Kind: "bulk", CC: "bbr", Pin: true},
		{Name: "under-test", Kind: "bulk", CC: "owd", Start: scenario.Duration(2 * time.Second)},
	}
	return s
}

// Beside BBR in a one-BDP FIFO, a CUBIC window loses most of the link:
// BBR's rate does not answer the losses it causes, CUBIC's window does.
// owd's competitive mode runs BBR beside CUBIC and takes the larger
// window, so it holds about what BBR in its place holds; with CUBIC alone
// it gets a fraction of that. The same seeds for all three.
func TestOWDCompetitiveBesideBBRInAShallowBuffer(t *testing.T) {
	shares := meanShares(t, func() *scenario.Scenario { return besideOneBBR(t, 36, 30*time.Second) }, "owd", owdCubicOnly, "bbr")
	o, cubicOnly, bbr := shares[0], shares[1], shares[2]
	t.Logf("share beside BBR, 1-BDP FIFO: owd %.3f, owd with CUBIC alone %.3f, BBR in its place %.3f", o, cubicOnly, bbr)
	require.Greater(t, o, 1.5*cubicOnly)
	require.Greater(t, o, 0.6*bbr)
}

// In a deep FIFO beside CUBIC the larger window takes no more than a
// fair share: BBR's window is capped at twice its bandwidth-delay
// estimate, and CUBIC's fills the buffer as the other CUBIC flow's does.
// (BBR's half helps here too: its startup reaches the share within a few
// round trips of the switch, where a new CUBIC flow's growth after its
// first loss takes many of this buffer's long round trips.)
func TestOWDCompetitiveBesideCubicInADeepBuffer(t *testing.T) {
	shares := meanShares(t, func() *scenario.Scenario { return besideOneCubic(t, 30*time.Second) }, "owd", owdCubicOnly, "cubic")
	o, cubicOnly, cubic := shares[0], shares[1], shares[2]
	t.Logf("share beside CUBIC, 10-BDP FIFO: owd %.3f, owd with CUBIC alone %.3f, CUBIC in its place %.3f", o, cubicOnly, cubic)
	require.GreaterOrEqual(t, o, 0.9*cubicOnly)
	require.Less(t, o, 0.55, "no more than a fair share and a margin")
}

// meanShares runs the scenario mk makes under each controller of ccs on
// seeds 1–3 and returns, per controller, the mean goodput share of the
// flow "under-test".
func meanShares(t *testing.T, mk func() *scenario.Scenario, ccs ...string) []float64 {
	const seeds = 3
	shares := make([]float64, len(ccs))
	for seed := int64(1); seed <= seeds; seed++ {
		s := mk()
		s.Seed = seed
		for i, name := range ccs {
			shares[i] += goodputShare(t, run(t, s, name), "under-test") / seeds
		}
	}
	return shares
}
