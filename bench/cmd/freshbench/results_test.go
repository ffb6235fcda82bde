package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestResultsUsage(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, exitOK, run([]string{"results", "-h"}, &out, &errb))
	require.Contains(t, out.String(), "bench/RESULTS.md")

	out.Reset()
	require.Equal(t, exitUsage, run([]string{"results", "--bogus"}, &out, &errb))
	require.Equal(t, exitUsage, run([]string{"results", "extra"}, &out, &errb))
	// A scenarios folder without the paper's files is a usage error naming the file.
	errb.Reset()
	require.Equal(t, exitUsage, run([]string{"results", "--scenarios", t.TempDir(), "--out", "-", "--plots", t.TempDir()}, &out, &errb))
	require.Contains(t, errb.String(), "paper-rtt-60ms.json")
}
