package plots

import (
	"image/color"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/fresh-udp/fresh/bench/internal/benchtest"
	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/bench/sim"
	"github.com/fresh-udp/fresh/bench/sweep"
)

// One figure per kind for the whole scenario: every controller on it.
func TestWritePlots(t *testing.T) {
	dir := t.TempDir()
	s, runs := benchtest.Runs(t, "owd", "cubic", "reno")
	wrote, err := WriteScenario(dir, s, runs)
	require.NoError(t, err)
	var want []string
	for _, kind := range []string{"throughput", "owd", "cwnd", "age", "cdf", "summary"} {
		want = append(want, filepath.Join(dir, "dumbbell-test-"+kind+".png"))
	}
	require.Equal(t, want, wrote, "it says which files it wrote")
	for _, w := range wrote {
		benchtest.RequirePNG(t, w)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, len(want))
}

func TestWritePlotsWithoutTraces(t *testing.T) {
	dir := t.TempDir()
	s, runs := benchtest.Runs(t, "owd")
	for i := range runs[0].Flows {
		runs[0].Flows[i].Series, runs[0].Flows[i].OWDSamples = nil, nil
	}
	wrote, err := WriteScenario(dir, s, runs)
	require.NoError(t, err)
	require.Equal(t, []string{filepath.Join(dir, "dumbbell-test-summary.png")}, wrote)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1) // only the summary
	benchtest.RequirePNG(t, filepath.Join(dir, "dumbbell-test-summary.png"))
}

// Several flows a run: one panel per controller, all on the same axes,
// the path in the subtitle. One flow a run: one panel, a line per
// controller named by it.
func TestSeriesFigureLayout(t *testing.T) {
	s, runs := benchtest.Runs(t, "owd", "cubic", "reno")
	f, err := throughputFigure(s, runs)
	require.NoError(t, err)
	require.Len(t, f.panels, 3, "four flows a run: a panel per controller")
	require.Equal(t, s.DescribePaths(), f.subtitle)
	require.Contains(t, f.subtitle, "1.5 Mbit/s, RTT 100 ms, fifo 50 pkts")
	for _, p := range f.panels[1:] {
		require.Equal(t, f.panels[0].Y.Min, p.Y.Min, "shared y axis")
		require.Equal(t, f.panels[0].Y.Max, p.Y.Max)
		require.Equal(t, f.panels[0].X.Max, p.X.Max, "shared x axis")
	}
	require.Equal(t, "cc cubic", f.panels[1].Title.Text)

	// Keep only the bulk flow: one line a run, all on one axes.
	for _, r := range runs {
		r.Flows = r.Flows[:1]
	}
	f, err = throughputFigure(s, runs)
	require.NoError(t, err)
	require.Len(t, f.panels, 1)
	// The delay figure keeps a panel per controller even then: spiky
	// lines would hide each other.
	f, err = owdFigure(s, runs)
	require.NoError(t, err)
	require.Len(t, f.panels, 3)
}

// The forward link's capacity is drawn under the throughput lines when
// the run recorded it, on the same scale.
func TestThroughputFigureDrawsCapacity(t *testing.T) {
	_, runs := benchtest.Runs(t, "owd")
	r := runs[0]
	lines, capacity := runLines(r, throughputSpec(runs))
	require.NotEmpty(t, lines)
	require.Nil(t, capacity, "no capacity recorded")
	r.CapacityBps = make([]float64, len(r.Flows[0].Series.T))
	for i := range r.CapacityBps {
		r.CapacityBps[i] = 3e6
	}
	_, capacity = runLines(r, throughputSpec(runs))
	require.NotNil(t, capacity)
	require.Equal(t, "forward link capacity", capacity.name)
	for _, y := range capacity.ys {
		require.Equal(t, 3e6, y)
	}
}

// The legend goes to the corner with the least data.
func TestLegendAvoidsData(t *testing.T) {
	p := newPlot("", "x", "y")
	// A line along the top: the legend must go to the bottom.
	l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 9.5}, {X: 10, Y: 9.5}, {X: 10, Y: 9}, {X: 0, Y: 9}})
	require.NoError(t, err)
	l.Color, l.Width = color.RGBA{R: 200, A: 255}, vg.Points(20)
	p.Add(l)
	p.Legend.Add("a line", l)
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 10, 0, 10
	img := vgimg.NewWith(vgimg.UseWH(plotWidth, plotHeight), vgimg.UseDPI(vgimg.DefaultDPI))
	dc := draw.New(img)
	leg := p.Legend
	p.Legend = plot.NewLegend()
	p.Draw(dc)
	data := p.DataCanvas(dc)
	top := vg.Rectangle{Min: vg.Point{X: data.Min.X, Y: data.Max.Y - 30}, Max: data.Max}
	bottom := vg.Rectangle{Min: data.Min, Max: vg.Point{X: data.Max.X, Y: data.Min.Y + 30}}
	topInk := inkIn(img, top)
	require.Greater(t, topInk, 1000, "the line is at the top")
	require.Zero(t, inkIn(img, bottom))
	drawLegendInside(img, p, dc, leg)
	require.Greater(t, inkIn(img, bottom), 0, "the legend went to the bottom, inside the axes")
	require.Equal(t, topInk, inkIn(img, top), "and not over the line")
}

// Labels beside close marks do not overlap.
func TestMarkLabelsDoNotOverlap(t *testing.T) {
	p := newPlot("", "delay", "throughput")
	marks := []Mark{
		{Label: "cubic", Index: 0, X: 330, Y: 0.80}, {Label: "reno", Index: 1, X: 325, Y: 0.80},
		{Label: "htcp", Index: 2, X: 335, Y: 0.79}, {Label: "owd", Index: 3, X: 75, Y: 0.77},
	}
	ml, err := addPantheonMarks(p, marks, nil)
	require.NoError(t, err)
	xlo, xhi, _, yhi := markRange(marks, nil)
	setPantheonAxes(p, xlo, xhi, yhi)
	img := vgimg.NewWith(vgimg.UseWH(plotWidth, plotHeight), vgimg.UseDPI(vgimg.DefaultDPI))
	p.Draw(draw.New(img))
	require.Len(t, ml.placed, 4)
	for i := range ml.placed {
		for j := range i {
			require.False(t, overlaps(ml.placed[i], ml.placed[j]), "labels %s and %s overlap", marks[i].Label, marks[j].Label)
		}
	}
	// Lower delay is to the right: owd's label is right of cubic's.
	require.Greater(t, ml.placed[3].Min.X, ml.placed[0].Max.X)
}

func TestSummaryPoints(t *testing.T) {
	s, runs := benchtest.Runs(t, "owd", "cubic")
	pts := summaryPoints(s, runs)
	require.Len(t, pts, 2)
	// Only the unpinned bulk flow counts: flow 0.
	require.Equal(t, "owd", pts[0].CC)
	require.Equal(t, runs[0].Flows[0].GoodputBps, pts[0].GoodputBps)
	require.Equal(t, runs[0].Flows[0].OWDms.P95, pts[0].OWDp95Ms)

	// All pinned: all bulk flows count.
	s.Flows[0].Pin = true
	pts = summaryPoints(s, runs)
	require.InDelta(t, (runs[0].Flows[0].GoodputBps+runs[0].Flows[1].GoodputBps)/2, pts[0].GoodputBps, 1e-9)
}

// The summary's delay axis is logarithmic and inverted, as Pantheon draws it.
func TestSummaryPlotAxes(t *testing.T) {
	s, runs := benchtest.Runs(t, "owd", "cubic")
	p, err := Summary(s, runs)
	require.NoError(t, err)
	require.Equal(t, plot.InvertedScale{Normalizer: plot.LogScale{}}, p.X.Scale)
	require.Less(t, p.X.Norm(100), p.X.Norm(50), "lower delay to the right")
	require.Contains(t, p.Title.Text, "\n"+s.DescribePaths())
}

func TestLogTicks(t *testing.T) {
	labels := func(lo, hi float64) []string {
		var out []string
		for _, tk := range (logTicks{}).Ticks(lo, hi) {
			if tk.Label != "" {
				out = append(out, tk.Label)
			}
		}
		return out
	}
	require.Equal(t, []string{"10", "20", "50", "100", "200", "500"}, labels(10, 900))
	require.Equal(t, []string{"60", "80", "100", "200", "300", "400"}, labels(55, 450), "less than a decade: more labels")
	require.NotEmpty(t, (logTicks{}).Ticks(0, 10), "a bad range still gives a tick")
}

func TestCDFXYs(t *testing.T) {
	require.Nil(t, cdfXYs(nil, 10))
	xys := cdfXYs([]float64{3, 1, 2, 4}, 10)
	require.Len(t, xys, 5)
	require.Equal(t, 1.0, xys[0].X)
	require.Equal(t, 0.0, xys[0].Y)
	require.Equal(t, 4.0, xys[4].X)
	require.Equal(t, 1.0, xys[4].Y)
	many := make([]float64, 10000)
	for i := range many {
		many[i] = float64(i)
	}
	xys = cdfXYs(many, 100)
	require.Len(t, xys, 101)
	require.Equal(t, 1.0, xys[100].Y)
}

func TestWriteSweep(t *testing.T) {
	dir := t.TempDir()
	s := benchtest.LoadScenario(t)
	sum, _, err := sweep.Run(s, []int64{1, 2}, func(v *scenario.Scenario, label string, _ func(float64)) (*report.Run, error) {
		return benchtest.Sim(v, sim.Options{})
	}, nil)
	require.NoError(t, err)
	require.NoError(t, WriteSweep(dir, sum))
	benchtest.RequirePNG(t, filepath.Join(dir, "dumbbell-test-sweep.png"))

	// Nothing measured: nothing drawn.
	empty := t.TempDir()
	require.NoError(t, WriteSweep(empty, &sweep.Summary{Scenario: "none", Points: []sweep.Point{{RateHz: 1}}}))
	entries, err := os.ReadDir(empty)
	require.NoError(t, err)
	require.Empty(t, entries)
}

func TestBinRanges(t *testing.T) {
	xs := []float64{0.5, 1, 1.5, 2, 2.5, 3}
	ys := []float64{1, 3, 5, math.NaN(), math.NaN(), math.NaN()}
	bx, lo, hi := binRanges(xs, ys, 1)
	require.Equal(t, []float64{0.5, 1.5, 2.5}, bx, "the bins of binMeans")
	require.Equal(t, 1.0, lo[0])
	require.Equal(t, 3.0, hi[0])
	require.Equal(t, 5.0, lo[1])
	require.True(t, math.IsNaN(lo[2]) && math.IsNaN(hi[2]), "an empty bin")
}

// The bins of the state series grow with the run so a figure shows about
// 200 of them.
func TestStateBin(t *testing.T) {
	for _, tc := range []struct{ d, want float64 }{{10, 0.1}, {20, 0.1}, {40, 0.2}, {60, 0.5}, {100, 0.5}, {300, 2}} {
		require.Equal(t, tc.want, stateBin([]*report.Run{{DurationS: tc.d}}), "%v s", tc.d)
	}
}

func TestBinMeans(t *testing.T) {
	xs := []float64{0.5, 1, 1.5, 2, 2.5, 3}
	ys := []float64{1, 3, 5, math.NaN(), math.NaN(), math.NaN()}
	bx, by := binMeans(xs, ys, 1)
	require.Equal(t, []float64{0.5, 1.5, 2.5}, bx)
	require.Equal(t, 2.0, by[0]) // (0, 1]: samples ending at 0.5 and 1
	require.Equal(t, 5.0, by[1])
	require.True(t, math.IsNaN(by[2]))
	bx, by = binMeans(nil, nil, 1)
	require.Empty(t, bx)
	require.Empty(t, by)
}

// The per-run plots of "freshbench results" carry the path in their title.
func TestRunPlotTitle(t *testing.T) {
	_, runs := benchtest.Runs(t, "owd")
	runs[0].Path = "1.5 Mbit/s, RTT 100 ms, fifo 50 pkts"
	p, err := RunOWD(runs[0])
	require.NoError(t, err)
	require.Equal(t, "dumbbell-test, cc owd: one-way delay (0.1 s means, band: range of the 100 ms samples)\n1.5 Mbit/s, RTT 100 ms, fifo 50 pkts", p.Title.Text)
	path := filepath.Join(t.TempDir(), "x.png")
	require.NoError(t, SavePNG(p, path))
	benchtest.RequirePNG(t, path)
	require.Contains(t, p.Title.Text, "\n", "savePNG leaves the title as it was")
}

// The trace figure's layout: a panel per queue side by side, on the same
// axes, the controllers named in the first panel's legend only.
func TestThroughputDelay(t *testing.T) {
	panel := func(title string, scale float64) MarkPanel {
		return MarkPanel{Title: title,
			Marks: []Mark{{Label: "owd", Index: 0, X: 60 * scale, Y: 2}, {Label: "cubic", Index: 1, X: 300 * scale, Y: 2.5}},
			Small: []Mark{{Label: "owd", Index: 0, X: 50 * scale, Y: 1.8}, {Label: "owd", Index: 0, X: 70 * scale, Y: 2.2}}}
	}
	f, err := ThroughputDelay("t", "sub", []MarkPanel{panel("fifo, 200 packets", 1), panel("codel, 200 packets", 0.5)})
	require.NoError(t, err)
	require.Equal(t, 2, f.cols)
	require.Len(t, f.panels, 2)
	require.Equal(t, "fifo, 200 packets", f.panels[0].Title.Text)
	require.Equal(t, f.panels[0].X.Min, f.panels[1].X.Min, "shared axes")
	require.Equal(t, f.panels[0].X.Max, f.panels[1].X.Max)
	require.Equal(t, f.panels[0].Y.Max, f.panels[1].Y.Max)
	require.Less(t, f.panels[0].X.Min, 25.0, "the smallest delay of any panel is on every panel")
	require.Empty(t, f.panels[1].Y.Label.Text)
	path := filepath.Join(t.TempDir(), "traces.png")
	require.NoError(t, f.Save(path))
	benchtest.RequirePNG(t, path)
}

func TestWriteLatencyCDF(t *testing.T) {
	dir := t.TempDir()
	r := &report.Run{Flows: []report.Flow{
		{Name: "tcp-nagle", WriteToRouterSamples: []float64{3, 1, 2, 40, 20}},
		{Name: "no-samples"},
	}}
	require.NoError(t, WriteLatencyCDF(dir, "tun-nagle-rtt10ms", r))
	benchtest.RequirePNG(t, filepath.Join(dir, "tun-nagle-rtt10ms-cdf.png"))
	require.Equal(t, []float64{3, 1, 2, 40, 20}, r.Flows[0].WriteToRouterSamples, "the samples are not sorted in place")
}

func TestFileName(t *testing.T) {
	require.Equal(t, "paper-rtt-90ms", FileName("paper-rtt-90ms"))
	require.Equal(t, "fixed_12.5Hz_a_b", FileName("fixed@12.5Hz a/b"))
}

func TestLink(t *testing.T) {
	require.Equal(t, "results/x.png", Link(filepath.Join("bench", "RESULTS.md"), filepath.Join("bench", "results"), "x.png"))
	require.Equal(t, "x.png", Link(filepath.Join("out", "traces.md"), "out", "x.png"))
	require.Equal(t, "../figs/x.png", Link(filepath.Join("md", "traces.md"), "figs", "x.png"))
	require.Equal(t, "bench/results/x.png", Link("-", filepath.Join("bench", "results"), "x.png"), "to stdout: the figure's own path")
}
