package main

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
)

// What freshbench draws. The rule of every figure: the controllers of one
// scenario are compared on one figure, on the same axes — one line per
// controller when each run has one flow to show, else one panel per
// controller with shared x and y axes — with the path in the subtitle and
// the legend inside the axes.

// cdfPoints caps the points of a delay CDF line; more are invisible.
const cdfPoints = 1000

// writePlots writes the figures of one scenario's runs into dir:
//
//	<scenario>-throughput.png  goodput over time (1 s means), link capacity
//	<scenario>-owd.png         one-way delay over time (100 ms means)
//	<scenario>-cwnd.png        window over time, bulk flows
//	<scenario>-age.png         age at the monitor over time, update flows
//	<scenario>-cdf.png         one-way delay CDF
//	<scenario>-summary.png     goodput against p95 OWD, one point per run
//
// each with every run (controller) of the scenario. The time series need
// traced runs (report.Flow.Series); a figure with nothing to draw is not
// written. It returns the paths it wrote.
func writePlots(dir string, s *scenario.Scenario, runs []*report.Run) (wrote []string, err error) {
	base := filepath.Join(dir, fileName(s.Name))
	for _, fg := range []struct {
		suffix string
		make   func(*scenario.Scenario, []*report.Run) (*figure, error)
	}{
		{"throughput", throughputFigure}, {"owd", owdFigure}, {"cwnd", cwndFigure}, {"age", ageFigure}, {"cdf", cdfFigure},
	} {
		f, err := fg.make(s, runs)
		if err != nil {
			return wrote, fmt.Errorf("%s: %w", fg.suffix, err)
		}
		if f == nil {
			continue
		}
		path := base + "-" + fg.suffix + ".png"
		if err := f.save(path); err != nil {
			return wrote, err
		}
		wrote = append(wrote, path)
	}
	p, err := summaryPlot(s, runs)
	if err != nil || p == nil {
		return wrote, err
	}
	path := base + "-summary.png"
	if err := savePNG(p, path); err != nil {
		return wrote, err
	}
	return append(wrote, path), nil
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
// integer multiples; gonum/plot's LogTicks labels only powers of ten. On
// a range of less than a decade, where that would leave one or two
// labels, it labels 1, 2, 3, 4, 5, 6 and 8 × 10^k.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= lo {
		return []plot.Tick{{Value: max(lo, hi), Label: tickLabel(max(lo, hi))}}
	}
	labelled := map[float64]bool{1: true, 2: true, 5: true}
	if hi/lo < 10 {
		labelled = map[float64]bool{1: true, 2: true, 3: true, 4: true, 5: true, 6: true, 8: true}
	}
	var ts []plot.Tick
	for dec := math.Pow(10, math.Floor(math.Log10(lo))); dec <= hi; dec *= 10 {
		for m := 1.0; m < 10; m++ {
			v := roundSig(m*dec, 6)
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if labelled[m] {
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
	p.Title.TextStyle.Font.Size = vg.Points(titleSize)
	p.Title.Padding = vg.Points(6)
	p.X.Tick.Marker, p.Y.Tick.Marker = linearTicks{}, linearTicks{}
	p.Add(plotter.NewGrid())
	return p
}

// panelPlot is one panel of a stack: a small title (the controller).
func panelPlot(title, x, y string) *plot.Plot {
	p := newPlot(title, x, y)
	p.Title.TextStyle.Font.Size = vg.Points(subSize + 1)
	p.Title.Padding = vg.Points(2)
	return p
}

// lineStyle tells lines apart by colour; dashed adds dash patterns, for
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

// capacityColor draws a link's capacity: grey, behind the flows.
var capacityColor = color.Gray{Y: 150}

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

// seriesFigure draws one Series field of every run of s: one line per
// run (labelled with its controller) if each run has at most one line,
// else one panel per run with a line per flow; every panel on the same x
// and y ranges. nil if nothing has samples.
func seriesFigure(title, subtitle string, runs []*report.Run, sp seriesSpec) (*figure, error) {
	all := make([][]seriesLine, len(runs))
	caps := make([]*seriesLine, len(runs))
	overlay, anyLine := true, false
	lo, hi, xmax := math.Inf(1), math.Inf(-1), 0.0
	for i, r := range runs {
		all[i], caps[i] = runLines(r, sp)
		overlay = overlay && len(all[i]) <= 1 && !sp.panels
		anyLine = anyLine || len(all[i]) > 0
		for _, l := range append(slices.Clone(all[i]), derefLines(caps[i])...) {
			for _, ys := range [][]float64{l.ys, l.lo, l.hi} {
				for k, y := range ys {
					if !math.IsNaN(y) && !math.IsInf(y, 0) {
						lo, hi = min(lo, y/sp.scale), max(hi, y/sp.scale)
						xmax = max(xmax, l.xs[k])
					}
				}
			}
		}
		xmax = max(xmax, r.DurationS)
	}
	if !anyLine {
		return nil, nil
	}
	ylo, yhi := lo-(hi-lo)*0.05, hi+(hi-lo)*0.05
	if sp.zeroY || ylo < 0 {
		ylo = 0
	}
	if yhi <= ylo {
		yhi = ylo + 1
	}
	f := &figure{title: title, subtitle: subtitle}
	axes := func(p *plot.Plot) {
		p.X.Min, p.X.Max = 0, xmax
		p.Y.Min, p.Y.Max = ylo, yhi
	}
	drawCapacity := func(p *plot.Plot, c *seriesLine, named bool) error {
		if c == nil {
			return nil
		}
		name := ""
		if named {
			name = c.name
		}
		_, err := addLine(p, name, func(l *plotter.Line) { l.Color, l.Width = capacityColor, vg.Points(1) }, c.xs, c.ys, sp.scale)
		return err
	}
	if overlay {
		p := panelPlot("", "time [s]", sp.ylabel)
		for i := range runs {
			if caps[i] != nil {
				if err := drawCapacity(p, caps[i], true); err != nil {
					return nil, err
				}
				break // the runs of one scenario share a seed: one capacity
			}
		}
		for i, r := range runs {
			for _, l := range all[i] {
				st := lineStyle{index: i}
				if l.lo != nil {
					if err := addBand(p, plotutil.Color(st.index), l.xs, l.lo, l.hi, sp.scale); err != nil {
						return nil, err
					}
				}
				name := r.CC
				if len(runs) == 1 {
					name = l.name // one run: name the flow
				}
				if _, err := addLine(p, name, st.apply, l.xs, l.ys, sp.scale); err != nil {
					return nil, fmt.Errorf("%s: %s: %w", sp.what, r.CC, err)
				}
			}
		}
		axes(p)
		f.panels = []*plot.Plot{p}
		return f, nil
	}
	single := true
	for _, ls := range all {
		single = single && len(ls) <= 1
	}
	for i, r := range runs {
		p := panelPlot("cc "+r.CC, "time [s]", sp.ylabel)
		if i < len(runs)-1 {
			p.X.Label.Text = ""
		}
		if err := drawCapacity(p, caps[i], i == 0); err != nil {
			return nil, err
		}
		for _, l := range all[i] {
			st := lineStyle{index: l.index, dashed: sp.dashed && len(all[i]) > 1}
			if single {
				st.index = i // one line a panel: the controller's colour, as on the other figures
			}
			if l.lo != nil {
				if err := addBand(p, plotutil.Color(st.index), l.xs, l.lo, l.hi, sp.scale); err != nil {
					return nil, err
				}
			}
			name := l.name
			if single || i > 0 {
				// One line a panel: the panel's title says it all; and
				// the flows are those of the first panel, in the same
				// colours.
				name = ""
			}
			if _, err := addLine(p, name, st.apply, l.xs, l.ys, sp.scale); err != nil {
				return nil, fmt.Errorf("%s: %s: %w", sp.what, l.name, err)
			}
		}
		axes(p)
		f.panels = append(f.panels, p)
	}
	return f, nil
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

// scenarioTitle is the title of a figure of s's runs.
func scenarioTitle(s *scenario.Scenario, what string) string { return s.Name + ": " + what }

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
func specFigure(spec func([]*report.Run) seriesSpec) func(*scenario.Scenario, []*report.Run) (*figure, error) {
	return func(s *scenario.Scenario, runs []*report.Run) (*figure, error) {
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

func throughputPlot(r *report.Run) (*plot.Plot, error) {
	return runPlot(r, throughputSpec([]*report.Run{r}))
}
func owdPlot(r *report.Run) (*plot.Plot, error)  { return runPlot(r, owdSpec([]*report.Run{r})) }
func cwndPlot(r *report.Run) (*plot.Plot, error) { return runPlot(r, cwndSpec([]*report.Run{r})) }

// cdfFigure draws the empirical CDF of the per-packet one-way delay: one
// line per run if each has one flow with samples, else a panel per run;
// the x axis ends at the largest 99th percentile of any line, so one
// run's tail does not squeeze the others into the left edge.
func cdfFigure(s *scenario.Scenario, runs []*report.Run) (*figure, error) {
	type cdfLine struct {
		name  string
		index int
		xys   plotter.XYs
	}
	all := make([][]cdfLine, len(runs))
	overlay, any := true, false
	xlo, xhi := math.Inf(1), 0.0
	for i, r := range runs {
		for j, f := range r.Flows {
			xys := cdfXYs(f.OWDSamples, cdfPoints)
			if len(xys) == 0 {
				continue
			}
			all[i] = append(all[i], cdfLine{name: f.Name + " (" + f.Kind + ")", index: j, xys: xys})
			xlo = min(xlo, xys[0].X)
			for _, xy := range xys {
				if xy.Y >= 0.99 {
					xhi = max(xhi, xy.X)
					break
				}
			}
		}
		overlay = overlay && len(all[i]) <= 1
		any = any || len(all[i]) > 0
	}
	if !any {
		return nil, nil
	}
	f := &figure{title: scenarioTitle(s, "one-way delay CDF (to the largest p99)"), subtitle: s.DescribePaths()}
	pad := (xhi - xlo) * 0.03
	axes := func(p *plot.Plot) {
		p.X.Min, p.X.Max = max(xlo-pad, 0), xhi+pad
		p.Y.Min, p.Y.Max = 0, 1
	}
	add := func(p *plot.Plot, name string, st lineStyle, xys plotter.XYs) error {
		l, err := plotter.NewLine(xys)
		if err != nil {
			return fmt.Errorf("cdf of %s: %w", name, err)
		}
		st.apply(l)
		p.Add(l)
		p.Legend.Add(name, l)
		return nil
	}
	if overlay {
		p := panelPlot("", "one-way delay [ms]", "fraction of packets")
		for i, r := range runs {
			for _, l := range all[i] {
				if err := add(p, r.CC, lineStyle{index: i}, l.xys); err != nil {
					return nil, err
				}
			}
		}
		axes(p)
		f.panels = []*plot.Plot{p}
		return f, nil
	}
	for i, r := range runs {
		p := panelPlot("cc "+r.CC, "one-way delay [ms]", "fraction of packets")
		if i < len(runs)-1 {
			p.X.Label.Text = ""
		}
		for _, l := range all[i] {
			if err := add(p, l.name, lineStyle{index: l.index, dashed: true}, l.xys); err != nil {
				return nil, err
			}
		}
		axes(p)
		f.panels = append(f.panels, p)
	}
	return f, nil
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

// summaryPlot is Pantheon's throughput–delay plot: goodput (up, from 0)
// against p95 one-way delay on a logarithmic x axis, inverted so that
// better is up and to the right, one point per controller, each with its
// own colour and marker and its name written beside it; nil without bulk
// flows. On a fixed-rate path goodput is a fraction of the forward link's
// capacity (payload, so headers keep even a full link a few percent below
// 1); on a trace or a rate walk, whose capacity moves, it is in Mbit/s.
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
	title := s.Name + ": goodput vs. delay (better: up and right)\n" + s.DescribePaths()
	p := newPlot(title, "p95 one-way delay [ms] (log, inverted)", ylabel)
	marks := make([]pantheonMark, len(pts))
	for i, pt := range pts {
		marks[i] = pantheonMark{label: pt.CC, index: i, x: pt.OWDp95Ms, y: pt.GoodputBps / capacity}
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

// pantheonMark is one controller's point of a throughput–delay plot.
type pantheonMark struct {
	label string
	index int     // colour and marker
	x, y  float64 // delay (ms), throughput
}

// addPantheonMarks draws big marks with their labels beside them, and the
// small ones (one per seed, say) under them in the same colours, faint. It
// returns the labels' plotter.
func addPantheonMarks(p *plot.Plot, marks, small []pantheonMark) (*markLabels, error) {
	for _, m := range small {
		sc, err := plotter.NewScatter(plotter.XYs{{X: m.x, Y: m.y}})
		if err != nil {
			return nil, err
		}
		c := color.NRGBAModel.Convert(plotutil.Color(m.index)).(color.NRGBA)
		c.A = 120
		sc.GlyphStyle = draw.GlyphStyle{Shape: plotutil.Shape(m.index), Radius: vg.Points(2.5), Color: c}
		p.Add(sc)
	}
	labels := newMarkLabels(vg.Points(6))
	for _, m := range marks {
		sc, err := plotter.NewScatter(plotter.XYs{{X: m.x, Y: m.y}})
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle = draw.GlyphStyle{Shape: plotutil.Shape(m.index), Radius: vg.Points(6), Color: plotutil.Color(m.index)}
		p.Add(sc)
		p.Legend.Add(m.label, sc)
		labels.add(m.x, m.y, m.label, plotutil.Color(m.index))
	}
	p.Add(labels)
	return labels, nil
}

// markRange is the range of the marks' coordinates.
func markRange(marks, small []pantheonMark) (xlo, xhi, ylo, yhi float64) {
	xlo, ylo = math.Inf(1), math.Inf(1)
	for _, m := range append(slices.Clone(marks), small...) {
		if m.x > 0 {
			xlo, xhi = min(xlo, m.x), max(xhi, m.x)
		}
		ylo, yhi = min(ylo, m.y), max(yhi, m.y)
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
