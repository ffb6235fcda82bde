package report

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSummarize(t *testing.T) {
	require.Equal(t, Stats{}, Summarize(nil))
	xs := []float64{}
	for i := 100; i >= 1; i-- { // unsorted on purpose
		xs = append(xs, float64(i))
	}
	s := Summarize(xs)
	require.Equal(t, 50.5, s.Mean)
	require.Equal(t, 50.0, s.P50, "nearest rank: ceil(0.5·100) = 50th")
	require.Equal(t, 95.0, s.P95)
	require.Equal(t, 99.0, s.P99)
}

func TestPercentileEdges(t *testing.T) {
	require.Zero(t, Percentile(nil, 0.5))
	require.Equal(t, 7.0, Percentile([]float64{7}, 0))
	require.Equal(t, 7.0, Percentile([]float64{7}, 1))
}

func TestJain(t *testing.T) {
	require.Equal(t, 1.0, Jain([]float64{5, 5, 5, 5}))
	require.Equal(t, 0.25, Jain([]float64{10, 0, 0, 0}), "one takes all: 1/n")
	require.Equal(t, 1.0, Jain([]float64{3}))
	require.Equal(t, 1.0, Jain([]float64{0, 0}))
	require.Equal(t, 0.9, Jain([]float64{1, 2}), "(1+2)²/(2·5)")
}
