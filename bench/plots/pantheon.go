package plots

import (
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
)

// summaryPoint is one controller's point of the summary plot.
type summaryPoint struct {
	CC         string
	OWDp95Ms   float64
	GoodputBps float64
}

// summaryPoints is one point per run: the mean goodput and mean p95 OWD of
// the bulk flows whose controller --cc replaces (the unpinned ones; all bulk
// flows if every one is pinned). Runs without bulk flows give no point.
func summaryPoints(s *scenario.Scenario, runs []*report.Run) []summaryPoint {
	measured := map[string]bool{}
	for _, f := range s.Flows {
		if f.Kind == scenario.KindBulk && !f.Pin {
			measured[f.Name] = true
		}
	}
	if len(measured) == 0 {
		for _, f := range s.Flows {
			if f.Kind == scenario.KindBulk {
				measured[f.Name] = true
			}
		}
	}
	var pts []summaryPoint
	for _, r := range runs {
		var n int
		pt := summaryPoint{CC: r.CC}
		for _, f := range r.Flows {
			if measured[f.Name] {
				pt.OWDp95Ms += f.OWDms.P95
				pt.GoodputBps += f.GoodputBps
				n++
			}
		}
		if n > 0 {
			pt.OWDp95Ms /= float64(n)
			pt.GoodputBps /= float64(n)
			pts = append(pts, pt)
		}
	}
	return pts
}

// Summary is Pantheon's throughput–delay plot: goodput (up, from 0)
// against p95 one-way delay on a logarithmic x axis, inverted so that
// better is up and to the right, one point per controller, each with its
// own colour and marker and its name written beside it; nil without bulk
// flows. On a fixed-rate path goodput is a fraction of the forward link's
// capacity (payload, so headers keep even a full link a few percent below
// 1); on a trace or a rate walk, whose capacity moves, it is in Mbit/s.
func Summary(s *scenario.Scenario, runs []*report.Run) (*plot.Plot, error) {
	pts := summaryPoints(s, runs)
	if len(pts) == 0 {
		return nil, nil
	}
	capacity := float64(s.Forward.Rate)
	ylabel := "goodput / link capacity"
	if capacity <= 0 {
		capacity, ylabel = 1e6, "goodput [Mbit/s]"
	}
	title := s.Name + ": goodput vs. delay (better: up and right)\n" + s.DescribePaths()
	p := newPlot(title, "p95 one-way delay [ms] (log, inverted)", ylabel)
	marks := make([]Mark, len(pts))
	for i, pt := range pts {
		marks[i] = Mark{Label: pt.CC, Index: i, X: pt.OWDp95Ms, Y: pt.GoodputBps / capacity}
	}
	if _, err := addPantheonMarks(p, marks, nil); err != nil {
		return nil, err
	}
	xlo, xhi, _, yhi := markRange(marks, nil)
	setPantheonAxes(p, xlo, xhi, yhi)
	if ylabel != "goodput [Mbit/s]" {
		p.Y.Max = max(p.Y.Max, 1.05)
	}
	return p, nil
}

// Mark is one controller's point of a throughput–delay plot.
type Mark struct {
	Label string
	Index int     // colour and marker
	X, Y  float64 // delay (ms), throughput
}

// addPantheonMarks draws big marks with their labels beside them, and the
// small ones (one per seed, say) under them in the same colours, faint. It
// returns the labels' plotter.
func addPantheonMarks(p *plot.Plot, marks, small []Mark) (*markLabels, error) {
	for _, m := range small {
		sc, err := plotter.NewScatter(plotter.XYs{{X: m.X, Y: m.Y}})
		if err != nil {
			return nil, err
		}
		c := color.NRGBAModel.Convert(plotutil.Color(m.Index)).(color.NRGBA)
		c.A = 120
		sc.GlyphStyle = draw.GlyphStyle{Shape: plotutil.Shape(m.Index), Radius: vg.Points(2.5), Color: c}
		p.Add(sc)
	}
	labels := newMarkLabels(vg.Points(6))
	for _, m := range marks {
		sc, err := plotter.NewScatter(plotter.XYs{{X: m.X, Y: m.Y}})
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle = draw.GlyphStyle{Shape: plotutil.Shape(m.Index), Radius: vg.Points(6), Color: plotutil.Color(m.Index)}
		p.Add(sc)
		p.Legend.Add(m.Label, sc)
		labels.add(m.X, m.Y, m.Label, plotutil.Color(m.Index))
	}
	p.Add(labels)
	return labels, nil
}

// markRange is the range of the marks' coordinates.
func markRange(marks, small []Mark) (xlo, xhi, ylo, yhi float64) {
	xlo, ylo = math.Inf(1), math.Inf(1)
	for _, m := range append(slices.Clone(marks), small...) {
		if m.X > 0 {
			xlo, xhi = min(xlo, m.X), max(xhi, m.X)
		}
		ylo, yhi = min(ylo, m.Y), max(yhi, m.Y)
	}
	if math.IsInf(xlo, 1) {
		xlo, xhi = 1, 10
	}
	return xlo, xhi, ylo, yhi
}

// setPantheonAxes sets a log x axis, inverted (lower delay to the right),
// widened by a factor on each side so the labels beside the marks stay
// inside, and a y axis from 0.
func setPantheonAxes(p *plot.Plot, xlo, xhi, yhi float64) {
	p.X.Scale = plot.InvertedScale{Normalizer: plot.LogScale{}}
	p.X.Tick.Marker = logTicks{}
	span := math.Max(xhi/xlo, 1.2)
	f := math.Pow(span, 0.12)
	p.X.Min, p.X.Max = xlo/f/1.05, xhi*f*1.1
	p.Y.Min, p.Y.Max = 0, math.Max(yhi*1.12, 1e-9)
}

// MarkPanel is one panel of a throughput–delay figure: its title, a mark
// per controller (large, labelled) and any number of small ones under
// them in the same colours (one per seed, say).
type MarkPanel struct {
	Title        string
	Marks, Small []Mark
}

// ThroughputDelay is a figure of panels side by side on shared axes,
// each Pantheon's throughput (Mbit/s) against p95 one-way delay (ms, log,
// inverted); the first panel's legend names the controllers, which are
// those of every panel.
func ThroughputDelay(title, subtitle string, panels []MarkPanel) (*Figure, error) {
	f := &Figure{title: title, subtitle: subtitle, cols: len(panels)}
	xlo, xhi, yhi := math.Inf(1), 0.0, 0.0
	for _, pm := range panels {
		lo, hi, _, top := markRange(pm.Marks, pm.Small)
		xlo, xhi, yhi = min(xlo, lo), max(xhi, hi), max(yhi, top)
	}
	for i, pm := range panels {
		p := panelPlot(pm.Title, "p95 one-way delay [ms]", "throughput [Mbit/s]")
		if i > 0 {
			p.Y.Label.Text = ""
		}
		if _, err := addPantheonMarks(p, pm.Marks, pm.Small); err != nil {
			return nil, err
		}
		if i > 0 {
			p.Legend = plot.NewLegend() // the same controllers as the first panel's
		}
		setPantheonAxes(p, xlo, xhi, yhi)
		f.panels = append(f.panels, p)
	}
	return f, nil
}
