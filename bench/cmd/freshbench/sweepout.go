package main

import (
	"fmt"
	"image/color"
	"io"
	"path/filepath"
	"text/tabwriter"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// writeSweepTable prints the --acp-sweep result of each scenario: the grid
// and both oracles over the seeds, then one row per policy and oracle with
// its mean age over the seeds, the worst and best seed, their ratio, and
// the elastic flows' cost.
func writeSweepTable(w io.Writer, sums []*sweepSummary) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tSEEDS\tRATES TRIED\tCAPACITY [Hz]\tNOISE [ms]\tORACLE [Hz]\tORACLE RANGE [Hz]\tCONSTRAINED [Hz]\tCONSTRAINED RANGE [Hz]")
	for _, s := range sums {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%.1f\t%s\t%s\t%s\t%s\n", s.Scenario, len(s.Seeds), len(s.Points),
			formatFloat(s.CapacityHz), s.NoiseMs, formatFloat(s.OracleRateHz), formatRange(s.OracleRange),
			formatFloat(s.ConstrainedRateHz), formatRange(s.ConstrainedRange))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "SCENARIO\tPOLICY\tAGE mean [ms]\tworst\tbest\tmax/min\tCOST mean\tworst\tworst / CONSTRAINED\tworst / ORACLE\tworst / LAZY")
	for _, s := range sums {
		for _, row := range []struct {
			name string
			d    ageDist
		}{{"acp", s.ACP}, {"lazy", s.Lazy}, {"oracle", s.Oracle}, {"constrained", s.Constrained}} {
			wc, wo, wl := "", "", ""
			if row.name == "acp" {
				wc, wo, wl = formatRatio(s.WorstOverConstrained), formatRatio(s.WorstOverOracle), formatRatio(s.WorstOverLazy)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Scenario, row.name,
				formatMeasuredMs(row.d.MeanMs), formatMeasuredMs(row.d.WorstMs), formatMeasuredMs(row.d.BestMs),
				formatRatio(row.d.MaxOverMin), formatCost(s.Elastic, row.d.MeanCost), formatCost(s.Elastic, row.d.WorstCost), wc, wo, wl)
		}
	}
	fmt.Fprintln(tw)
	return tw.Flush()
}

// formatRange is "lo–hi" ("-" if empty, one number if lo = hi).
func formatRange(r rateRange) string {
	switch {
	case r.HiHz == 0:
		return "-"
	case r.LoHz == r.HiHz:
		return formatFloat(r.LoHz)
	}
	return formatFloat(r.LoHz) + "–" + formatFloat(r.HiHz)
}

// formatCost is a cost in percent with one decimal, "-" without elastic
// flows.
func formatCost(elastic bool, c float64) string {
	if !elastic {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*c)
}

// writeSweepPlot draws the --acp-sweep of one scenario: the mean age over
// the seeds against the fixed update rate (both axes logarithmic) with ±1
// SD bars, both oracles circled, the highest rate within the cost bound
// marked, and acp's and lazy's mean age as horizontal lines:
// <scenario>-sweep.png.
func writeSweepPlot(dir string, sum *sweepSummary) error {
	var xys plotter.XYs
	var errs plotter.YErrors
	for _, pt := range sum.Points {
		if pt.MeanAgeMs > 0 {
			xys = append(xys, plotter.XY{X: pt.RateHz, Y: pt.MeanAgeMs})
			// Bars that stay positive on the log axis.
			lo := min(pt.SDAgeMs, 0.9*pt.MeanAgeMs)
			errs = append(errs, struct{ Low, High float64 }{lo, pt.SDAgeMs})
		}
	}
	if len(xys) == 0 {
		return nil
	}
	title := fmt.Sprintf("%s: mean age vs. fixed update rate (%d seeds)", sum.Scenario, len(sum.Seeds))
	p := newPlot(title, "update rate [Hz] (log)", "mean age [ms] (log)")
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = logTicks{}, logTicks{}
	l, s, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	l.Color, s.Color = plotutil.Color(0), plotutil.Color(0)
	p.Add(l, s)
	p.Legend.Add("fixed rate (±1 SD over seeds)", l, s)
	if len(sum.Seeds) > 1 {
		bars, err := plotter.NewYErrorBars(struct {
			plotter.XYer
			plotter.YErrorer
		}{xys, errs})
		if err != nil {
			return err
		}
		bars.Color = plotutil.Color(0)
		p.Add(bars)
	}
	for i, o := range []struct {
		name      string
		rate, age float64
		r         rateRange
	}{
		{"oracle", sum.OracleRateHz, sum.OracleAgeMs, sum.OracleRange},
		{"constrained", sum.ConstrainedRateHz, sum.ConstrainedAgeMs, sum.ConstrainedRange},
	} {
		if o.age <= 0 || (i == 1 && !sum.Elastic) {
			continue
		}
		sc, err := plotter.NewScatter(plotter.XYs{{X: o.rate, Y: o.age}})
		if err != nil {
			return err
		}
		c := color.RGBA{R: 0xcc, A: 0xff}
		if i == 1 {
			c = color.RGBA{G: 0x88, B: 0x44, A: 0xff}
		}
		sc.GlyphStyle = draw.GlyphStyle{Shape: draw.RingGlyph{}, Radius: vg.Points(float64(7 + 3*i)), Color: c}
		p.Add(sc)
		p.Legend.Add(fmt.Sprintf("%s %s Hz (%s): %s ms", o.name, formatFloat(o.rate), formatRange(o.r), formatMeasuredMs(o.age)), sc)
	}
	lo, hi := xys[0].X, xys[len(xys)-1].X
	for i, ref := range []struct {
		name string
		d    ageDist
	}{{"acp", sum.ACP}, {"lazy", sum.Lazy}} {
		if ref.d.MeanMs <= 0 {
			continue
		}
		h, err := plotter.NewLine(plotter.XYs{{X: lo, Y: ref.d.MeanMs}, {X: hi, Y: ref.d.MeanMs}})
		if err != nil {
			return err
		}
		h.Color, h.Dashes, h.Width = plotutil.Color(i+2), plotutil.Dashes(i+1), vg.Points(1.5)
		p.Add(h)
		p.Legend.Add(fmt.Sprintf("%s: %s ms (worst %s)", ref.name, formatMeasuredMs(ref.d.MeanMs), formatMeasuredMs(ref.d.WorstMs)), h)
	}
	// Ages at capacity grow without bound: keep the axis on the interesting
	// range, from just below the best age to 30× the oracle's.
	lowest, highest := sum.OracleAgeMs, 0.0
	for _, a := range []float64{sum.ACP.BestMs, sum.Lazy.BestMs} {
		if a > 0 {
			lowest = min(lowest, a)
		}
	}
	for _, xy := range xys {
		lowest, highest = min(lowest, xy.Y), max(highest, xy.Y)
	}
	p.Y.Min, p.Y.Max = lowest/1.3, min(highest*1.1, 30*sum.OracleAgeMs)
	if sum.Elastic {
		// The highest rate whose mean cost is within the bound: the
		// constrained oracle lies at or left of it.
		edge := 0.0
		for _, pt := range sum.Points {
			if pt.MeanCost <= sum.CostBound {
				edge = pt.RateHz
			}
		}
		if edge > 0 {
			v, err := plotter.NewLine(plotter.XYs{{X: edge, Y: p.Y.Min}, {X: edge, Y: p.Y.Max}})
			if err != nil {
				return err
			}
			v.Color, v.Dashes = color.Gray{Y: 0x80}, plotutil.Dashes(3)
			p.Add(v)
			p.Legend.Add(fmt.Sprintf("cost ≤ %.0f%% up to %s Hz", 100*sum.CostBound, formatFloat(edge)), v)
		}
	}
	return savePNG(p, filepath.Join(dir, fileName(sum.Scenario)+"-sweep.png"))
}
