// Package plots draws the benchmark's figures as PNG files: per scenario,
// every run (controller) on one figure of each kind — goodput, one-way
// delay, window and age over time, the delay CDF, and Pantheon's
// throughput–delay summary (Yan et al., "Pantheon: the training ground
// for Internet congestion-control research", USENIX ATC 2018) — and the
// figures of the reports: the ACP sweep, the cellular traces, a peers
// comparison, a latency CDF.
//
// The rule of every figure: the controllers of one scenario are compared
// on one figure, on the same axes — one line per controller when each run
// has one flow to show, else one panel per controller with shared x and y
// axes — with the path in the subtitle and the legend inside the axes.
package plots

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
)

// cdfPoints caps the points of a delay CDF line; more are invisible.
const cdfPoints = 1000

// WriteScenario writes the figures of one scenario's runs into dir:
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
func WriteScenario(dir string, s *scenario.Scenario, runs []*report.Run) (wrote []string, err error) {
	base := filepath.Join(dir, FileName(s.Name))
	for _, fg := range []struct {
		suffix string
		make   func(*scenario.Scenario, []*report.Run) (*Figure, error)
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
		if err := f.Save(path); err != nil {
			return wrote, err
		}
		wrote = append(wrote, path)
	}
	p, err := Summary(s, runs)
	if err != nil || p == nil {
		return wrote, err
	}
	path := base + "-summary.png"
	if err := SavePNG(p, path); err != nil {
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
			v := report.RoundSig(m*dec, 6)
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
	return strconv.FormatFloat(report.RoundSig(v, 6), 'g', -1, 64)
}

// FileName keeps letters, digits, '.', '_' and '-' of name: a scenario's
// or a controller's name in a file name.
func FileName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '_'
	}, name)
}

// Link is how a Markdown file at md links file in the figures' directory
// dir: relative to the Markdown file's directory, or dir/file for a
// Markdown file written to stdout ("-").
func Link(md, dir, file string) string {
	if md == "-" {
		return filepath.ToSlash(filepath.Join(dir, file))
	}
	r, err := filepath.Rel(filepath.Dir(md), filepath.Join(dir, file))
	if err != nil {
		return filepath.ToSlash(filepath.Join(dir, file))
	}
	return filepath.ToSlash(r)
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

// scenarioTitle is the title of a figure of s's runs.
func scenarioTitle(s *scenario.Scenario, what string) string { return s.Name + ": " + what }
