package main

import (
	"bytes"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{2, 2, 9, 1, 2}, 2},
		{[]float64{-1, 10}, 4.5},
	} {
		in := append([]float64(nil), tc.in...)
		require.Equal(t, tc.want, median(tc.in), "median(%v)", tc.in)
		require.Equal(t, in, tc.in, "median must not reorder its input")
	}
	require.True(t, math.IsNaN(median(nil)))
}

// -bytes reads sizes with internal/units, as the examples do.
func TestBytesFlag(t *testing.T) {
	for in, want := range map[string]int64{"1GB": 1e9, "512MB": 512e6, "1gib": 1 << 30, "64KiB": 64 << 10,
		"64K": 64 << 10, "1.5GB": 1.5e9, "12345": 12345, "7B": 7} {
		opts, err := parseFlags([]string{"-bytes", in}, io.Discard)
		require.NoError(t, err, in)
		require.Equal(t, want, opts.bytes, in)
	}
	for _, bad := range []string{"", "GB", "-1MB", "0", "1.5B", "NaN", "1e30GB", "ten"} {
		_, err := parseFlags([]string{"-bytes", bad}, io.Discard)
		require.ErrorContains(t, err, "-bytes", bad)
	}
}

func TestSummaryAndRatios(t *testing.T) {
	samples := []Sample{
		{Stack: "fresh/owd", GoodputGbps: 2, CPUSecondsPerGB: 4},
		{Stack: "fresh/owd", GoodputGbps: 3, CPUSecondsPerGB: 3},
		{Stack: "fresh/owd", Err: "boom"},
		{Stack: "fresh/owd", GoodputGbps: 9, CPUSecondsPerGB: 1},
		{Stack: stackQUIC, GoodputGbps: 1.5, CPUSecondsPerGB: 6},
		{Stack: stackTCP, GoodputGbps: 30, CPUSecondsPerGB: 0.5},
	}
	stacks := []stack{{name: "fresh/owd"}, {name: stackQUIC}, {name: stackTCP}}
	sums := summarize(samples, stacks)
	require.Equal(t, Summary{Stack: "fresh/owd", Runs: 3, Failed: 1, GoodputGbps: 3,
		GoodputMinGbps: 2, GoodputMaxGbps: 9, CPUSecondsPerGB: 3}, sums[0])

	rs := ratios(sums, []string{"owd"})
	require.Equal(t, []Ratio{
		{Stack: "fresh/owd", Baseline: stackQUIC, Goodput: 2, CPU: 0.5},
		{Stack: "fresh/owd", Baseline: stackTCP, Goodput: 0.1, CPU: 6},
	}, rs)
	require.Equal(t, " (moonshot met)", verdict(rs[0]))
	require.Equal(t, "", verdict(rs[1]))
}

func TestRunUsage(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		errOut string
	}{
		{[]string{"-h"}, exitOK, "usage: loopbench"},
		{[]string{"-bytes", "lots"}, exitUsage, `invalid value "lots" for flag -bytes: size "lots": want a byte count`},
		{[]string{"-runs", "0"}, exitUsage, "need at least 1"},
		{[]string{"-cc", "nosuch"}, exitUsage, "-cc"},
		{[]string{"extra"}, exitUsage, `unexpected argument "extra"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			require.Equal(t, tc.code, run(tc.args, &out, &errOut), errOut.String())
			require.Contains(t, errOut.String(), tc.errOut)
		})
	}
}

// TestSmoke moves 2 MB through fresh and quic-go once (no iperf3) and checks
// the table and the JSON come out.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("real transfers")
	}
	jsonPath := filepath.Join(t.TempDir(), "out.json")
	var out, errOut bytes.Buffer
	code := run([]string{"-bytes", "2MB", "-runs", "1", "-cc", "owd", "-iperf3=false", "-timeout", "30s", "-json", jsonPath}, &out, &errOut)
	require.Equal(t, exitOK, code, errOut.String())
	require.Contains(t, out.String(), "fresh/owd / quic-go")
	data, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	require.Contains(t, string(data), `"stack": "quic-go"`)
}
