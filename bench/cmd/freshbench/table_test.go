package main

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFormatters(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{formatBitRate(0), "0 bit/s"},
		{formatBitRate(999), "999 bit/s"},
		{formatBitRate(81_900), "81.9 kbit/s"},
		{formatBitRate(999_999), "1000 kbit/s"},
		{formatBitRate(1_213_456), "1.21 Mbit/s"},
		{formatBitRate(1.5e6), "1.5 Mbit/s"},
		{formatBitRate(123_456_789), "123 Mbit/s"},
		{formatBitRate(10e9), "10 Gbit/s"},
		{formatBytes(12), "12 B"},
		{formatBytes(15_100_000), "15.1 MB"},
		{formatBytes(2_345), "2.35 kB"},
		{formatBytes(3e9), "3 GB"},
		{formatMs(52.14), "52.1"},
		{formatMs(0), "0.0"},
		{formatMs(math.NaN()), "-"},
		{formatMeasuredMs(0), "-"},
		{formatMeasuredMs(12.34), "12.3"},
		{formatPercent(0.9712), "97.1%"},
		{formatFloat(183.1054), "183.1"},
		{formatFloat(0), "-"},
		{formatRatio(1.23456), "1.23"},
		{formatSpeed(100, 0.4), "simulated 100 s in 0.40 s (250× real time)"},
		{formatSpeed(100, 0), "simulated 100 s"},
		{formatRealTime(10, 10.314), "emulated 10 s in 10.31 s (real time)"},
		{formatRealTime(10, 0), "emulated 10 s (real time)"},
	} {
		require.Equal(t, tc.want, tc.got)
	}
}

func TestWriteRunTable(t *testing.T) {
	_, runs := fixtureRuns(t, "owd", "cubic")
	var b bytes.Buffer
	require.NoError(t, writeRunTable(&b, runs))
	lines := strings.Split(b.String(), "\n")
	// header, 4 flows × 2 runs, blank, header, 2 runs, blank, final "".
	require.Len(t, lines, 1+8+1+1+2+1+1, b.String())
	header := lines[0]
	require.True(t, strings.HasPrefix(header, "SCENARIO"))
	// tabwriter aligns: every flow row has the goodput column where the
	// header has it.
	col := strings.Index(header, "GOODPUT")
	for _, l := range lines[1:9] {
		require.NotEqual(t, byte(' '), l[col], l)
		require.Equal(t, byte(' '), l[col-1], l)
	}
	require.Equal(t, []string{"dumbbell-test", "owd", "bulk", "bulk", "1.25", "Mbit/s"}, strings.Fields(lines[1])[:6])
	require.Contains(t, lines[4], "updates") // the update flow has ages
	require.NotContains(t, lines[4][strings.Index(header, "AGE mean"):], "-")
	require.Contains(t, lines[3], "udp-rev")
	cbr := strings.Fields(lines[3])
	require.Equal(t, []string{"-", "-"}, cbr[len(cbr)-2:], "no ages for cbr")
	require.Contains(t, lines[11], "93.0%")
	require.Contains(t, lines[11], "7.1%")
	require.Contains(t, lines[11], "simulated 20 s in 0.25 s (80× real time)")
}

func TestWriteSweepTable(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, writeSweepTable(&b, []*sweepSummary{{
		Scenario: "s", Seeds: []int64{1, 2}, CapacityHz: 183.1, Points: make([]sweepPoint, 30), Elastic: true,
		NoiseMs: 0.42, OracleRateHz: 25.5, OracleRange: rateRange{LoHz: 22, HiHz: 31.2},
		ConstrainedRateHz: 14.1, ConstrainedRange: rateRange{LoHz: 14.1, HiHz: 14.1},
		ACP:                  ageDist{MeanMs: 140.9, WorstMs: 150, BestMs: 130, MaxOverMin: 1.154, MeanCost: 0.081, WorstCost: 0.12},
		Lazy:                 ageDist{MeanMs: 160, WorstMs: 161, BestMs: 159, MaxOverMin: 1.013},
		WorstOverConstrained: 1.08, WorstOverOracle: 1.12, WorstOverLazy: 0.881,
	}}))
	lines := strings.Split(b.String(), "\n")
	require.Equal(t, []string{"s", "2", "30", "183.1", "0.4", "25.5", "22–31.2", "14.1", "14.1"}, strings.Fields(lines[1]))
	require.Contains(t, lines[3], "worst / CONSTRAINED")
	require.Equal(t, []string{"s", "acp", "140.9", "150.0", "130.0", "1.15", "8.1%", "12.0%", "1.08", "1.12", "0.88"}, strings.Fields(lines[4]))
	require.Equal(t, []string{"s", "lazy", "160.0", "161.0", "159.0", "1.01", "0.0%", "0.0%"}, strings.Fields(lines[5]))
}
