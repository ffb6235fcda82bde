package report

import (
	"math"
	"os"
	"path/filepath"
	"strings"
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

func TestRoundSig(t *testing.T) {
	for _, tc := range []struct{ x, want float64 }{
		{12.3456, 12.35}, {0.50001, 0.5}, {183.0542, 183.1}, {12345.6, 12350}, {0, 0}, {-2.71828, -2.718},
	} {
		require.Equal(t, tc.want, RoundSig(tc.x, 4), "%v", tc.x)
	}
	require.True(t, math.IsNaN(RoundSig(math.NaN(), 3)))
	require.True(t, math.IsInf(RoundSig(math.Inf(-1), 3), -1))
}

// The same runs give the same bytes: indented, map keys sorted, a final
// newline, no wall-clock time.
func TestMarshalStable(t *testing.T) {
	r := &Run{WallS: 1.5, Flows: []Flow{{SignalShare: map[string]float64{"z": 1, "a": 2, "m": 3}}}}
	b, err := Marshal([]*Run{r})
	require.NoError(t, err)
	require.Less(t, strings.Index(string(b), `"a"`), strings.Index(string(b), `"z"`))
	require.True(t, strings.HasSuffix(string(b), "}\n]\n"))
	require.Contains(t, string(b), "\n  {\n    \"scenario\"")
	require.NotContains(t, string(b), "1.5")
	b2, err := Marshal([]*Run{r})
	require.NoError(t, err)
	require.Equal(t, b, b2)
}

func TestReadRuns(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "runs.json")
	b, err := Marshal([]*Run{{Scenario: "s", CC: "owd", Flows: []Flow{{Name: "bulk", GoodputBps: 1e6}}}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o644))
	runs, err := ReadRuns(path)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Equal(t, 1e6, runs[0].Flows[0].GoodputBps)

	for _, body := range []string{`{"not": "runs"}`, `[]`} {
		require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
		_, err = ReadRuns(path)
		require.ErrorContains(t, err, path+": not the JSON array of runs that emu --json writes")
	}
	_, err = ReadRuns(filepath.Join(dir, "missing.json"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestWriteJSON(t *testing.T) {
	runs := []*Run{{Scenario: "s"}}
	want, err := Marshal(runs)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "runs.json")
	var stdout strings.Builder
	require.NoError(t, WriteJSON(path, runs, &stdout))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, want, b)
	require.Empty(t, stdout.String())
	require.NoError(t, WriteJSON("-", runs, &stdout))
	require.Equal(t, string(want), stdout.String())
	require.Error(t, WriteJSON(path, math.NaN(), &stdout), "what JSON cannot hold")
}
