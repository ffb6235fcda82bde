package sim

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The cellular trace scenarios in the simulator: a random start per seed,
// delay-based owd below loss-based CUBIC's delay on the same window, and
// CoDel cutting CUBIC's queue on the same trace.
func TestTraceScenarios(t *testing.T) {
	fifo := load(t, "trace-tmobile-lte-short-up-fifo", 20*time.Second)
	codel := load(t, "trace-tmobile-lte-short-up-codel", 20*time.Second)
	owd, cubic := flowNamed(t, run(t, fifo, "owd"), "bulk"), flowNamed(t, run(t, fifo, "cubic"), "bulk")
	t.Logf("fifo: owd %.2f Mbit/s p95 %.1f ms; cubic %.2f Mbit/s p95 %.1f ms", owd.GoodputBps/1e6, owd.OWDms.P95, cubic.GoodputBps/1e6, cubic.OWDms.P95)
	require.Less(t, owd.OWDms.P95, cubic.OWDms.P95, "owd queues less than CUBIC on the same trace window")
	require.Greater(t, owd.OWDms.P50, 20.0, "the 20 ms of propagation are in every delay")
	cubicCoDel := flowNamed(t, run(t, codel, "cubic"), "bulk")
	require.Less(t, cubicCoDel.QueueMs.P95, 0.75*cubic.QueueMs.P95, "CoDel keeps CUBIC's queue shorter")

	// The seed draws the trace's start: the same seed replays the same
	// window, another seed another one.
	a, err := json.Marshal(run(t, fifo, "cubic"))
	require.NoError(t, err)
	b, err := json.Marshal(run(t, fifo, "cubic"))
	require.NoError(t, err)
	require.Equal(t, string(a), string(b))
	fifo.Seed = 2
	c, err := json.Marshal(run(t, fifo, "cubic"))
	require.NoError(t, err)
	require.NotEqual(t, string(a), string(c))
}

// A buffer-filling flow saturates a trace link: its utilisation (the
// share of the opportunities' bytes that carried data) is near 100 %,
// while a delay-based flow leaves some of it.
func TestTraceUtilisation(t *testing.T) {
	s := load(t, "trace-tmobile-umts-driving-down-fifo", 30*time.Second)
	cubic := run(t, s, "cubic")
	require.Greater(t, cubic.Utilization.Forward, 0.95)
	require.LessOrEqual(t, cubic.Utilization.Forward, 1.0)
	owd := run(t, s, "owd")
	require.Less(t, owd.Utilization.Forward, cubic.Utilization.Forward)
}

// The synthetic variable-capacity scenarios run, and a step down from 4 to
// 1 Mbit/s costs CUBIC (a 60-packet FIFO, filled) more delay than owd.
func TestAloneScenarios(t *testing.T) {
	for _, name := range []string{"alone-step-4to1", "alone-flap-4-1", "alone-lte-like"} {
		t.Run(name, func(t *testing.T) {
			s := load(t, name, 30*time.Second)
			owd, cubic := flowNamed(t, run(t, s, "owd"), "bulk"), flowNamed(t, run(t, s, "cubic"), "bulk")
			require.Positive(t, owd.GoodputBps)
			require.Less(t, owd.OWDms.P95, cubic.OWDms.P95)
		})
	}
}
