package plots

import (
	"fmt"
	"image/color"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/fresh-udp/fresh/bench/sweep"
	"github.com/fresh-udp/fresh/bench/table"
)

// WriteSweep draws the ACP sweep of one scenario: the mean age over the
// seeds against the fixed update rate (both axes logarithmic) with ±1 SD
// bars, both oracles circled, the highest rate within the cost bound
// marked, and acp's and lazy's mean age as horizontal lines:
// dir/<scenario>-sweep.png. A sweep in which no rate got an update
// through draws nothing.
func WriteSweep(dir string, sum *sweep.Summary) error {
	xys, errs := sweepPoints(sum)
	if len(xys) == 0 {
		return nil
	}
	title := fmt.Sprintf("%s: mean age vs. fixed update rate (%d seeds)", sum.Scenario, len(sum.Seeds))
	p := newPlot(title, "update rate [Hz] (log)", "mean age [ms] (log)")
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = logTicks{}, logTicks{}
	if err := addSweepPoints(p, sum, xys, errs); err != nil {
		return err
	}
	if err := addOracles(p, sum); err != nil {
		return err
	}
	if err := addPolicies(p, sum, xys[0].X, xys[len(xys)-1].X); err != nil {
		return err
	}
	sweepAgeAxis(p, sum, xys)
	if err := addCostEdge(p, sum); err != nil {
		return err
	}
	return SavePNG(p, filepath.Join(dir, FileName(sum.Scenario)+"-sweep.png"))
}

// sweepPoints is the measured points of the sweep, by rate, with bars of
// ±1 SD that stay positive on the log axis.
func sweepPoints(sum *sweep.Summary) (plotter.XYs, plotter.YErrors) {
	var xys plotter.XYs
	var errs plotter.YErrors
	for _, pt := range sum.Points {
		if pt.MeanAgeMs > 0 {
			xys = append(xys, plotter.XY{X: pt.RateHz, Y: pt.MeanAgeMs})
			lo := min(pt.SDAgeMs, 0.9*pt.MeanAgeMs)
			errs = append(errs, struct{ Low, High float64 }{lo, pt.SDAgeMs})
		}
	}
	return xys, errs
}

// addSweepPoints draws the fixed rates' line, and their SD bars when
// there are several seeds.
func addSweepPoints(p *plot.Plot, sum *sweep.Summary, xys plotter.XYs, errs plotter.YErrors) error {
	l, s, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	l.Color, s.Color = plotutil.Color(0), plotutil.Color(0)
	p.Add(l, s)
	p.Legend.Add("fixed rate (±1 SD over seeds)", l, s)
	if len(sum.Seeds) <= 1 {
		return nil
	}
	bars, err := plotter.NewYErrorBars(struct {
		plotter.XYer
		plotter.YErrorer
	}{xys, errs})
	if err != nil {
		return err
	}
	bars.Color = plotutil.Color(0)
	p.Add(bars)
	return nil
}

// addOracles circles both oracles (the constrained one only where there
// are elastic flows to protect).
func addOracles(p *plot.Plot, sum *sweep.Summary) error {
	for i, o := range []struct {
		name      string
		rate, age float64
		r         sweep.RateRange
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
		p.Legend.Add(fmt.Sprintf("%s %s Hz (%s): %s ms", o.name, table.Float(o.rate), table.Range(o.r), table.MeasuredMs(o.age)), sc)
	}
	return nil
}

// addPolicies draws acp's and lazy's mean age as horizontal lines from
// rate lo to hi.
func addPolicies(p *plot.Plot, sum *sweep.Summary, lo, hi float64) error {
	for i, ref := range []struct {
		name string
		d    sweep.AgeDist
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
		p.Legend.Add(fmt.Sprintf("%s: %s ms (worst %s)", ref.name, table.MeasuredMs(ref.d.MeanMs), table.MeasuredMs(ref.d.WorstMs)), h)
	}
	return nil
}

// sweepAgeAxis keeps the age axis on the interesting range, from just
// below the best age to 30× the oracle's: ages at capacity grow without
// bound.
func sweepAgeAxis(p *plot.Plot, sum *sweep.Summary, xys plotter.XYs) {
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
}

// addCostEdge marks the highest rate whose mean cost is within the
// bound: the constrained oracle lies at or left of it. Nothing without
// elastic flows.
func addCostEdge(p *plot.Plot, sum *sweep.Summary) error {
	if !sum.Elastic {
		return nil
	}
	edge := 0.0
	for _, pt := range sum.Points {
		if pt.MeanCost <= sum.CostBound {
			edge = pt.RateHz
		}
	}
	if edge <= 0 {
		return nil
	}
	v, err := plotter.NewLine(plotter.XYs{{X: edge, Y: p.Y.Min}, {X: edge, Y: p.Y.Max}})
	if err != nil {
		return err
	}
	v.Color, v.Dashes = color.Gray{Y: 0x80}, plotutil.Dashes(3)
	p.Add(v)
	p.Legend.Add(fmt.Sprintf("cost ≤ %.0f%% up to %s Hz", 100*sum.CostBound, table.Float(edge)), v)
	return nil
}
