package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
)

// Paired multi-seed runs: "freshbench sim --seeds LIST" runs every scenario
// under every controller with the same seeds, so a difference between two
// controllers is measured on the same loss and jitter draws (the pairing
// quicly's congestion-control evaluations use), and prints mean ± SD over
// the seeds per controller. "freshbench emu --runs N" repeats each run N
// times with the same seed, because in real time the seed fixes the links
// and not the scheduling.

// maxSeeds bounds a --seeds list: a typo such as 1-100000 should be an
// error, not a night of simulation.
const maxSeeds = 10000

// parseSeedList reads a --seeds list: comma-separated non-negative seeds
// and inclusive ranges, "1-20" or "1,3,7-9". Duplicates are refused:
// counting a seed twice would weight it twice in the mean.
func parseSeedList(prefix, list string) ([]int64, error) {
	bad := func(format string, args ...any) error {
		return usagef("%s: --seeds %q: %s", prefix, list, fmt.Sprintf(format, args...))
	}
	var out []int64
	seen := map[int64]bool{}
	for item := range strings.SplitSeq(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, bad("empty element")
		}
		lo, hi, isRange := strings.Cut(item, "-")
		first, err := strconv.ParseInt(strings.TrimSpace(lo), 10, 64)
		if err != nil || first < 0 {
			return nil, bad("%q is not a seed or a range A-B of non-negative seeds", item)
		}
		last := first
		if isRange {
			last, err = strconv.ParseInt(strings.TrimSpace(hi), 10, 64)
			if err != nil || last < 0 {
				return nil, bad("%q is not a range A-B of non-negative seeds", item)
			}
			if last < first {
				return nil, bad("range %q runs backwards", item)
			}
		}
		if last-first >= maxSeeds || len(out)+int(last-first) >= maxSeeds {
			return nil, bad("more than %d seeds", maxSeeds)
		}
		for seed := first; seed <= last; seed++ {
			if seen[seed] {
				return nil, bad("seed %d given twice", seed)
			}
			seen[seed] = true
			out = append(out, seed)
		}
	}
	return out, nil
}

// meanSD summarises one metric over the runs of a controller.
type meanSD struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"` // sample standard deviation (n − 1); 0 for one run
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
}

// summarize computes mean, sample SD, min and max of xs.
func summarize(xs []float64) meanSD {
	if len(xs) == 0 {
		return meanSD{}
	}
	m := meanSD{N: len(xs), Min: xs[0], Max: xs[0]}
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

// ccSummary is one controller's row of the multi-seed table: every
// metric over its runs of one scenario.
type ccSummary struct {
	Scenario string `json:"scenario"`
	CC       string `json:"cc"`
	Runs     int    `json:"runs"`
	// GoodputBps is the flows under test's goodput, summed over them.
	GoodputBps meanSD `json:"goodput_bps"`
	// Share is their share of the forward bulk goodput (goodputShare).
	Share meanSD `json:"share"`
	// Jain is over the forward bulk flows while all are active.
	Jain        meanSD `json:"jain"`
	Utilization meanSD `json:"utilization"` // forward
	// QueueP95Ms and OWDP95Ms are the flows under test's p95 queueing
	// delay and one-way delay, the mean over those flows.
	QueueP95Ms meanSD `json:"queue_p95_ms"`
	OWDP95Ms   meanSD `json:"owd_p95_ms"`
}

// flowsUnderTest picks, by index into s.Flows (the order of every run's
// flows), the flows a multi-seed summary is about: the forward bulk flows
// whose controller --cc replaces (not pinned); if every bulk flow is
// pinned, all forward bulk flows (fresh's, beside kernel TCP under
// emu --tun). Competitors are every forward bulk and iperf3 flow: the
// elastic flows sharing the forward bottleneck.
func flowsUnderTest(s *scenario.Scenario) (test, among func(int, report.Flow) bool) {
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

// goodputShare is the share of the goodput that the flows picked by test
// got among the flows picked by among: Σ test / Σ among of each flow's
// goodput over its own active time (report.Flow.GoodputBps). It is the
// "test flow's share" of the fairness section, the kernel-CUBIC share of
// tun.md and the SHARE of the multi-seed table. 0 if among got nothing.
func goodputShare(r *report.Run, test, among func(int, report.Flow) bool) float64 {
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

// byName picks the flows called name.
func byName(name string) func(int, report.Flow) bool {
	return func(_ int, f report.Flow) bool { return f.Name == name }
}

// anyFlow picks every flow.
func anyFlow(int, report.Flow) bool { return true }

// summarizeRuns computes the summary row of runs, all of scenario s under
// one controller.
func summarizeRuns(s *scenario.Scenario, cc string, runs []*report.Run) ccSummary {
	test, among := flowsUnderTest(s)
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
		share = append(share, goodputShare(r, test, among))
		jain = append(jain, r.Jain)
		util = append(util, r.Utilization.Forward)
		q95 = append(q95, q)
		owd95 = append(owd95, o)
	}
	return ccSummary{
		Scenario: s.Name, CC: cc, Runs: len(runs),
		GoodputBps: summarize(gp), Share: summarize(share), Jain: summarize(jain),
		Utilization: summarize(util), QueueP95Ms: summarize(q95), OWDP95Ms: summarize(owd95),
	}
}

// writeSummaryTable prints one row per controller: the runs, and mean ± SD
// over them of each metric (plus min and max of the share).
func writeSummaryTable(w io.Writer, sums []ccSummary) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tCC\tRUNS\tGOODPUT\tSHARE\tSHARE min–max\tJAIN\tUTIL fwd\tQUEUE p95 [ms]\tOWD p95 [ms]")
	for _, s := range sums {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Scenario, s.CC, s.Runs,
			formatBitRatePM(s.GoodputBps), formatPercentPM(s.Share),
			fmt.Sprintf("%.1f–%.1f%%", 100*s.Share.Min, 100*s.Share.Max),
			fmt.Sprintf("%.3f ± %.3f", s.Jain.Mean, s.Jain.SD), formatPercentPM(s.Utilization),
			formatMsPM(s.QueueP95Ms), formatMsPM(s.OWDP95Ms))
	}
	fmt.Fprintln(tw)
	return tw.Flush()
}

// formatBitRatePM is "9.02 ± 0.15 Mbit/s": the unit and three significant
// digits from the mean, the SD with as many decimals.
func formatBitRatePM(m meanSD) string {
	unit, div := "bit/s", 1.0
	switch a := math.Abs(m.Mean); {
	case a >= 1e9:
		unit, div = "Gbit/s", 1e9
	case a >= 1e6:
		unit, div = "Mbit/s", 1e6
	case a >= 1e3:
		unit, div = "kbit/s", 1e3
	}
	v := m.Mean / div
	dec := 0
	if a := math.Abs(v); a > 0 && a < 100 {
		dec = 2 - int(math.Floor(math.Log10(a)))
	}
	dec = min(dec, 3)
	return fmt.Sprintf("%.*f ± %.*f %s", dec, v, dec, m.SD/div, unit)
}

func formatPercentPM(m meanSD) string {
	return fmt.Sprintf("%.1f ± %.1f%%", 100*m.Mean, 100*m.SD)
}

func formatMsPM(m meanSD) string { return fmt.Sprintf("%.1f ± %.1f", m.Mean, m.SD) }
