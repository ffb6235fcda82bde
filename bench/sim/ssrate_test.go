package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/owd"
)

// owdDelayExit is owd whose slow start ends on queueing delay alone, the
// ablation of Tuning.DisableRateCorroboratedExit.
const owdDelayExit = "owd-test-delay-exit"

func init() { registerOWD(owdDelayExit, owd.Tuning{DisableRateCorroboratedExit: true}) }

// longFatPath is one bulk flow on 40 Mbit/s, 80 ms each way, with a
// 2-BDP FIFO, and jitter of up to jitter per packet on the forward path,
// order kept (netem's model: a late packet holds back those behind it).
func longFatPath(t *testing.T, jitter time.Duration) *scenario.Scenario {
	s := load(t, "jitter-10mbps-20ms", 30*time.Second)
	rate := scenario.Rate(40e6)
	for _, l := range []*scenario.Path{&s.Forward, &s.Reverse} {
		l.Rate, l.Delay, l.Queue.Limit = rate, scenario.Duration(80*time.Millisecond), 1100
	}
	s.Forward.Jitter, s.Reverse.Jitter = scenario.Duration(jitter), 0
	return s
}

// On a long, fast path whose jitter grows with the packet rate (order
// kept), the delay rises in slow start as if a queue formed while the
// delivery rate still doubles each round trip: the rate-corroborated exit
// lets slow start go on and the flow reaches the link, where the delay
// exit alone leaves it at a fraction of the bandwidth-delay product,
// regrowing a packet per round trip. Without jitter the link does not
// batch, the rule stays out of the way, and the two are the same flow.
func TestRateCorroboratedSlowStartExit(t *testing.T) {
	gained := 0
	for seed := int64(1); seed <= 5; seed++ {
		s := longFatPath(t, 15*time.Millisecond)
		s.Seed = seed
		with := flowNamed(t, run(t, s, "owd"), "bulk").GoodputBps
		without := flowNamed(t, run(t, s, owdDelayExit), "bulk").GoodputBps
		t.Logf("seed %d, 15 ms of jitter: goodput %.2f Mbit/s, delay exit alone %.2f", seed, with/1e6, without/1e6)
		require.GreaterOrEqual(t, with, without, "seed %d: never worse", seed)
		if with > 1.5*without {
			gained++
		}

		s = longFatPath(t, 0)
		s.Seed = seed
		a, b := run(t, s, "owd"), run(t, s, owdDelayExit)
		require.Equal(t, flowNamed(t, b, "bulk").GoodputBps, flowNamed(t, a, "bulk").GoodputBps, "no jitter, seed %d: the same flow", seed)
	}
	// A seed whose delay passes the exit threshold in the first round
	// trip, before a round's rate is known, exits as before.
	require.GreaterOrEqual(t, gained, 3, "seeds where slow start went on to the link")
}
