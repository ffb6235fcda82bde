package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
)

// Size of every PNG (at gonum/plot's 96 dpi: 756×454 px).
const (
	plotWidth  = 20 * vg.Centimeter
	plotHeight = 12 * vg.Centimeter
	// cdfPoints caps the points of a delay CDF line; more are invisible.
	cdfPoints = 1000
	// legendPad is the space around the legend, right of the axes.
	legendPad = 3 * vg.Millimeter
)

// writePlots writes the plots of one scenario's runs into dir:
//
//	<scenario>-<cc>-throughput.png  goodput over time, every flow
//	<scenario>-<cc>-owd.png         one-way delay over time, every flow
//	<scenario>-<cc>-cwnd.png        window over time, bulk flows
//	<scenario>-<cc>-age.png         age at the monitor over time, update flows
//	<scenario>-<cc>-cdf.png         one-way delay CDF, every flow
//	<scenario>-summary.png          goodput against p95 OWD, one point per cc
//
// The time-series plots need traced runs (report.Flow.Series); a plot with
// nothing to draw is not written. It returns the paths it wrote.
func writePlots(dir string, s *scenario.Scenario, runs []*report.Run) (wrote []string, err error) {
	for _, r := range runs {
		base := filepath.Join(dir, fileName(r.Scenario)+"-"+fileName(r.CC))
		for _, pl := range []struct {
			suffix string
			make   func(*report.Run) (*plot.Plot, error)
		}{
			{"throughput", throughputPlot}, {"owd", owdPlot}, {"cwnd", cwndPlot}, {"age", agePlot}, {"cdf", cdfPlot},
		} {
			p, err := pl.make(r)
			if err != nil {
				return wrote, err
			}
			if p == nil {
				continue
			}
			path := base + "-" + pl.suffix + ".png"
			if err := savePNG(p, path); err != nil {
				return wrote, err
			}
			wrote = append(wrote, path)
		}
	}
	p, err := summaryPlot(s, runs)
	if err != nil || p == nil {
		return wrote, err
	}
	path := filepath.Join(dir, fileName(s.Name)+"-summary.png")
	if err := savePNG(p, path); err != nil {
		return wrote, err
	}
	return append(wrote, path), nil
}

// savePNG writes p as a plotWidth×plotHeight PNG with its legend, if any,
// to the right of the axes, where it cannot hide a line.
func savePNG(p *plot.Plot, path string) error {
	img := vgimg.NewWith(vgimg.UseWH(plotWidth, plotHeight), vgimg.UseDPI(vgimg.DefaultDPI))
	dc := draw.New(img)
	leg := p.Legend
	if r := leg.Rectangle(dc); r.Max.X > r.Min.X {
		w := r.Max.X - r.Min.X + 2*legendPad
		p.Legend = plot.NewLegend()
		p.Draw(draw.Crop(dc, 0, -w, 0, 0))
		leg.Top, leg.Left = true, true
		leg.XOffs, leg.YOffs = legendPad, -p.Title.TextStyle.Height(p.Title.Text)-p.Title.Padding-legendPad
		leg.Draw(draw.Crop(dc, plotWidth-w, 0, 0, 0))
		p.Legend = leg
	} else {
		p.Draw(dc)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// linearTicks labels about six round values (1, 2, 2.5 or 5 × 10^k apart)
// in the shortest form ("75", not "75.00"), with an unlabelled tick halfway
// between; gonum/plot's default labels only about three.
type linearTicks struct{}

func (linearTicks) Ticks(lo, hi float64) []plot.Tick {
	if hi <= lo {
		return []plot.Tick{{Value: lo, Label: tickLabel(lo)}}
	}
	raw := (hi - lo) / 6
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ts []plot.Tick
	for k := math.Ceil(lo/step*2) / 2; k*step <= hi; k += 0.5 {
		v := k * step
		if k == math.Trunc(k) {
			ts = append(ts, plot.Tick{Value: v, Label: tickLabel(v)})
		} else {
			ts = append(ts, plot.Tick{Value: v})
		}
	}
	return ts
}

// logTicks labels 1, 2 and 5 × 10^k, with unlabelled ticks at the other
// integer multiples; gonum/plot's LogTicks labels only powers of ten.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for dec := math.Pow(10, math.Floor(math.Log10(lo))); dec <= hi; dec *= 10 {
		for m := 1.0; m < 10; m++ {
			v := roundSig(m*dec, 6)
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = tickLabel(v)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

func tickLabel(v float64) string {
	if math.Abs(v) < 1e-9 {
		v = 0 // not "-0" or "1e-17"
	}
	return strconv.FormatFloat(roundSig(v, 6), 'g', -1, 64)
}

// fileName keeps letters, digits, '.', '_' and '-' of name.
func fileName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '_'
	}, name)
}

// newPlot is a plot with a title, axis labels and a grid.
func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.Title.Padding = vg.Points(6)
	p.X.Tick.Marker, p.Y.Tick.Marker = linearTicks{}, linearTicks{}
	p.Add(plotter.NewGrid())
	return p
}

// lineStyle tells flows apart by colour; dashed adds dash patterns, for
// lines that lie on top of each other (flows sharing a queue have the same
// delay).
type lineStyle struct {
	index  int
	dashed bool
}

func (st lineStyle) apply(l *plotter.Line) {
	l.Color = plotutil.Color(st.index)
	if st.dashed {
		l.Dashes = plotutil.Dashes(st.index)
	}
	l.Width = vg.Points(1.5)
}

// addLine draws ys/scale over xs as one line, broken where y is NaN, and
// names it in the legend. It reports whether anything was drawn.
func addLine(p *plot.Plot, name string, st lineStyle, xs, ys []float64, scale float64) (bool, error) {
	var seg plotter.XYs
	drawn := false
	flush := func() error {
		if len(seg) == 0 {
			return nil
		}
		l, err := plotter.NewLine(seg)
		if err != nil {
			return err
		}
		st.apply(l)
		p.Add(l)
		if !drawn {
			p.Legend.Add(name, l)
		}
		drawn, seg = true, nil
		return nil
	}
	for k := range min(len(xs), len(ys)) {
		if math.IsNaN(ys[k]) || math.IsInf(ys[k], 0) {
			if err := flush(); err != nil {
				return false, err
			}
			continue
		}
		seg = append(seg, plotter.XY{X: xs[k], Y: ys[k] / scale})
	}
	return drawn, flush()
}

// binMeans averages the non-NaN ys over consecutive bins of width seconds,
// placing each mean at the middle of its bin; NaN for a bin without a value.
// xs are the ends of equal sampling intervals (report.Series.T), so a sample
// is binned by its interval's middle: the sample at 1.0 s of 0.1 s intervals
// belongs to [0 s, 1 s).
func binMeans(xs, ys []float64, width float64) (bx, by []float64) {
	half := 0.0
	if len(xs) > 1 {
		half = (xs[1] - xs[0]) / 2
	}
	var sum float64
	var n int
	cur := math.NaN()
	emit := func() {
		if !math.IsNaN(cur) {
			bx = append(bx, (cur+0.5)*width)
			if n > 0 {
				by = append(by, sum/float64(n))
			} else {
				by = append(by, math.NaN())
			}
		}
		sum, n = 0, 0
	}
	for k := range min(len(xs), len(ys)) {
		b := math.Floor((xs[k] - half) / width)
		if b != cur {
			emit()
			cur = b
		}
		if !math.IsNaN(ys[k]) {
			sum += ys[k]
			n++
		}
	}
	emit()
	return bx, by
}

// seriesSpec says what a time-series plot draws.
type seriesSpec struct {
	what   string  // end of the title
	ylabel string  // y axis label, with its unit
	scale  float64 // samples are divided by it (the y unit)
	zeroY  bool    // the y axis starts at 0
	dashed bool    // see lineStyle
	binS   float64 // if > 0, plot means over bins of binS seconds
	pick   func(*report.Flow) bool
	field  func(*report.Series) []float64
}

// seriesPlot draws one Series field of the chosen flows against time; nil
// if no flow has samples.
func seriesPlot(r *report.Run, sp seriesSpec) (*plot.Plot, error) {
	p := newPlot(runTitle(r, sp.what), "time [s]", sp.ylabel)
	if sp.zeroY {
		p.Y.Min = 0
	}
	any := false
	for i := range r.Flows {
		f := &r.Flows[i]
		if f.Series == nil || !sp.pick(f) {
			continue
		}
		xs, ys := f.Series.T, sp.field(f.Series)
		if sp.binS > 0 {
			xs, ys = binMeans(xs, ys, sp.binS)
		}
		ok, err := addLine(p, f.Name+" ("+f.Kind+")", lineStyle{index: i, dashed: sp.dashed}, xs, ys, sp.scale)
		if err != nil {
			return nil, fmt.Errorf("%s: flow %s: %w", sp.what, f.Name, err)
		}
		any = any || ok
	}
	if !any {
		return nil, nil
	}
	return p, nil
}

func allFlows(*report.Flow) bool      { return true }
func bulkFlows(f *report.Flow) bool   { return f.Kind == scenario.KindBulk }
func updateFlows(f *report.Flow) bool { return f.AgeMs != nil || isUpdateKind(f.Kind) }

func isUpdateKind(k string) bool {
	return k == scenario.KindACP || k == scenario.KindFixed || k == scenario.KindLazy
}

func runTitle(r *report.Run, what string) string {
	return fmt.Sprintf("%s, cc %s: %s", r.Scenario, r.CC, what)
}

// throughputBinS is the averaging bin of the throughput plot, seconds:
// per-sample goodput is too bursty to read (a retransmission that fills a
// hole delivers a window at once), and Pantheon's plots bin too.
const throughputBinS = 1.0

func throughputPlot(r *report.Run) (*plot.Plot, error) {
	peak := 0.0
	for _, f := range r.Flows {
		if f.Series != nil {
			_, ys := binMeans(f.Series.T, f.Series.GoodputBps, throughputBinS)
			for _, v := range ys {
				if !math.IsNaN(v) {
					peak = max(peak, v)
				}
			}
		}
	}
	scale, unit := 1e6, "Mbit/s"
	if peak < 1e6 {
		scale, unit = 1e3, "kbit/s"
	}
	return seriesPlot(r, seriesSpec{
		what: "throughput (1 s means)", ylabel: "goodput [" + unit + "]", scale: scale, zeroY: true,
		binS: throughputBinS, pick: allFlows, field: func(s *report.Series) []float64 { return s.GoodputBps },
	})
}

func owdPlot(r *report.Run) (*plot.Plot, error) {
	return seriesPlot(r, seriesSpec{
		what: "one-way delay", ylabel: "mean one-way delay [ms]", scale: 1, dashed: true,
		pick: allFlows, field: func(s *report.Series) []float64 { return s.OWDms },
	})
}

func cwndPlot(r *report.Run) (*plot.Plot, error) {
	return seriesPlot(r, seriesSpec{
		what: "congestion window", ylabel: "cwnd [kB]", scale: 1e3, zeroY: true,
		pick: bulkFlows, field: func(s *report.Series) []float64 { return s.CwndBytes },
	})
}

func agePlot(r *report.Run) (*plot.Plot, error) {
	return seriesPlot(r, seriesSpec{
		what: "age of information", ylabel: "age at the monitor [ms]", scale: 1, zeroY: true,
		pick: updateFlows, field: func(s *report.Series) []float64 { return s.AgeMs },
	})
}

// cdfPlot draws the empirical CDF of every flow's per-packet one-way delay.
func cdfPlot(r *report.Run) (*plot.Plot, error) {
	p := newPlot(runTitle(r, "one-way delay CDF"), "one-way delay [ms]", "fraction of packets")
	p.Y.Min, p.Y.Max = 0, 1
	any := false
	for i, f := range r.Flows {
		xys := cdfXYs(f.OWDSamples, cdfPoints)
		if len(xys) == 0 {
			continue
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("cdf of %s: %w", f.Name, err)
		}
		lineStyle{index: i, dashed: true}.apply(l)
		p.Add(l)
		p.Legend.Add(f.Name+" ("+f.Kind+")", l)
		any = true
	}
	if !any {
		return nil, nil
	}
	return p, nil
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

// summaryPlot is Pantheon's throughput–delay plot: goodput as a fraction
// of the forward link's capacity (up, from 0) against p95 one-way delay (x
// axis inverted, so better is up and to the right), one point per
// controller, each with its own colour and marker, named in the legend
// (labels beside the points would overlap where controllers cluster); nil
// without bulk flows. The fraction counts payload, so headers
// keep even a full link a few percent below 1.
func summaryPlot(s *scenario.Scenario, runs []*report.Run) (*plot.Plot, error) {
	pts := summaryPoints(s, runs)
	if len(pts) == 0 {
		return nil, nil
	}
	capacity := float64(s.Forward.Rate)
	ylabel := "goodput / link capacity"
	if capacity <= 0 {
		capacity, ylabel = 1e6, "goodput [Mbit/s]"
	}
	p := newPlot(s.Name+": goodput vs. delay (better: up and right)",
		"p95 one-way delay [ms] (axis inverted)", ylabel)
	p.X.Scale = plot.InvertedScale{Normalizer: plot.LinearScale{}}
	all := make(plotter.XYs, len(pts))
	for i, pt := range pts {
		xy := plotter.XY{X: pt.OWDp95Ms, Y: pt.GoodputBps / capacity}
		all[i] = xy
		sc, err := plotter.NewScatter(plotter.XYs{xy})
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle = draw.GlyphStyle{Shape: plotutil.Shape(i), Radius: vg.Points(6), Color: plotutil.Color(i)}
		p.Add(sc)
		p.Legend.Add(pt.CC, sc)
	}
	p.X.Min, p.X.Max = padRange(all, func(xy plotter.XY) float64 { return xy.X })
	_, hi := padRange(all, func(xy plotter.XY) float64 { return xy.Y })
	p.Y.Min, p.Y.Max = 0, hi
	if ylabel != "goodput [Mbit/s]" {
		p.Y.Max = max(hi, 1.05)
	}
	return p, nil
}

// padRange is the range of the chosen coordinate widened by 15% on each
// side (or ±10% of the value if all are equal), so labels stay inside.
func padRange(xys plotter.XYs, c func(plotter.XY) float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, xy := range xys {
		lo, hi = min(lo, c(xy)), max(hi, c(xy))
	}
	pad := (hi - lo) * 0.15
	if pad == 0 {
		pad = math.Max(math.Abs(lo)*0.1, 1)
	}
	return max(lo-pad, 0), hi + pad
}
