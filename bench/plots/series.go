package plots

import (
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
)

// addLine draws ys/scale over xs as one line, broken where y is NaN, and
// names it in the legend. It reports whether anything was drawn.
func addLine(p *plot.Plot, name string, style func(*plotter.Line), xs, ys []float64, scale float64) (bool, error) {
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
		style(l)
		p.Add(l)
		if !drawn && name != "" {
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

// binRanges is binMeans' bins with the smallest and largest non-NaN y
// of each (NaN for an empty bin).
func binRanges(xs, ys []float64, width float64) (bx, lo, hi []float64) {
	half := 0.0
	if len(xs) > 1 {
		half = (xs[1] - xs[0]) / 2
	}
	cur := math.NaN()
	l, h := math.NaN(), math.NaN()
	emit := func() {
		if !math.IsNaN(cur) {
			bx, lo, hi = append(bx, (cur+0.5)*width), append(lo, l), append(hi, h)
		}
		l, h = math.NaN(), math.NaN()
	}
	for k := range min(len(xs), len(ys)) {
		b := math.Floor((xs[k] - half) / width)
		if b != cur {
			emit()
			cur = b
		}
		if y := ys[k]; !math.IsNaN(y) && !math.IsInf(y, 0) {
			if math.IsNaN(l) || y < l {
				l = y
			}
			if math.IsNaN(h) || y > h {
				h = y
			}
		}
	}
	emit()
	return bx, lo, hi
}

// addBand shades the area between lo and hi over xs (divided by scale),
// broken where a bin is empty, in c made translucent.
func addBand(p *plot.Plot, c color.Color, xs, lo, hi []float64, scale float64) error {
	fill := color.NRGBAModel.Convert(c).(color.NRGBA)
	fill.A = 60
	var seg []int
	flush := func() error {
		if len(seg) < 2 {
			seg = seg[:0]
			return nil
		}
		var pts plotter.XYs
		for _, k := range seg {
			pts = append(pts, plotter.XY{X: xs[k], Y: hi[k] / scale})
		}
		for i := len(seg) - 1; i >= 0; i-- {
			pts = append(pts, plotter.XY{X: xs[seg[i]], Y: lo[seg[i]] / scale})
		}
		poly, err := plotter.NewPolygon(pts)
		if err != nil {
			return err
		}
		poly.Color, poly.LineStyle.Width = fill, 0
		p.Add(poly)
		seg = seg[:0]
		return nil
	}
	for k := range min(len(xs), len(lo), len(hi)) {
		if math.IsNaN(lo[k]) || math.IsNaN(hi[k]) {
			if err := flush(); err != nil {
				return err
			}
			continue
		}
		seg = append(seg, k)
	}
	return flush()
}

// seriesSpec says what a time-series figure draws.
type seriesSpec struct {
	what   string  // end of the title
	ylabel string  // y axis label, with its unit
	scale  float64 // samples are divided by it (the y unit)
	zeroY  bool    // the y axis starts at 0
	dashed bool    // see lineStyle
	binS   float64 // if > 0, plot means over bins of binS seconds
	// capacity draws the forward link's capacity (report.Run.CapacityBps)
	// under the lines, binned as they are (throughput).
	capacity bool
	// panels draws a panel per run even when each has one line: for
	// spiky series (delay) that would hide each other on one axes.
	panels bool
	// band shades, under each line of bin means, the range (min to max)
	// of the samples in each bin: the mean is the level, the band how far
	// it swings within the bin.
	band  bool
	pick  func(*report.Flow) bool
	field func(*report.Series) []float64
}

// seriesLine is one flow's binned series.
type seriesLine struct {
	name   string
	index  int // the flow's index: its colour in every panel
	xs, ys []float64
	lo, hi []float64 // the band (seriesSpec.band), per bin; nil without
}

// runLines bins the series of the flows of r that sp picks.
func runLines(r *report.Run, sp seriesSpec) (lines []seriesLine, capacity *seriesLine) {
	var t []float64
	for i := range r.Flows {
		f := &r.Flows[i]
		if f.Series == nil {
			continue
		}
		t = f.Series.T
		if !sp.pick(f) {
			continue
		}
		xs, ys := f.Series.T, sp.field(f.Series)
		l := seriesLine{name: f.Name + " (" + f.Kind + ")", index: i}
		if sp.binS > 0 {
			l.xs, l.ys = binMeans(xs, ys, sp.binS)
			if sp.band {
				_, l.lo, l.hi = binRanges(xs, ys, sp.binS)
			}
		} else {
			l.xs, l.ys = xs, ys
		}
		if !slices.ContainsFunc(l.ys, func(y float64) bool { return !math.IsNaN(y) && !math.IsInf(y, 0) }) {
			continue
		}
		lines = append(lines, l)
	}
	if sp.capacity && len(lines) > 0 && len(r.CapacityBps) > 0 && len(t) > 0 {
		xs, ys := t, r.CapacityBps
		if sp.binS > 0 {
			xs, ys = binMeans(xs, ys, sp.binS)
		}
		capacity = &seriesLine{name: "forward link capacity", xs: xs, ys: ys}
	}
	return lines, capacity
}

// seriesFigure draws one Series field of every run: one line per run
// (labelled with its controller) if each run has at most one line, else
// one panel per run with a line per flow; every panel on the same x and y
// ranges. nil if nothing has samples.
func seriesFigure(title, subtitle string, runs []*report.Run, sp seriesSpec) (*Figure, error) {
	g := binRuns(runs, sp)
	if !g.anyLine {
		return nil, nil
	}
	return layOut(&Figure{title: title, subtitle: subtitle}, runs, g.overlay, g)
}

// layout is how a figure draws its runs: on one axes, a line per run, or
// a panel per run.
type layout interface {
	overlayPanel(runs []*report.Run) ([]*plot.Plot, error)
	stackedPanels(runs []*report.Run) ([]*plot.Plot, error)
}

// layOut puts the panels of runs on f: one axes if overlay, else a panel
// per run.
func layOut(f *Figure, runs []*report.Run, overlay bool, l layout) (*Figure, error) {
	var err error
	if overlay {
		f.panels, err = l.overlayPanel(runs)
	} else {
		f.panels, err = l.stackedPanels(runs)
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// seriesRuns is the lines of every run of a series figure, binned, and
// the axes they share.
type seriesRuns struct {
	sp               seriesSpec
	lines            [][]seriesLine // per run
	caps             []*seriesLine  // per run: the link's capacity, or nil
	overlay, anyLine bool
	ylo, yhi, xmax   float64
}

// binRuns bins the lines of every run and finds the shared axes: x from 0
// to the longest run, y over every line and band, padded by 5 %.
func binRuns(runs []*report.Run, sp seriesSpec) *seriesRuns {
	g := &seriesRuns{sp: sp, lines: make([][]seriesLine, len(runs)), caps: make([]*seriesLine, len(runs)), overlay: true}
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, r := range runs {
		g.lines[i], g.caps[i] = runLines(r, sp)
		g.overlay = g.overlay && len(g.lines[i]) <= 1 && !sp.panels
		g.anyLine = g.anyLine || len(g.lines[i]) > 0
		for _, l := range append(slices.Clone(g.lines[i]), derefLines(g.caps[i])...) {
			for _, ys := range [][]float64{l.ys, l.lo, l.hi} {
				for k, y := range ys {
					if !math.IsNaN(y) && !math.IsInf(y, 0) {
						lo, hi = min(lo, y/sp.scale), max(hi, y/sp.scale)
						g.xmax = max(g.xmax, l.xs[k])
					}
				}
			}
		}
		g.xmax = max(g.xmax, r.DurationS)
	}
	g.ylo, g.yhi = lo-(hi-lo)*0.05, hi+(hi-lo)*0.05
	if sp.zeroY || g.ylo < 0 {
		g.ylo = 0
	}
	if g.yhi <= g.ylo {
		g.yhi = g.ylo + 1
	}
	return g
}

// axes sets p's ranges to the shared ones.
func (g *seriesRuns) axes(p *plot.Plot) {
	p.X.Min, p.X.Max = 0, g.xmax
	p.Y.Min, p.Y.Max = g.ylo, g.yhi
}

// drawCapacity draws the link's capacity c (nil: none) under the lines,
// named in the legend if named.
func (g *seriesRuns) drawCapacity(p *plot.Plot, c *seriesLine, named bool) error {
	if c == nil {
		return nil
	}
	name := ""
	if named {
		name = c.name
	}
	_, err := addLine(p, name, func(l *plotter.Line) { l.Color, l.Width = capacityColor, vg.Points(1) }, c.xs, c.ys, g.sp.scale)
	return err
}

// line draws l in style st, over its band if it has one; of names the
// line in an error.
func (g *seriesRuns) line(p *plot.Plot, name string, st lineStyle, l seriesLine, of string) error {
	if l.lo != nil {
		if err := addBand(p, plotutil.Color(st.index), l.xs, l.lo, l.hi, g.sp.scale); err != nil {
			return err
		}
	}
	if _, err := addLine(p, name, st.apply, l.xs, l.ys, g.sp.scale); err != nil {
		return fmt.Errorf("%s: %s: %w", g.sp.what, of, err)
	}
	return nil
}

// overlayPanel is one axes with a line per run, in the run's colour,
// named by its controller (or, with one run, by the flow).
func (g *seriesRuns) overlayPanel(runs []*report.Run) ([]*plot.Plot, error) {
	p := panelPlot("", "time [s]", g.sp.ylabel)
	for i := range runs {
		if g.caps[i] != nil {
			if err := g.drawCapacity(p, g.caps[i], true); err != nil {
				return nil, err
			}
			break // the runs of one scenario share a seed: one capacity
		}
	}
	for i, r := range runs {
		for _, l := range g.lines[i] {
			name := r.CC
			if len(runs) == 1 {
				name = l.name // one run: name the flow
			}
			if err := g.line(p, name, lineStyle{index: i}, l, r.CC); err != nil {
				return nil, err
			}
		}
	}
	g.axes(p)
	return []*plot.Plot{p}, nil
}

// stackedPanels is a panel per run, a line per flow in the flow's colour
// (the controller's where every panel has one line), the flows named in
// the first panel's legend.
func (g *seriesRuns) stackedPanels(runs []*report.Run) ([]*plot.Plot, error) {
	single := true
	for _, ls := range g.lines {
		single = single && len(ls) <= 1
	}
	var panels []*plot.Plot
	for i, r := range runs {
		p := panelPlot("cc "+r.CC, "time [s]", g.sp.ylabel)
		if i < len(runs)-1 {
			p.X.Label.Text = ""
		}
		if err := g.drawCapacity(p, g.caps[i], i == 0); err != nil {
			return nil, err
		}
		for _, l := range g.lines[i] {
			st := lineStyle{index: l.index, dashed: g.sp.dashed && len(g.lines[i]) > 1}
			if single {
				st.index = i // one line a panel: the controller's colour, as on the other figures
			}
			name := l.name
			if single || i > 0 {
				// One line a panel: the panel's title says it all; and
				// the flows are those of the first panel, in the same
				// colours.
				name = ""
			}
			if err := g.line(p, name, st, l, l.name); err != nil {
				return nil, err
			}
		}
		g.axes(p)
		panels = append(panels, p)
	}
	return panels, nil
}

func derefLines(l *seriesLine) []seriesLine {
	if l == nil {
		return nil
	}
	return []seriesLine{*l}
}

func allFlows(*report.Flow) bool      { return true }
func bulkFlows(f *report.Flow) bool   { return f.Kind == scenario.KindBulk }
func updateFlows(f *report.Flow) bool { return f.AgeMs != nil || isUpdateKind(f.Kind) }

func isUpdateKind(k string) bool {
	return k == scenario.KindACP || k == scenario.KindFixed || k == scenario.KindLazy
}

// Bins of the time series, seconds. Goodput per 100 ms sample is too
// bursty to read (a retransmission that fills a hole delivers a window at
// once): 1 s means, as Pantheon's throughput plots bin.
const throughputBinS = 1.0

// stateBin is the bin of the delay, window and age series: the series are
// 100 ms samples (delay: the mean of the packets delivered in each 100 ms,
// not a packet's own), and a figure 700 pixels wide shows a line of 1000
// samples (100 s) as a solid zigzag. So the line is the mean of bins
// sized for about 200 across the run (100 ms up to 20 s, 0.5 s for 100 s),
// and the band under it the range of the samples in each bin.
func stateBin(runs []*report.Run) float64 {
	d := 0.0
	for _, r := range runs {
		d = max(d, r.DurationS)
	}
	raw := d / 200
	for _, b := range []float64{0.1, 0.2, 0.25, 0.5, 1, 2, 2.5, 5, 10} {
		if b >= raw {
			return b
		}
	}
	return 10
}

// binWhat says how a series figure is binned, for its title.
func binWhat(what string, bin float64) string {
	return fmt.Sprintf("%s (%s s means, band: range of the 100 ms samples)", what, tickLabel(bin))
}

// throughputSpec is the goodput figure's spec, in Mbit/s or, when every
// flow stays below 1 Mbit/s, kbit/s.
func throughputSpec(runs []*report.Run) seriesSpec {
	peak := 0.0
	for _, r := range runs {
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
	}
	scale, unit := 1e6, "Mbit/s"
	if peak < 1e6 {
		scale, unit = 1e3, "kbit/s"
	}
	return seriesSpec{
		what: "throughput (1 s means)", ylabel: "goodput [" + unit + "]", scale: scale, zeroY: true,
		binS: throughputBinS, capacity: true, pick: allFlows, field: func(s *report.Series) []float64 { return s.GoodputBps },
	}
}

func owdSpec(runs []*report.Run) seriesSpec {
	bin := stateBin(runs)
	return seriesSpec{
		what: binWhat("one-way delay", bin), ylabel: "one-way delay [ms]", scale: 1, dashed: true, binS: bin, band: true, panels: true,
		pick: allFlows, field: func(s *report.Series) []float64 { return s.OWDms },
	}
}

func cwndSpec(runs []*report.Run) seriesSpec {
	bin := stateBin(runs)
	return seriesSpec{
		what: binWhat("congestion window", bin), ylabel: "cwnd [kB]", scale: 1e3, zeroY: true, binS: bin, band: true,
		pick: bulkFlows, field: func(s *report.Series) []float64 { return s.CwndBytes },
	}
}

func ageSpec(runs []*report.Run) seriesSpec {
	bin := stateBin(runs)
	return seriesSpec{
		what: binWhat("age of information", bin), ylabel: "age at the monitor [ms]", scale: 1, zeroY: true, binS: bin, band: true,
		pick: updateFlows, field: func(s *report.Series) []float64 { return s.AgeMs },
	}
}

// specFigure draws spec(runs) for every run of s.
func specFigure(spec func([]*report.Run) seriesSpec) func(*scenario.Scenario, []*report.Run) (*Figure, error) {
	return func(s *scenario.Scenario, runs []*report.Run) (*Figure, error) {
		sp := spec(runs)
		return seriesFigure(scenarioTitle(s, sp.what), s.DescribePaths(), runs, sp)
	}
}

var (
	throughputFigure = specFigure(throughputSpec)
	owdFigure        = specFigure(owdSpec)
	cwndFigure       = specFigure(cwndSpec)
	ageFigure        = specFigure(ageSpec)
)

// runPlot draws one run's figure of sp as a single plot (the path in its
// title): the per-run plots "freshbench results" writes.
func runPlot(r *report.Run, sp seriesSpec) (*plot.Plot, error) {
	f, err := seriesFigure("", "", []*report.Run{r}, sp)
	if err != nil || f == nil {
		return nil, err
	}
	p := f.panels[0]
	p.Title.Text = runTitle(r, sp.what)
	p.Title.TextStyle.Font.Size = vg.Points(titleSize)
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text = "time [s]"
	return p, nil
}

// runTitle is a one-run plot's title: scenario, controller, what, and the
// path on a second line.
func runTitle(r *report.Run, what string) string {
	t := fmt.Sprintf("%s, cc %s: %s", r.Scenario, r.CC, what)
	if r.Path != "" {
		t += "\n" + r.Path
	}
	return t
}

// RunThroughput is one run's goodput over time, RunOWD its one-way delay
// and RunCwnd its bulk flows' windows: the per-run plots of RESULTS.md.
func RunThroughput(r *report.Run) (*plot.Plot, error) {
	return runPlot(r, throughputSpec([]*report.Run{r}))
}

// RunOWD: see RunThroughput.
func RunOWD(r *report.Run) (*plot.Plot, error) { return runPlot(r, owdSpec([]*report.Run{r})) }

// RunCwnd: see RunThroughput.
func RunCwnd(r *report.Run) (*plot.Plot, error) { return runPlot(r, cwndSpec([]*report.Run{r})) }
