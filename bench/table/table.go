// Package table writes the text tables freshbench prints, in the spirit
// of iperf3's summary: a row per flow and per run (Runs), mean ± SD per
// controller over paired seeds (Summary), and the ACP sweep's oracles
// (Sweep); and formats the numbers of those tables, and of the reports
// and figures that quote them, the same way everywhere: rates with
// decimal prefixes as iperf3 writes them, "-" for what was not measured.
package table

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/summary"
	"github.com/fresh-udp/fresh/bench/sweep"
)

// Runs prints one row per flow of every run, then one row per run with
// Jain's index, the link utilisation and the simulation speed.
func Runs(w io.Writer, runs []*report.Run) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tCC\tFLOW\tKIND\tGOODPUT\tBYTES\tLOST\tRETX\tOWD p50 [ms]\tOWD p95 [ms]\tQUEUE p95 [ms]\tAGE mean [ms]\tAGE p95 [ms]")
	for _, r := range runs {
		for _, f := range r.Flows {
			owd50, owd95, q95 := "-", "-", "-"
			if f.Delivered > 0 || f.Bytes > 0 {
				owd50, owd95, q95 = ms(f.OWDms.P50), ms(f.OWDms.P95), ms(f.QueueMs.P95)
			}
			ageMean, age95 := "-", "-"
			if f.AgeMs != nil {
				ageMean, age95 = ms(f.AgeMs.Mean), ms(f.AgeMs.P95)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n",
				r.Scenario, r.CC, f.Name, f.Kind, BitRate(f.GoodputBps), bytes(f.Bytes),
				f.Lost, f.Retransmitted, owd50, owd95, q95, ageMean, age95)
		}
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "SCENARIO\tCC\tSEED\tJAIN\tUTIL fwd\tUTIL rev\tSPEED")
	for _, r := range runs {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.3f\t%s\t%s\t%s\n", r.Scenario, r.CC, r.Seed, r.Jain,
			percent(r.Utilization.Forward), percent(r.Utilization.Reverse), runSpeed(r))
	}
	fmt.Fprintln(tw)
	return tw.Flush()
}

// Summary prints one row per controller: the runs, and mean ± SD over
// them of each metric (plus min and max of the share).
func Summary(w io.Writer, rows []summary.Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tCC\tRUNS\tGOODPUT\tSHARE\tSHARE min–max\tJAIN\tUTIL fwd\tQUEUE p95 [ms]\tOWD p95 [ms]")
	for _, s := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Scenario, s.CC, s.Runs,
			BitRatePM(s.GoodputBps), percentPM(s.Share),
			fmt.Sprintf("%.1f–%.1f%%", 100*s.Share.Min, 100*s.Share.Max),
			fmt.Sprintf("%.3f ± %.3f", s.Jain.Mean, s.Jain.SD), percentPM(s.Utilization),
			msPM(s.QueueP95Ms), msPM(s.OWDP95Ms))
	}
	fmt.Fprintln(tw)
	return tw.Flush()
}

// Sweep prints the ACP sweep of each scenario: the grid and both oracles
// over the seeds, then one row per policy and oracle with its mean age
// over the seeds, the worst and best seed, their ratio, and the elastic
// flows' cost.
func Sweep(w io.Writer, sums []*sweep.Summary) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tSEEDS\tRATES TRIED\tCAPACITY [Hz]\tNOISE [ms]\tORACLE [Hz]\tORACLE RANGE [Hz]\tCONSTRAINED [Hz]\tCONSTRAINED RANGE [Hz]")
	for _, s := range sums {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%.1f\t%s\t%s\t%s\t%s\n", s.Scenario, len(s.Seeds), len(s.Points),
			Float(s.CapacityHz), s.NoiseMs, Float(s.OracleRateHz), Range(s.OracleRange),
			Float(s.ConstrainedRateHz), Range(s.ConstrainedRange))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "SCENARIO\tPOLICY\tAGE mean [ms]\tworst\tbest\tmax/min\tCOST mean\tworst\tworst / CONSTRAINED\tworst / ORACLE\tworst / LAZY")
	for _, s := range sums {
		for _, row := range []struct {
			name string
			d    sweep.AgeDist
		}{{"acp", s.ACP}, {"lazy", s.Lazy}, {"oracle", s.Oracle}, {"constrained", s.Constrained}} {
			wc, wo, wl := "", "", ""
			if row.name == "acp" {
				wc, wo, wl = ratio(s.WorstOverConstrained), ratio(s.WorstOverOracle), ratio(s.WorstOverLazy)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Scenario, row.name,
				MeasuredMs(row.d.MeanMs), MeasuredMs(row.d.WorstMs), MeasuredMs(row.d.BestMs),
				ratio(row.d.MaxOverMin), cost(s.Elastic, row.d.MeanCost), cost(s.Elastic, row.d.WorstCost), wc, wo, wl)
		}
	}
	fmt.Fprintln(tw)
	return tw.Flush()
}

// BitRate writes bit/s with a decimal prefix, as iperf3 does:
// "1.21 Mbit/s", "81.9 kbit/s".
func BitRate(bps float64) string {
	div, prefix := decimal(bps)
	if div == 1 {
		return fmt.Sprintf("%.0f bit/s", bps)
	}
	return sig3(bps/div) + " " + prefix + "bit/s"
}

// decimal is the decimal prefix (k, M, G) that writes v below 1000, and
// its divisor; 1 and "" below 1000 itself.
func decimal(v float64) (div float64, prefix string) {
	for _, p := range []struct {
		div    float64
		prefix string
	}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if math.Abs(v) >= p.div {
			return p.div, p.prefix
		}
	}
	return 1, ""
}

// BitRatePM is "9.02 ± 0.15 Mbit/s": the unit and three significant
// digits from the mean, the SD with as many decimals.
func BitRatePM(m summary.MeanSD) string {
	div, prefix := decimal(m.Mean)
	v := m.Mean / div
	dec := 0
	if a := math.Abs(v); a > 0 && a < 100 {
		dec = 2 - int(math.Floor(math.Log10(a)))
	}
	dec = min(dec, 3)
	return fmt.Sprintf("%.*f ± %.*f %s", dec, v, dec, m.SD/div, prefix+"bit/s")
}

// bytes writes a byte count with a decimal prefix: "15.1 MB".
func bytes(n int64) string {
	div, prefix := decimal(float64(n))
	if div == 1 {
		return fmt.Sprintf("%d B", n)
	}
	return sig3(float64(n)/div) + " " + prefix + "B"
}

// ms writes milliseconds with one decimal ("-" for NaN).
func ms(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// MeasuredMs is milliseconds with one decimal where 0 means "not
// measured" (the sweep's ages), written "-".
func MeasuredMs(v float64) string {
	if v == 0 {
		return "-"
	}
	return ms(v)
}

func percent(frac float64) string { return fmt.Sprintf("%.1f%%", frac*100) }

func percentPM(m summary.MeanSD) string {
	return fmt.Sprintf("%.1f ± %.1f%%", 100*m.Mean, 100*m.SD)
}

func msPM(m summary.MeanSD) string { return fmt.Sprintf("%.1f ± %.1f", m.Mean, m.SD) }

// Float writes x with up to four significant digits ("-" for 0).
func Float(x float64) string {
	if x == 0 || math.IsNaN(x) {
		return "-"
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}

func ratio(x float64) string {
	if x == 0 || math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.2f", x)
}

// Range is an oracle's range of rates, "lo–hi" ("-" if empty, one number
// if lo = hi).
func Range(r sweep.RateRange) string {
	switch {
	case r.HiHz == 0:
		return "-"
	case r.LoHz == r.HiHz:
		return Float(r.LoHz)
	}
	return Float(r.LoHz) + "–" + Float(r.HiHz)
}

// cost is a cost in percent with one decimal, "-" without elastic flows.
func cost(elastic bool, c float64) string {
	if !elastic {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*c)
}

// runSpeed is the SPEED column: the simulator's speed-up, or for an emu
// run (real time) how long it took with its setup.
func runSpeed(r *report.Run) string {
	if strings.HasPrefix(r.Driver, "emu") {
		return realTime(r.DurationS, r.WallS)
	}
	return speed(r.DurationS, r.WallS)
}

// realTime is "emulated 10 s in 10.31 s (real time)".
func realTime(runS, wallS float64) string {
	if wallS <= 0 {
		return fmt.Sprintf("emulated %s s (real time)", strconv.FormatFloat(runS, 'g', 4, 64))
	}
	return fmt.Sprintf("emulated %s s in %.2f s (real time)", strconv.FormatFloat(runS, 'g', 4, 64), wallS)
}

// speed is "simulated 100 s in 0.40 s (250× real time)".
func speed(simS, wallS float64) string {
	if wallS <= 0 {
		return fmt.Sprintf("simulated %s s", strconv.FormatFloat(simS, 'g', 4, 64))
	}
	return fmt.Sprintf("simulated %s s in %.2f s (%.0f× real time)",
		strconv.FormatFloat(simS, 'g', 4, 64), wallS, simS/wallS)
}

// sig3 writes x rounded to three significant digits, without an exponent.
func sig3(x float64) string { return strconv.FormatFloat(report.RoundSig(x, 3), 'f', -1, 64) }
