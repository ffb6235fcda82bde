package resultsmd

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/summary"
)

// untunedFixture is a row of every scenario under every controller, owd's
// as good as given and the others' fixed, and a baseline of owd's rows as
// bad as given.
func untunedFixture(owdQueue, owdShare, owdUtil, competitiveS float64) *untunedTables {
	u := &untunedTables{before: map[string]untunedRow{}, now: map[string]untunedRow{}}
	row := func(name, cc string, queue, share, util, comp float64) untunedRow {
		one := func(v float64) summary.MeanSD { return summary.MeanSD{N: 10, Mean: v, Min: v, Max: v} }
		return untunedRow{
			Row: summary.Row{Scenario: name, CC: cc, Runs: 10, GoodputBps: one(util * 10e6), Share: one(share),
				Jain: one(0.99), Utilization: one(util), QueueP95Ms: one(queue), OWDP95Ms: one(queue + 20)},
			ModeS: map[string]summary.MeanSD{ModeCompetitive: one(comp)},
		}
	}
	for _, name := range append(untunedAlone(), untunedOthers...) {
		u.now[name+"/owd"] = row(name, "owd", owdQueue, owdShare, owdUtil, competitiveS)
		u.now[name+"/cubic"] = row(name, "cubic", 200, 0.25, 0.99, 0)
		u.now[name+"/bbr"] = row(name, "bbr", 50, 0.3, 0.95, 0)
		u.before[name+"/owd"] = row(name, "owd", 150, 0.05, 0.5, 30)
	}
	return u
}

// Each target's row says met or missed as the rows say; "before" is the
// baseline's, "-" without one; every scenario has its row.
func TestUntunedSection(t *testing.T) {
	c := New(Config{})
	c.writeUntuned(untunedFixture(10, 0.3, 0.9, 0))
	md := string(c.Markdown())
	require.Contains(t, md, "## Controllers on paths nobody tuned for\n\n<!-- untuned-prose -->")
	require.Contains(t, md, "the rate walk: seconds in competitive mode, worst seed | 0 | 30.0 s | 0.0 s | **met** |")
	require.Contains(t, md, "p95 queueing against CUBIC's 200 ms | ≤ 0.25× | 0.75× | 0.05× | **met** |")
	require.Contains(t, md, "throughput ≥ 0.9× BBR's | on ≥ 6 of 8 | 0 of 8 | 8 of 8 | **met** |")
	require.Contains(t, md, "p95 one-way delay ≤ 0.3× CUBIC's | on all 8 | 0 of 8 | 8 of 8 | **met** |")
	require.Contains(t, md, "| latecomer into a 10×BDP FIFO two CUBIC flows fill: owd's share (CUBIC in its slot: 25.0 %) | ≥ 20 % | 5.0 (5.0–5.0) | 30.0 (30.0–30.0) | **met** |")
	require.Contains(t, md, "| 90 / 90 / 90 %, largest step down 0 points | **met** |")
	require.Contains(t, md, "utilisation (BBR: 95.0 %) | ≥ 50 % | 50.0 (50.0–50.0) | 90.0 (90.0–90.0) | **met** |")
	require.Contains(t, md, "Jain's index, worst seed | ≥ 0.95 | 0.990 | 0.990 | **met** |")
	require.Equal(t, 10, strings.Count(md, "**met**"), "every target met")
	for _, name := range append(untunedAlone(), untunedOthers...) {
		require.Contains(t, md, "\n| "+name+" | ", name)
	}

	// owd worse than before, and no baseline.
	c = New(Config{})
	u := untunedFixture(150, 0.05, 0.4, 30)
	u.before = map[string]untunedRow{}
	c.writeUntuned(u)
	md = string(c.Markdown())
	require.Contains(t, md, "| 0 | - | 30.0 s | **missed** |")
	require.Contains(t, md, "| ≥ 20 % | - | 5.0 (5.0–5.0) | **missed** |")
	require.Equal(t, 1, strings.Count(md, "**met**"), "every target missed but four flows' Jain, which the fixture keeps")
}
