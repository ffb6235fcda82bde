package main

import (
	"bytes"
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

	"github.com/fresh-udp/fresh/bench/report"
)

var pngMagic = []byte("\x89PNG\r\n\x1a\n")

func requirePNG(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err, path)
	require.Greater(t, len(b), 1000, path)
	require.True(t, bytes.HasPrefix(b, pngMagic), path)
}

// One figure per kind for the whole scenario: every controller on it.
func TestWritePlots(t *testing.T) {
	dir := t.TempDir()
	s, runs := fixtureRuns(t, "owd", "cubic", "reno")
	wrote, err := writePlots(dir, s, runs)
	require.NoError(t, err)
	var want []string
	for _, kind := range []string{"throughput", "owd", "cwnd", "age", "cdf", "summary"} {
		want = append(want, filepath.Join(dir, "dumbbell-test-"+kind+".png"))
	}
	require.Equal(t, want, wrote, "it says which files it wrote")
	for _, w := range wrote {
		requirePNG(t, w)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, len(want))
}

func TestWritePlotsWithoutTraces(t *testing.T) {
	dir := t.TempDir()
	s, runs := fixtureRuns(t, "owd")
	for i := range runs[0].Flows {
		runs[0].Flows[i].Series, runs[0].Flows[i].OWDSamples = nil, nil
	}
	wrote, err := writePlots(dir, s, runs)
	require.NoError(t, err)
	require.Equal(t, []string{filepath.Join(dir, "dumbbell-test-summary.png")}, wrote)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1) // only the summary
	requirePNG(t, filepath.Join(dir, "dumbbell-test-summary.png"))
}

// Several flows a run: one panel per controller, all on the same axes,
// the path in the subtitle. One flow a run: one panel, a line per
// controller named by it.
func TestSeriesFigureLayout(t *testing.T) {
	s, runs := fixtureRuns(t, "owd", "cubic", "reno")
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
	_, runs := fixtureRuns(t, "owd")
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
	marks := []pantheonMark{
		{label: "cubic", index: 0, x: 330, y: 0.80}, {label: "reno", index: 1, x: 325, y: 0.80},
		{label: "htcp", index: 2, x: 335, y: 0.79}, {label: "owd", index: 3, x: 75, y: 0.77},
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
			require.False(t, overlaps(ml.placed[i], ml.placed[j]), "labels %s and %s overlap", marks[i].label, marks[j].label)
		}
	}
	// Lower delay is to the right: owd's label is right of cubic's.
	require.Greater(t, ml.placed[3].Min.X, ml.placed[0].Max.X)
}

func TestSummaryPoints(t *testing.T) {
	s, runs := fixtureRuns(t, "owd", "cubic")
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
	s, runs := fixtureRuns(t, "owd", "cubic")
	p, err := summaryPlot(s, runs)
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

func TestWriteSweepPlot(t *testing.T) {
	dir := t.TempDir()
	s := loadTestScenario(t)
	var out, errOut bytes.Buffer
	sum, _, err := newSimCommand(&simConfig{ACPSweep: true}, fakeSim, &out, &errOut).runSweep(s)
	require.NoError(t, err)
	require.NoError(t, writeSweepPlot(dir, sum))
	requirePNG(t, filepath.Join(dir, "dumbbell-test-sweep.png"))
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
	_, runs := fixtureRuns(t, "owd")
	runs[0].Path = "1.5 Mbit/s, RTT 100 ms, fifo 50 pkts"
	p, err := owdPlot(runs[0])
	require.NoError(t, err)
	require.Equal(t, "dumbbell-test, cc owd: one-way delay (0.1 s means, band: range of the 100 ms samples)\n1.5 Mbit/s, RTT 100 ms, fifo 50 pkts", p.Title.Text)
	path := filepath.Join(t.TempDir(), "x.png")
	require.NoError(t, savePNG(p, path))
	requirePNG(t, path)
	require.Contains(t, p.Title.Text, "\n", "savePNG leaves the title as it was")
}
