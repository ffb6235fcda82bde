package resultsmd

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/summary"
)

// No directory or no file is no baseline; a file is read by row key; one
// that is not JSON is an error naming it.
func TestReadBaseline(t *testing.T) {
	rows, err := readBaseline[untunedRow]("", untunedBaselineFile)
	require.NoError(t, err)
	require.Empty(t, rows)
	dir := t.TempDir()
	rows, err = readBaseline[untunedRow](dir, untunedBaselineFile)
	require.NoError(t, err)
	require.Empty(t, rows)

	path := filepath.Join(dir, untunedBaselineFile)
	require.NoError(t, os.WriteFile(path, []byte(`{"source": "x", "rows": [
	  {"scenario": "fairness-4", "cc": "owd", "runs": 10, "jain": {"n": 10, "mean": 0.99}},
	  {"scenario": "fairness-4", "cc": "cubic", "runs": 10}]}`), 0o644))
	rows, err = readBaseline[untunedRow](dir, untunedBaselineFile)
	require.NoError(t, err)
	require.Len(t, rows, 2)
	require.Equal(t, summary.MeanSD{N: 10, Mean: 0.99}, rows["fairness-4/owd"].Jain)

	require.NoError(t, os.WriteFile(path, []byte(`not json`), 0o644))
	_, err = readBaseline[untunedRow](dir, untunedBaselineFile)
	require.ErrorContains(t, err, untunedBaselineFile+": ")
}
