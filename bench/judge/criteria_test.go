package judge

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
)

func criterion(t *testing.T, family, name string) Criterion {
	t.Helper()
	for _, c := range CriteriaOf(family) {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no criterion %s in family %s", name, family)
	return Criterion{}
}

func ptr(x float64) *float64 { return &x }

// TestCriteria: for every criterion, a hand-made draw that passes (at
// the threshold itself where the target is inclusive), one that fails,
// and where it has a reference controller, one where it does not apply.
func TestCriteria(t *testing.T) {
	bbr := Outcome{CC: "bbr", GoodputBps: 10e6, OWDP95Ms: 50, Power: 200}
	type tc struct {
		name      string
		own       Outcome
		others    []Outcome
		pass, ok  bool
		wantValue float64
	}
	cases := map[[2]string][]tc{
		{Alone, "competitive_s"}: {
			{"never", Outcome{CC: "owd"}, nil, true, true, 0},
			{"a tenth of a second", Outcome{CC: "owd", CompetitiveS: 0.1}, nil, false, true, 0.1},
		},
		{Alone, "power_vs_best"}: {
			{"equal to the best", Outcome{CC: "owd", Power: 300}, []Outcome{{CC: "rttdelay", Power: 300}, {CC: "bbr", Power: 100}}, true, true, 1},
			{"below the best", Outcome{CC: "owd", Power: 150}, []Outcome{{CC: "rttdelay", Power: 300}, {CC: "bbr", Power: 100}}, false, true, 0.5},
			{"just below the best", Outcome{CC: "owd", Power: 297}, []Outcome{{CC: "rttdelay", Power: 300}, {CC: "bbr", Power: 100}}, false, true, 0.99},
			{"alone in the run", Outcome{CC: "owd", Power: 150}, nil, false, false, 0},
		},
		{Fillers, "share_fair_0.7"}: {
			{"at 0.7", Outcome{CC: "owd", Share: 0.35, FairShare: 0.5}, nil, true, true, 0.7},
			{"starved", Outcome{CC: "owd", Share: 0.029, FairShare: 0.5}, nil, false, true, 0.058},
			{"just below", Outcome{CC: "owd", Share: 0.345, FairShare: 0.5}, nil, false, true, 0.69},
		},
		{Fillers, "share_fair_0.5"}: {
			{"at 0.5", Outcome{CC: "owd", Share: 0.25, FairShare: 0.5}, nil, true, true, 0.5},
			{"below", Outcome{CC: "owd", Share: 0.2, FairShare: 0.5}, nil, false, true, 0.4},
			{"just below", Outcome{CC: "owd", Share: 0.245, FairShare: 0.5}, nil, false, true, 0.49},
			{"no share measured", Outcome{CC: "owd"}, nil, false, false, 0},
		},
		{OwnKind, "jain_0.95"}: {
			{"at 0.95", Outcome{CC: "owd", Jain: 0.95}, nil, true, true, 0.95},
			{"0.87", Outcome{CC: "owd", Jain: 0.87}, nil, false, true, 0.87},
			{"0.94", Outcome{CC: "owd", Jain: 0.94}, nil, false, true, 0.94},
		},
		{OwnKind, "jain_0.8"}: {
			{"at 0.8", Outcome{CC: "owd", Jain: 0.8}, nil, true, true, 0.8},
			{"0.63", Outcome{CC: "owd", Jain: 0.63}, nil, false, true, 0.63},
			{"0.79", Outcome{CC: "owd", Jain: 0.79}, nil, false, true, 0.79},
		},
		{OwnKind, "competitive_s"}: {
			{"13 s once", Outcome{CC: "owd", CompetitiveS: 13}, nil, false, true, 13},
		},
		{Jitter, "competitive_s"}: {
			{"never", Outcome{CC: "owd"}, nil, true, true, 0},
			{"once", Outcome{CC: "owd", CompetitiveS: 3}, nil, false, true, 3},
		},
		{AQM, "share_fair_0.8"}: {
			{"at 0.8", Outcome{CC: "owd", Share: 0.16, FairShare: 0.2}, nil, true, true, 0.8},
			{"0.47", Outcome{CC: "owd", Share: 0.094, FairShare: 0.2}, nil, false, true, 0.47},
			{"0.79", Outcome{CC: "owd", Share: 0.158, FairShare: 0.2}, nil, false, true, 0.79},
		},
		{Jitter, "goodput_vs_bbr"}: {
			{"at 0.8", Outcome{CC: "owd", GoodputBps: 8e6}, []Outcome{bbr}, true, true, 0.8},
			{"below", Outcome{CC: "owd", GoodputBps: 7e6}, []Outcome{bbr}, false, true, 0.7},
			{"just below", Outcome{CC: "owd", GoodputBps: 7.9e6}, []Outcome{bbr}, false, true, 0.79},
		},
		{Loss, "goodput_vs_bbr"}: {
			{"at 0.8", Outcome{CC: "owd", GoodputBps: 8e6}, []Outcome{bbr}, true, true, 0.8},
			{"0.37", Outcome{CC: "owd", GoodputBps: 3.7e6}, []Outcome{bbr}, false, true, 0.37},
			{"just below", Outcome{CC: "owd", GoodputBps: 7.9e6}, []Outcome{bbr}, false, true, 0.79},
			{"no bbr in the run", Outcome{CC: "owd", GoodputBps: 3.7e6}, []Outcome{{CC: "cubic", GoodputBps: 1e6}}, false, false, 0},
			{"bbr itself", bbr, nil, false, false, 0},
		},
		{NarrowACK, "telemetry_delivered"}: {
			{"at 90 %", Outcome{CC: "owd", TelemetryDelivered: ptr(0.9)}, nil, true, true, 0.9},
			{"a fifth", Outcome{CC: "owd", TelemetryDelivered: ptr(0.2)}, nil, false, true, 0.2},
			{"89 %", Outcome{CC: "owd", TelemetryDelivered: ptr(0.89)}, nil, false, true, 0.89},
			{"no telemetry", Outcome{CC: "owd"}, nil, false, false, 0},
		},
		{NarrowACK, "owd_p95_vs_bbr"}: {
			{"at bbr's", Outcome{CC: "owd", OWDP95Ms: 50}, []Outcome{bbr}, true, true, 1},
			{"35 ms above", Outcome{CC: "owd", OWDP95Ms: 85}, []Outcome{bbr}, false, true, 1.7},
			{"1 ms above", Outcome{CC: "owd", OWDP95Ms: 51}, []Outcome{bbr}, false, true, 1.02},
			{"bbr itself", bbr, nil, false, false, 0},
		},
		{ACP, "age_vs_lazy"}: {
			{"as lazy", Outcome{CC: "owd", ACP: &ACPOutcome{AgeMs: 50, LazyAgeMs: 50}}, nil, true, true, 1},
			{"older than lazy", Outcome{CC: "owd", ACP: &ACPOutcome{AgeMs: 55, LazyAgeMs: 50}}, nil, false, true, 1.1},
			{"2 % older", Outcome{CC: "owd", ACP: &ACPOutcome{AgeMs: 51, LazyAgeMs: 50}}, nil, false, true, 1.02},
			{"no lazy run", Outcome{CC: "owd"}, nil, false, false, 0},
		},
		{ACP, "age_vs_oracle"}: {
			{"1.15×", Outcome{CC: "owd", ACP: &ACPOutcome{AgeMs: 57.5, OracleAgeMs: 50}}, nil, true, true, 1.15},
			{"1.16×", Outcome{CC: "owd", ACP: &ACPOutcome{AgeMs: 58, OracleAgeMs: 50}}, nil, false, true, 1.16},
			{"no oracle run", Outcome{CC: "owd", ACP: &ACPOutcome{AgeMs: 58}}, nil, false, false, 0},
		},
		{ACP, "elastic_cost"}: {
			{"10 %", Outcome{CC: "owd", ACP: &ACPOutcome{ElasticBps: 9e6, LazyElasticBps: 10e6}}, nil, true, true, 0.1},
			{"26 %", Outcome{CC: "owd", ACP: &ACPOutcome{ElasticBps: 7.4e6, LazyElasticBps: 10e6}}, nil, false, true, 0.26},
			{"11 %", Outcome{CC: "owd", ACP: &ACPOutcome{ElasticBps: 8.9e6, LazyElasticBps: 10e6}}, nil, false, true, 0.11},
		},
		{ACP, "sources_jain"}: {
			{"at 0.95", Outcome{CC: "owd", ACP: &ACPOutcome{SourcesJain: ptr(0.95)}}, nil, true, true, 0.95},
			{"16:1", Outcome{CC: "owd", ACP: &ACPOutcome{SourcesJain: ptr(report.Jain([]float64{16, 1}))}}, nil, false, true, report.Jain([]float64{16, 1})},
			{"one source", Outcome{CC: "owd", ACP: &ACPOutcome{}}, nil, false, false, 0},
			{"0.94", Outcome{CC: "owd", ACP: &ACPOutcome{SourcesJain: ptr(0.94)}}, nil, false, true, 0.94},
		},
	}
	covered := map[[2]string]bool{}
	for key, tcs := range cases {
		c := criterion(t, key[0], key[1])
		covered[key] = true
		for _, tc := range tcs {
			all := append([]Outcome{tc.own}, tc.others...)
			v, pass, ok := c.Eval(tc.own, all)
			require.Equal(t, tc.ok, ok, "%s/%s %s: applies", key[0], key[1], tc.name)
			require.Equal(t, tc.pass, pass, "%s/%s %s: pass", key[0], key[1], tc.name)
			if ok {
				require.InDelta(t, tc.wantValue, v, 1e-9, "%s/%s %s: value", key[0], key[1], tc.name)
			}
		}
	}
	for _, c := range Criteria {
		require.True(t, covered[[2]string{c.Family, c.Name}], "criterion %s/%s has no test case", c.Family, c.Name)
	}
}

// TestEveryFamilyHasCriteria: no family is drawn without being judged.
func TestEveryFamilyHasCriteria(t *testing.T) {
	for _, f := range Families {
		require.NotEmpty(t, CriteriaOf(f), f)
	}
}

// TestMeasure reads a hand-made run: the flows under test's goodput,
// delay, power and competitive seconds; the share over the window from
// the last start (not over each flow's own lifetime); the telemetry's
// delivery; the ACP sources' age, cost and fairness against a lazy run.
func TestMeasure(t *testing.T) {
	s := &scenario.Scenario{Flows: []scenario.Flow{
		{Name: "filler-1", Kind: scenario.KindBulk, CC: "cubic", Pin: true},
		{Name: "test", Kind: scenario.KindBulk, Start: scenario.Duration(1e9)}, // at 1 s
		{Name: telemetry, Kind: scenario.KindCBR, Reverse: true},
	}}
	series := func(bps ...float64) *report.Series {
		se := &report.Series{}
		for i, b := range bps {
			se.T = append(se.T, float64(i+1)*0.5)
			se.GoodputBps = append(se.GoodputBps, b)
		}
		return se
	}
	r := &report.Run{CC: "owd", Jain: 0.9, Flows: []report.Flow{
		// The filler alone for the first second at 10 Mbit/s, then 6.
		{Name: "filler-1", Kind: "bulk", GoodputBps: 7e6, Series: series(10e6, 10e6, 6e6, 6e6)},
		// The flow under test from 1 s: 4 Mbit/s, so 40 % from then on
		// (over its own lifetime against the filler's it would be 4/11).
		{Name: "test", Kind: "bulk", GoodputBps: 4e6, OWDms: report.Stats{P95: 40}, ModeS: map[string]float64{"competitive": 2.5, "avoidance": 1}, Series: series(0, 0, 4e6, 4e6)},
		{Name: telemetry, Kind: "cbr", Sent: 100, Delivered: 73},
	}}
	o := Measure(&Draw{Family: Fillers, Scenario: s}, r, nil)
	require.Equal(t, "owd", o.CC)
	require.Equal(t, 4e6, o.GoodputBps)
	require.Equal(t, 40.0, o.OWDP95Ms)
	require.InDelta(t, 100, o.Power, 1e-9, "4 Mbit/s over 0.04 s")
	require.Equal(t, 2.5, o.CompetitiveS)
	require.InDelta(t, 0.4, o.Share, 1e-9)
	require.Equal(t, 0.5, o.FairShare)
	require.Equal(t, 0.9, o.Jain)
	require.InDelta(t, 0.73, *o.TelemetryDelivered, 1e-9)
	require.Nil(t, o.ACP)

	// Two flows under test: their goodput summed, their delays averaged.
	two := &report.Run{CC: "owd", Flows: []report.Flow{
		{Name: "test-1", Kind: "bulk", GoodputBps: 1e6, OWDms: report.Stats{P95: 40}},
		{Name: "test-2", Kind: "bulk", GoodputBps: 3e6, OWDms: report.Stats{P95: 60}, ModeS: map[string]float64{"competitive": 1}},
	}}
	o = Measure(&Draw{Family: OwnKind, Scenario: s}, two, nil)
	require.Equal(t, 4e6, o.GoodputBps)
	require.Equal(t, 50.0, o.OWDP95Ms)
	require.Equal(t, 1.0, o.CompetitiveS)

	// Not judged on share: no series needed, none read.
	o = Measure(&Draw{Family: Alone, Scenario: s}, r, nil)
	require.Zero(t, o.Share)

	acpRun := func(ages, delivered [2]float64, bulk float64) *report.Run {
		return &report.Run{CC: "owd", Flows: []report.Flow{
			{Name: "test", Kind: "bulk", GoodputBps: bulk},
			{Name: "filler-1", Kind: "bulk", GoodputBps: bulk},
			{Name: "acp-1", Kind: "acp", AgeMs: &report.AgeStats{Mean: ages[0]}, Delivered: int64(delivered[0]), StartS: 0, EndS: 10},
			{Name: "acp-2", Kind: "acp", AgeMs: &report.AgeStats{Mean: ages[1]}, Delivered: int64(delivered[1]), StartS: 0, EndS: 10},
		}}
	}
	o = Measure(&Draw{Family: ACP, Scenario: s}, acpRun([2]float64{40, 60}, [2]float64{1600, 100}, 3e6), acpRun([2]float64{70, 70}, [2]float64{500, 500}, 4e6))
	require.NotNil(t, o.ACP)
	require.Equal(t, 50.0, o.ACP.AgeMs)
	require.Equal(t, 70.0, o.ACP.LazyAgeMs)
	require.Equal(t, 6e6, o.ACP.ElasticBps)
	require.Equal(t, 8e6, o.ACP.LazyElasticBps)
	require.InDelta(t, report.Jain([]float64{160, 10}), *o.ACP.SourcesJain, 1e-9)
}

// TestTally: pass rates, medians and worst values per controller, and
// Met against the criterion's required share of draws.
func TestTally(t *testing.T) {
	var results []DrawResult
	for i, j := range []float64{0.99, 0.97, 0.96, 0.9, 0.7} {
		results = append(results, DrawResult{Draw: &Draw{Seed: int64(i)}, Outcomes: []Outcome{{CC: "owd", Jain: j}, {CC: "bbr", Jain: 0.99}}})
	}
	rows := tally(OwnKind, []string{"owd", "bbr"}, results)
	require.Len(t, rows, 3)
	j95 := rows[0]
	require.Equal(t, "jain_0.95", j95.Name)
	owd, bbr := j95.PerCC[0], j95.PerCC[1]
	require.Equal(t, PassRate{CC: "owd", Pass: 3, N: 5, Median: 0.96, Worst: 0.7}, owd)
	require.False(t, j95.Met(owd), "3 of 5 is below 90 %")
	require.True(t, j95.Met(bbr))
	require.InDelta(t, 0.6, owd.Rate(), 1e-9)
	j80 := rows[1]
	require.True(t, j80.Met(j80.PerCC[1]), "every draw passed: a target of every draw is met")
	require.False(t, j80.Met(j80.PerCC[0]), "4 of 5 is not every draw")

	lb := leaderboard([]string{"owd"}, []DrawResult{
		{Draw: &Draw{Trace: "b.up"}, Outcomes: []Outcome{{GoodputBps: 1, OWDP95Ms: 10, Power: 3}}},
		{Draw: &Draw{Trace: "a.up"}, Outcomes: []Outcome{{GoodputBps: 2, OWDP95Ms: 30, Power: 1}}},
		{Draw: &Draw{}, Outcomes: []Outcome{{GoodputBps: 9, OWDP95Ms: 20, Power: 2}}},
	})
	require.Equal(t, []LeaderboardRow{
		{Group: "all", CC: "owd", N: 3, GoodputBps: 2, OWDP95Ms: 20, Power: 2},
		{Group: "a.up", CC: "owd", N: 1, GoodputBps: 2, OWDP95Ms: 30, Power: 1},
		{Group: "b.up", CC: "owd", N: 1, GoodputBps: 1, OWDP95Ms: 10, Power: 3},
	}, lb)
}

// TestConstrainedOracle: the lowest age among the fixed rates that cost
// the elastic flows at most 10 % against lazy; any rate without elastic
// flows; none when every rate costs more.
func TestConstrainedOracle(t *testing.T) {
	run := func(age, elastic float64) *report.Run {
		return &report.Run{Flows: []report.Flow{
			{Name: "test", Kind: "bulk", GoodputBps: elastic},
			{Name: "acp-1", Kind: "fixed", AgeMs: &report.AgeStats{Mean: age}},
		}}
	}
	grid := []float64{1, 10, 100, 1000}
	runs := []*report.Run{run(400, 9.9e6), run(100, 9.5e6), run(50, 9e6), run(30, 8e6)}
	age, rate := ConstrainedOracle(10e6, grid, runs)
	require.Equal(t, 50.0, age, "10 %% exactly is within the budget, 20 %% is not")
	require.Equal(t, 100.0, rate)
	age, rate = ConstrainedOracle(0, grid, runs)
	require.Equal(t, 30.0, age, "no elastic flows: the best age")
	require.Equal(t, 1000.0, rate)
	age, _ = ConstrainedOracle(20e6, grid, runs)
	require.Zero(t, age, "every rate costs more than 10 %")
	age, _ = ConstrainedOracle(10e6, grid, []*report.Run{run(70, 10e6), nil, run(0, 10e6), nil})
	require.Equal(t, 70.0, age, "a run where nothing arrived does not count")
}

// TestOracleGrid: geometric from 0.5 Hz to the path's capacity in one
// source's updates.
func TestOracleGrid(t *testing.T) {
	s := &scenario.Scenario{
		Forward: scenario.Path{Rate: scenario.Rate(1e6)},
		Flows:   []scenario.Flow{{Name: "test", Kind: scenario.KindBulk}, {Name: "acp-1", Kind: scenario.KindACP, Size: 918}},
	}
	g := OracleGrid(s, 5)
	require.Len(t, g, 5)
	require.InDelta(t, 0.5, g[0], 1e-9)
	require.InDelta(t, 1e6/8/1000, g[4], 1e-9, "1 Mbit/s of 1000-byte datagrams")
	for k := 1; k < len(g); k++ {
		require.InEpsilon(t, g[1]/g[0], g[k]/g[k-1], 1e-3, "geometric")
	}
	require.Nil(t, OracleGrid(s, 0))
	s.Flows = s.Flows[:1]
	require.Nil(t, OracleGrid(s, 5), "no source, no grid")
}
