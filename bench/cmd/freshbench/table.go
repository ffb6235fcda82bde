package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/fresh-udp/fresh/bench/report"
)

// writeRunTable prints one row per flow of every run, then one row per run
// with Jain's index, the link utilisation and the simulation speed, in the
// spirit of iperf3's summary.
func writeRunTable(w io.Writer, runs []*report.Run) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tCC\tFLOW\tKIND\tGOODPUT\tBYTES\tLOST\tRETX\tOWD p50 [ms]\tOWD p95 [ms]\tQUEUE p95 [ms]\tAGE mean [ms]\tAGE p95 [ms]")
	for _, r := range runs {
		for _, f := range r.Flows {
			owd50, owd95, q95 := "-", "-", "-"
			if f.Delivered > 0 || f.Bytes > 0 {
				owd50, owd95, q95 = formatMs(f.OWDms.P50), formatMs(f.OWDms.P95), formatMs(f.QueueMs.P95)
			}
			ageMean, age95 := "-", "-"
			if f.AgeMs != nil {
				ageMean, age95 = formatMs(f.AgeMs.Mean), formatMs(f.AgeMs.P95)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n",
				r.Scenario, r.CC, f.Name, f.Kind, formatBitRate(f.GoodputBps), formatBytes(f.Bytes),
				f.Lost, f.Retransmitted, owd50, owd95, q95, ageMean, age95)
		}
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "SCENARIO\tCC\tSEED\tJAIN\tUTIL fwd\tUTIL rev\tSPEED")
	for _, r := range runs {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.3f\t%s\t%s\t%s\n", r.Scenario, r.CC, r.Seed, r.Jain,
			formatPercent(r.Utilization.Forward), formatPercent(r.Utilization.Reverse), runSpeed(r))
	}
	fmt.Fprintln(tw)
	return tw.Flush()
}

// formatBitRate writes bit/s with a decimal prefix, as iperf3 does:
// "1.21 Mbit/s", "81.9 kbit/s".
func formatBitRate(bps float64) string {
	switch a := math.Abs(bps); {
	case a >= 1e9:
		return sig3(bps/1e9) + " Gbit/s"
	case a >= 1e6:
		return sig3(bps/1e6) + " Mbit/s"
	case a >= 1e3:
		return sig3(bps/1e3) + " kbit/s"
	}
	return fmt.Sprintf("%.0f bit/s", bps)
}

// formatBytes writes a byte count with a decimal prefix: "15.1 MB".
func formatBytes(n int64) string {
	v := float64(n)
	switch {
	case v >= 1e9:
		return sig3(v/1e9) + " GB"
	case v >= 1e6:
		return sig3(v/1e6) + " MB"
	case v >= 1e3:
		return sig3(v/1e3) + " kB"
	}
	return fmt.Sprintf("%d B", n)
}

// formatMs writes milliseconds with one decimal ("-" for NaN).
func formatMs(ms float64) string {
	if math.IsNaN(ms) {
		return "-"
	}
	return strconv.FormatFloat(ms, 'f', 1, 64)
}

// formatMeasuredMs is formatMs where 0 means "not measured" (the sweep's
// ages).
func formatMeasuredMs(ms float64) string {
	if ms == 0 {
		return "-"
	}
	return formatMs(ms)
}

func formatPercent(frac float64) string { return fmt.Sprintf("%.1f%%", frac*100) }

// formatFloat writes x with up to four significant digits ("-" for 0).
func formatFloat(x float64) string {
	if x == 0 || math.IsNaN(x) {
		return "-"
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}

func formatRatio(x float64) string {
	if x == 0 || math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.2f", x)
}

// runSpeed is the SPEED column: the simulator's speed-up, or for an emu
// run (real time) how long it took with its setup.
func runSpeed(r *report.Run) string {
	if strings.HasPrefix(r.Driver, "emu") {
		return formatRealTime(r.DurationS, r.WallS)
	}
	return formatSpeed(r.DurationS, r.WallS)
}

// formatRealTime is "emulated 10 s in 10.31 s (real time)".
func formatRealTime(runS, wallS float64) string {
	if wallS <= 0 {
		return fmt.Sprintf("emulated %s s (real time)", strconv.FormatFloat(runS, 'g', 4, 64))
	}
	return fmt.Sprintf("emulated %s s in %.2f s (real time)", strconv.FormatFloat(runS, 'g', 4, 64), wallS)
}

// formatSpeed is "simulated 100 s in 0.41 s (244× real time)".
func formatSpeed(simS, wallS float64) string {
	if wallS <= 0 {
		return fmt.Sprintf("simulated %s s", strconv.FormatFloat(simS, 'g', 4, 64))
	}
	return fmt.Sprintf("simulated %s s in %.2f s (%.0f× real time)",
		strconv.FormatFloat(simS, 'g', 4, 64), wallS, simS/wallS)
}

// sig3 writes x rounded to three significant digits, without an exponent.
func sig3(x float64) string { return strconv.FormatFloat(roundSig(x, 3), 'f', -1, 64) }
