package summary_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/bench/summary"
)

func TestOf(t *testing.T) {
	m := summary.Of([]float64{4, 1, 3, 2})
	require.Equal(t, 4, m.N)
	require.Equal(t, 2.5, m.Mean)
	require.InDelta(t, math.Sqrt(5.0/3), m.SD, 1e-6, "sample SD: Σ(x−2.5)² = 5 over n−1 = 3 (kept to six decimals)")
	require.Equal(t, 1.0, m.Min)
	require.Equal(t, 4.0, m.Max)
	require.Equal(t, summary.MeanSD{N: 1, Mean: 7, Min: 7, Max: 7}, summary.Of([]float64{7}))
	require.Equal(t, summary.MeanSD{}, summary.Of(nil))
	require.Equal(t, 0.997, summary.Of([]float64{0.9970000000000001}).Mean, "six decimals")
}

// TestRunsHandCase checks every column on two hand-made runs of a
// dumbbell's flows: "bulk" (unpinned, under test), "competitor" (pinned
// bulk), a reverse cbr flow and an update flow, which compete for nothing
// in the share.
func TestRunsHandCase(t *testing.T) {
	s := &scenario.Scenario{Name: "dumbbell-test", Flows: []scenario.Flow{
		{Name: "bulk", Kind: scenario.KindBulk, CC: "cubic"},
		{Name: "competitor", Kind: scenario.KindBulk, CC: "reno", Pin: true},
		{Name: "udp-rev", Kind: scenario.KindCBR, Reverse: true},
		{Name: "updates", Kind: scenario.KindACP},
	}}
	mk := func(test, comp, q95, owd95, jain, util float64) *report.Run {
		return &report.Run{CC: "owd", Jain: jain, Utilization: report.Utilization{Forward: util}, Flows: []report.Flow{
			{Name: "bulk", Kind: "bulk", GoodputBps: test, QueueMs: report.Stats{P95: q95}, OWDms: report.Stats{P95: owd95}},
			{Name: "competitor", Kind: "bulk", GoodputBps: comp, QueueMs: report.Stats{P95: 999}, OWDms: report.Stats{P95: 999}},
			{Name: "udp-rev", Kind: "cbr", GoodputBps: 1e6},
			{Name: "updates", Kind: "acp", GoodputBps: 1e6},
		}}
	}
	sum := summary.Runs(s, "owd", []*report.Run{mk(100e3, 300e3, 10, 60, 0.8, 0.9), mk(300e3, 300e3, 30, 80, 1.0, 1.0)})
	require.Equal(t, "dumbbell-test", sum.Scenario)
	require.Equal(t, "owd", sum.CC)
	require.Equal(t, 2, sum.Runs)
	require.InDelta(t, 200e3, sum.GoodputBps.Mean, 1e-6)
	require.InDelta(t, math.Sqrt(2)*100e3, sum.GoodputBps.SD, 1e-6)
	require.InDelta(t, (0.25+0.5)/2, sum.Share.Mean, 1e-12, "100/(100+300), 300/(300+300)")
	require.Equal(t, 0.25, sum.Share.Min)
	require.Equal(t, 0.5, sum.Share.Max)
	require.InDelta(t, 0.9, sum.Jain.Mean, 1e-12)
	require.InDelta(t, 0.95, sum.Utilization.Mean, 1e-12)
	require.InDelta(t, 20, sum.QueueP95Ms.Mean, 1e-12, "the pinned competitor's queueing is not the test flow's")
	require.InDelta(t, 70, sum.OWDP95Ms.Mean, 1e-12)

	// Every bulk flow pinned, beside kernel TCP (the emu --tun case):
	// fresh's flow is under test, iperf3 competes.
	tun := &scenario.Scenario{Flows: []scenario.Flow{{Name: "owd", Kind: "bulk", Pin: true}, {Name: "kernel-cubic", Kind: "iperf3"}, {Name: "rev", Kind: "iperf3", Reverse: true}}}
	r := &report.Run{Flows: []report.Flow{{Name: "owd", GoodputBps: 0.4e6}, {Name: "kernel-cubic", GoodputBps: 9.6e6}, {Name: "rev", GoodputBps: 5e6}}}
	sum = summary.Runs(tun, "kernel-cubic", []*report.Run{r})
	require.InDelta(t, 0.04, sum.Share.Mean, 1e-12)
	require.InDelta(t, 0.4e6, sum.GoodputBps.Mean, 1e-6)
	test, among := summary.FlowsUnderTest(tun)
	require.Equal(t, summary.GoodputShare(r, summary.ByName("owd"), among), summary.GoodputShare(r, test, among))
	require.InDelta(t, 0.4/15, summary.GoodputShare(r, summary.ByName("owd"), summary.AnyFlow), 1e-12, "among every flow, the reverse one too")
	require.Zero(t, summary.GoodputShare(&report.Run{}, summary.AnyFlow, summary.AnyFlow), "nothing to share")
}
