package benchtest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/bench/sim"
)

// The fake is a function of its inputs: the same scenario and options
// give the same run, the seed and the controller change it, and the
// update flow's age follows AgeMs at its rate.
func TestSimIsAFunction(t *testing.T) {
	s := LoadScenario(t)
	a, err := Sim(s, sim.Options{CC: "owd"})
	require.NoError(t, err)
	b, err := Sim(s, sim.Options{CC: "owd"})
	require.NoError(t, err)
	require.Equal(t, a, b)
	require.Equal(t, "owd", a.Flows[0].CC)
	require.Equal(t, "reno", a.Flows[1].CC, "the pinned competitor keeps its controller")
	require.Nil(t, a.Flows[0].Series, "untraced")

	v := *s
	v.Seed = 8
	c, err := Sim(&v, sim.Options{CC: "owd"})
	require.NoError(t, err)
	require.NotEqual(t, a.Flows[0].GoodputBps, c.Flows[0].GoodputBps)

	upd := a.Flows[3]
	require.Equal(t, scenario.KindACP, upd.Kind)
	require.Equal(t, 28.0, *upd.RateHz)
	require.InDelta(t, AgeMs(28, 1.5e6/(1024*8))+SeedAgeMs(7), upd.AgeMs.Mean, 1e-3)

	_, runs := Runs(t, "owd", "cubic")
	require.Len(t, runs, 2)
	require.Equal(t, "cubic", runs[1].CC)
	require.NotNil(t, runs[0].Flows[0].Series, "traced")
	require.Len(t, runs[0].Flows[0].OWDSamples, 3000)
}
