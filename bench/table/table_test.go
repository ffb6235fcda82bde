package table

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/internal/benchtest"
	"github.com/fresh-udp/fresh/bench/summary"
	"github.com/fresh-udp/fresh/bench/sweep"
)

func TestFormatters(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{BitRate(0), "0 bit/s"},
		{BitRate(999), "999 bit/s"},
		{BitRate(81_900), "81.9 kbit/s"},
		{BitRate(999_999), "1000 kbit/s"},
		{BitRate(1_213_456), "1.21 Mbit/s"},
		{BitRate(1.5e6), "1.5 Mbit/s"},
		{BitRate(123_456_789), "123 Mbit/s"},
		{BitRate(10e9), "10 Gbit/s"},
		{bytes(12), "12 B"},
		{bytes(15_100_000), "15.1 MB"},
		{bytes(2_345), "2.35 kB"},
		{bytes(3e9), "3 GB"},
		{ms(52.14), "52.1"},
		{ms(0), "0.0"},
		{ms(math.NaN()), "-"},
		{MeasuredMs(0), "-"},
		{MeasuredMs(12.34), "12.3"},
		{percent(0.9712), "97.1%"},
		{Float(183.1054), "183.1"},
		{Float(0), "-"},
		{ratio(1.23456), "1.23"},
		{ratio(0), "-"},
		{Range(sweep.RateRange{}), "-"},
		{Range(sweep.RateRange{LoHz: 14.1, HiHz: 14.1}), "14.1"},
		{Range(sweep.RateRange{LoHz: 22, HiHz: 31.2}), "22–31.2"},
		{cost(false, 0.5), "-"},
		{cost(true, 0.081), "8.1%"},
		{BitRatePM(summary.MeanSD{Mean: 9.02e6, SD: 0.15e6}), "9.02 ± 0.15 Mbit/s"},
		{BitRatePM(summary.MeanSD{Mean: 500, SD: 12}), "500 ± 12 bit/s"},
		{speed(100, 0.4), "simulated 100 s in 0.40 s (250× real time)"},
		{speed(100, 0), "simulated 100 s"},
		{realTime(10, 10.314), "emulated 10 s in 10.31 s (real time)"},
		{realTime(10, 0), "emulated 10 s (real time)"},
	} {
		require.Equal(t, tc.want, tc.got)
	}
}

func TestRuns(t *testing.T) {
	_, runs := benchtest.Runs(t, "owd", "cubic")
	var b strings.Builder
	require.NoError(t, Runs(&b, runs))
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

	runs[0].Driver = "emu"
	b.Reset()
	require.NoError(t, Runs(&b, runs[:1]))
	require.Contains(t, b.String(), "emulated 20 s in 0.25 s (real time)", "an emu run is real time")
}

// One controller's row: mean ± SD of each metric, with the unit the mean
// calls for, and the range of the share.
func TestSummary(t *testing.T) {
	ms := func(mean, sd, lo, hi float64) summary.MeanSD {
		return summary.MeanSD{N: 2, Mean: mean, SD: sd, Min: lo, Max: hi}
	}
	row := summary.Row{Scenario: "dumbbell-test", CC: "owd", Runs: 2,
		GoodputBps: ms(200e3, 141421.356, 100e3, 300e3), Share: ms(0.375, 0.176777, 0.25, 0.5),
		Jain: ms(0.9, 0.141421, 0.8, 1), Utilization: ms(0.95, 0.070711, 0.9, 1),
		QueueP95Ms: ms(20, 14.142136, 10, 30), OWDP95Ms: ms(70, 14.142136, 60, 80)}
	var out strings.Builder
	require.NoError(t, Summary(&out, []summary.Row{row}))
	lines := strings.Split(out.String(), "\n")
	require.True(t, strings.HasPrefix(lines[0], "SCENARIO"))
	require.Contains(t, lines[0], "SHARE min–max")
	require.Regexp(t, `^dumbbell-test\s+owd\s+2\s+`, lines[1])
	for _, cell := range []string{"200 ± 141 kbit/s", "37.5 ± 17.7%", "25.0–50.0%", "0.900 ± 0.141", "95.0 ± 7.1%", "20.0 ± 14.1", "70.0 ± 14.1"} {
		require.Contains(t, lines[1], cell)
	}
}

func TestSweep(t *testing.T) {
	var b strings.Builder
	require.NoError(t, Sweep(&b, []*sweep.Summary{{
		Scenario: "s", Seeds: []int64{1, 2}, CapacityHz: 183.1, Points: make([]sweep.Point, 30), Elastic: true,
		NoiseMs: 0.42, OracleRateHz: 25.5, OracleRange: sweep.RateRange{LoHz: 22, HiHz: 31.2},
		ConstrainedRateHz: 14.1, ConstrainedRange: sweep.RateRange{LoHz: 14.1, HiHz: 14.1},
		ACP:                  sweep.AgeDist{MeanMs: 140.9, WorstMs: 150, BestMs: 130, MaxOverMin: 1.154, MeanCost: 0.081, WorstCost: 0.12},
		Lazy:                 sweep.AgeDist{MeanMs: 160, WorstMs: 161, BestMs: 159, MaxOverMin: 1.013},
		WorstOverConstrained: 1.08, WorstOverOracle: 1.12, WorstOverLazy: 0.881,
	}}))
	lines := strings.Split(b.String(), "\n")
	require.Equal(t, []string{"s", "2", "30", "183.1", "0.4", "25.5", "22–31.2", "14.1", "14.1"}, strings.Fields(lines[1]))
	require.Contains(t, lines[3], "worst / CONSTRAINED")
	require.Equal(t, []string{"s", "acp", "140.9", "150.0", "130.0", "1.15", "8.1%", "12.0%", "1.08", "1.12", "0.88"}, strings.Fields(lines[4]))
	require.Equal(t, []string{"s", "lazy", "160.0", "161.0", "159.0", "1.01", "0.0%", "0.0%"}, strings.Fields(lines[5]))
	require.Equal(t, []string{"s", "oracle", "-", "-", "-", "-", "0.0%", "0.0%"}, strings.Fields(lines[6]), "not measured")
}
