package plots

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
)

// cdfFigure draws the empirical CDF of the per-packet one-way delay: one
// line per run if each has one flow with samples, else a panel per run;
// the x axis ends at the largest 99th percentile of any line, so one
// run's tail does not squeeze the others into the left edge.
func cdfFigure(s *scenario.Scenario, runs []*report.Run) (*Figure, error) {
	c := cdfRuns(runs)
	if !c.anyLine {
		return nil, nil
	}
	return layOut(&Figure{title: scenarioTitle(s, "one-way delay CDF (to the largest p99)"), subtitle: s.DescribePaths()}, runs, c.overlay, c)
}

// cdfLine is one flow's CDF.
type cdfLine struct {
	name  string
	index int // the flow's index: its colour in every panel
	xys   plotter.XYs
}

// cdfs is the CDF lines of every run of a figure, and the x range they
// share: from the lowest delay to the largest p99.
type cdfs struct {
	lines            [][]cdfLine // per run
	overlay, anyLine bool
	xlo, xhi         float64
}

func cdfRuns(runs []*report.Run) *cdfs {
	c := &cdfs{lines: make([][]cdfLine, len(runs)), overlay: true, xlo: math.Inf(1)}
	for i, r := range runs {
		for j, f := range r.Flows {
			xys := cdfXYs(f.OWDSamples, cdfPoints)
			if len(xys) == 0 {
				continue
			}
			c.lines[i] = append(c.lines[i], cdfLine{name: f.Name + " (" + f.Kind + ")", index: j, xys: xys})
			c.xlo = min(c.xlo, xys[0].X)
			for _, xy := range xys {
				if xy.Y >= 0.99 {
					c.xhi = max(c.xhi, xy.X)
					break
				}
			}
		}
		c.overlay = c.overlay && len(c.lines[i]) <= 1
		c.anyLine = c.anyLine || len(c.lines[i]) > 0
	}
	return c
}

// axes sets p's ranges to the shared ones, padded by 3 %.
func (c *cdfs) axes(p *plot.Plot) {
	pad := (c.xhi - c.xlo) * 0.03
	p.X.Min, p.X.Max = max(c.xlo-pad, 0), c.xhi+pad
	p.Y.Min, p.Y.Max = 0, 1
}

// addCDF draws one CDF line, named in the legend.
func addCDF(p *plot.Plot, name string, st lineStyle, xys plotter.XYs) error {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return fmt.Errorf("cdf of %s: %w", name, err)
	}
	st.apply(l)
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

// overlayPanel is one axes with a line per run, named by its controller.
func (c *cdfs) overlayPanel(runs []*report.Run) ([]*plot.Plot, error) {
	p := panelPlot("", "one-way delay [ms]", "fraction of packets")
	for i, r := range runs {
		for _, l := range c.lines[i] {
			if err := addCDF(p, r.CC, lineStyle{index: i}, l.xys); err != nil {
				return nil, err
			}
		}
	}
	c.axes(p)
	return []*plot.Plot{p}, nil
}

// stackedPanels is a panel per run with a dashed line per flow.
func (c *cdfs) stackedPanels(runs []*report.Run) ([]*plot.Plot, error) {
	var panels []*plot.Plot
	for i, r := range runs {
		p := panelPlot("cc "+r.CC, "one-way delay [ms]", "fraction of packets")
		if i < len(runs)-1 {
			p.X.Label.Text = ""
		}
		for _, l := range c.lines[i] {
			if err := addCDF(p, l.name, lineStyle{index: l.index, dashed: true}, l.xys); err != nil {
				return nil, err
			}
		}
		c.axes(p)
		panels = append(panels, p)
	}
	return panels, nil
}

// cdfXYs is the empirical CDF of samples (NaNs dropped) as at most n
// points: (x, fraction of samples ≤ x).
func cdfXYs(samples []float64, n int) plotter.XYs {
	xs := slices.DeleteFunc(slices.Clone(samples), func(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) })
	if len(xs) == 0 {
		return nil
	}
	slices.Sort(xs)
	m := min(n, len(xs))
	out := make(plotter.XYs, 0, m+1)
	out = append(out, plotter.XY{X: xs[0], Y: 0})
	for k := range m {
		i := len(xs) - 1
		if m > 1 {
			i = k * (len(xs) - 1) / (m - 1)
		}
		out = append(out, plotter.XY{X: xs[i], Y: float64(i+1) / float64(len(xs))})
	}
	return out
}

// WriteLatencyCDF writes dir/<name>-cdf.png: the CDF of the write-to-router
// latency of every telemetry flow of r (report.Flow.WriteToRouterSamples),
// a line per flow.
func WriteLatencyCDF(dir, name string, r *report.Run) error {
	p := newPlot(name+": write-to-router latency CDF", "latency from write to router [ms]", "fraction of messages")
	p.Y.Min, p.Y.Max = 0, 1
	for i, f := range r.Flows {
		xys := cdfXYs(slices.Clone(f.WriteToRouterSamples), cdfPoints)
		if len(xys) == 0 {
			continue
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		lineStyle{index: i, dashed: true}.apply(l)
		p.Add(l)
		p.Legend.Add(f.Name, l)
	}
	return SavePNG(p, filepath.Join(dir, name+"-cdf.png"))
}
