package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

var pngMagic = []byte("\x89PNG\r\n\x1a\n")

func requirePNG(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err, path)
	require.Greater(t, len(b), 1000, path)
	require.True(t, bytes.HasPrefix(b, pngMagic), path)
}

func TestWritePlots(t *testing.T) {
	dir := t.TempDir()
	s, runs := fixtureRuns(t, "owd", "cubic", "reno")
	wrote, err := writePlots(dir, s, runs)
	require.NoError(t, err)
	require.Len(t, wrote, 3*5+1, "it says which files it wrote")
	for _, cc := range []string{"owd", "cubic", "reno"} {
		for _, kind := range []string{"throughput", "owd", "cwnd", "age", "cdf"} {
			requirePNG(t, filepath.Join(dir, "dumbbell-test-"+cc+"-"+kind+".png"))
		}
	}
	requirePNG(t, filepath.Join(dir, "dumbbell-test-summary.png"))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 3*5+1)
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
