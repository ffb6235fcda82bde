// Package summary summarises a controller's runs of one scenario — over
// paired seeds (bench/seeds) or repeated real-time runs — as mean ± SD of
// each metric: the row "freshbench sim --seeds" and "emu --runs" print
// per controller, and the rows of RESULTS.md's multi-seed sections and
// their baselines. It also says which flows a summary is about (the flows
// under test) and what share of the goodput they got. The JSON names are
// those of the committed baselines (bench/results/*-baseline.json): keep
// them stable.
package summary

import (
	"math"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
)

// MeanSD summarises one metric over the runs of a controller.
type MeanSD struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"` // sample standard deviation (n − 1); 0 for one run
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
}

// Of computes mean, sample SD, min and max of xs.
func Of(xs []float64) MeanSD {
	if len(xs) == 0 {
		return MeanSD{}
	}
	m := MeanSD{N: len(xs), Min: xs[0], Max: xs[0]}
	for _, x := range xs {
		m.Mean += x
		m.Min, m.Max = min(m.Min, x), max(m.Max, x)
	}
	m.Mean /= float64(len(xs))
	if len(xs) > 1 {
		var ss float64
		for _, x := range xs {
			ss += (x - m.Mean) * (x - m.Mean)
		}
		m.SD = math.Sqrt(ss / float64(len(xs)-1))
	}
	// Six decimals: far below any difference worth reporting, and the
	// JSON stays readable (no 0.9970000000000001).
	for _, v := range []*float64{&m.Mean, &m.SD, &m.Min, &m.Max} {
		*v = math.Round(*v*1e6) / 1e6
	}
	return m
}

// Row is one controller's row of the multi-seed table: every metric over
// its runs of one scenario.
type Row struct {
	Scenario string `json:"scenario"`
	CC       string `json:"cc"`
	Runs     int    `json:"runs"`
	// GoodputBps is the flows under test's goodput, summed over them.
	GoodputBps MeanSD `json:"goodput_bps"`
	// Share is their share of the forward bulk goodput (GoodputShare).
	Share MeanSD `json:"share"`
	// Jain is over the forward bulk flows while all are active.
	Jain        MeanSD `json:"jain"`
	Utilization MeanSD `json:"utilization"` // forward
	// QueueP95Ms and OWDP95Ms are the flows under test's p95 queueing
	// delay and one-way delay, the mean over those flows.
	QueueP95Ms MeanSD `json:"queue_p95_ms"`
	OWDP95Ms   MeanSD `json:"owd_p95_ms"`
}

// Pick picks flows of a run, by index into the scenario's flows (the
// order of every run's flows) or by the flow itself.
type Pick func(i int, f report.Flow) bool

// FlowsUnderTest picks, by index into s.Flows, the flows a summary is
// about: the forward bulk flows whose controller --cc replaces (not
// pinned); if every bulk flow is pinned, all forward bulk flows (fresh's,
// beside kernel TCP under emu --tun). Competitors (among) are every
// forward bulk and iperf3 flow: the elastic flows sharing the forward
// bottleneck.
func FlowsUnderTest(s *scenario.Scenario) (test, among Pick) {
	fwdBulk := func(i int) bool {
		return i < len(s.Flows) && s.Flows[i].Kind == scenario.KindBulk && !s.Flows[i].Reverse
	}
	anyUnpinned := false
	for i, f := range s.Flows {
		anyUnpinned = anyUnpinned || (fwdBulk(i) && !f.Pin)
	}
	test = func(i int, _ report.Flow) bool { return fwdBulk(i) && (!anyUnpinned || !s.Flows[i].Pin) }
	among = func(i int, _ report.Flow) bool {
		return fwdBulk(i) || (i < len(s.Flows) && s.Flows[i].Kind == scenario.KindIperf3 && !s.Flows[i].Reverse)
	}
	return test, among
}

// GoodputShare is the share of the goodput that the flows picked by test
// got among the flows picked by among: Σ test / Σ among of each flow's
// goodput over its own active time (report.Flow.GoodputBps). It is the
// "test flow's share" of the fairness section, the kernel-CUBIC share of
// tun.md and the SHARE of the multi-seed table. 0 if among got nothing.
func GoodputShare(r *report.Run, test, among Pick) float64 {
	var t, all float64
	for i, f := range r.Flows {
		if among(i, f) {
			all += f.GoodputBps
			if test(i, f) {
				t += f.GoodputBps
			}
		}
	}
	if all == 0 {
		return 0
	}
	return t / all
}

// ByName picks the flows called name.
func ByName(name string) Pick {
	return func(_ int, f report.Flow) bool { return f.Name == name }
}

// AnyFlow picks every flow.
func AnyFlow(int, report.Flow) bool { return true }

// Runs computes the row of runs, all of scenario s under one controller
// (cc, the row's label).
func Runs(s *scenario.Scenario, cc string, runs []*report.Run) Row {
	test, among := FlowsUnderTest(s)
	var gp, share, jain, util, q95, owd95 []float64
	for _, r := range runs {
		var g, q, o float64
		n := 0
		for i, f := range r.Flows {
			if test(i, f) {
				g += f.GoodputBps
				q += f.QueueMs.P95
				o += f.OWDms.P95
				n++
			}
		}
		if n > 0 {
			q, o = q/float64(n), o/float64(n)
		}
		gp = append(gp, g)
		share = append(share, GoodputShare(r, test, among))
		jain = append(jain, r.Jain)
		util = append(util, r.Utilization.Forward)
		q95 = append(q95, q)
		owd95 = append(owd95, o)
	}
	return Row{
		Scenario: s.Name, CC: cc, Runs: len(runs),
		GoodputBps: Of(gp), Share: Of(share), Jain: Of(jain),
		Utilization: Of(util), QueueP95Ms: Of(q95), OWDP95Ms: Of(owd95),
	}
}
