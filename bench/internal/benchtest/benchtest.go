// Package benchtest holds the fixtures of the benchmark's tests: a small
// dumbbell scenario, a fake simulator (a deterministic function of the
// scenario, with an age curve and a cost to the bulk flows that give the
// ACP sweep known oracles) and checks of what a command wrote. The
// packages that run, tabulate and plot results (bench/runner,
// bench/sweep, bench/table, bench/plots, bench/cellular) and freshbench
// share them.
package benchtest

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/bench/sim"
	"github.com/fresh-udp/fresh/bench/sweep"
)

// Scenario is a small dumbbell with two bulk flows (one pinned), a
// reverse cbr flow and an acp update flow.
const Scenario = `{
  "name": "dumbbell-test",
  "duration": "20s",
  "seed": 7,
  "forward": {"rate": "1.5Mbps", "delay": "50ms", "queue": {"limit": 50}},
  "reverse": {"rate": "1.5Mbps", "delay": "50ms", "queue": {"limit": 50}},
  "flows": [
    {"name": "bulk", "kind": "bulk", "cc": "cubic"},
    {"name": "competitor", "kind": "bulk", "cc": "reno", "pin": true, "start": "2s"},
    {"name": "udp-rev", "kind": "cbr", "rate": "100kbps", "reverse": true},
    {"name": "updates", "kind": "acp", "size": 1024, "dscp": "CS7"}
  ],
  "changes": [{"at": "10s", "forward": {"delay": "80ms"}}]
}`

// WriteFile writes body to dir/name and returns the path.
func WriteFile(t testing.TB, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

// LoadScenario parses Scenario.
func LoadScenario(t testing.TB) *scenario.Scenario {
	t.Helper()
	s, err := scenario.Parse([]byte(Scenario))
	require.NoError(t, err)
	return s
}

// AgeMs is the mean age (ms) the fake simulator gives an update flow at
// rate hz on a path carrying capacity updates/s: half the update interval
// plus a queueing term that explodes at capacity. Its minimum is at
// hz = √(5C)/(1+√(5C)/C).
func AgeMs(hz, capacity float64) float64 {
	if hz >= capacity {
		return 1e5
	}
	return 500/hz + 100/(1-hz/capacity)
}

// CostPerHz is what every update per second of the update flows costs
// the fake simulator's bulk flows, bit/s (split among them), counted from
// acp's 28 Hz (so the fixture's goodputs under acp are the plain ones):
// far more than the updates' own bit rate, so that the sweep's cost bound
// binds below the age optimum.
const CostPerHz = 60e3

// SeedAgeMs is the fake simulator's seed-to-seed noise on every mean
// age: 0, 0.3, 0.6 or 0.9 ms by seed.
func SeedAgeMs(seed int64) float64 { return 0.3 * float64(seed%4) }

// Sim stands in for sim.Run: a deterministic function of the scenario
// and options, with traces when asked.
func Sim(s *scenario.Scenario, o sim.Options) (*report.Run, error) {
	if o.CC != "" {
		s = s.WithCC(o.CC)
	}
	d := s.Duration.D()
	if o.Progress != nil {
		o.Progress(0, d)
		o.Progress(d/2, d)
		o.Progress(d, d)
	}
	r := &report.Run{
		Scenario: s.Name, Driver: "sim", Seed: s.Seed, CC: o.CC,
		Utilization: report.Utilization{Forward: 0.93, Reverse: 0.071},
		DurationS:   d.Seconds(),
	}
	capacity := sweep.CapacityHz(s)
	var bulkN int
	var updHz float64
	for _, f := range s.Flows {
		if f.Kind == scenario.KindBulk {
			bulkN++
		}
		if f.IsUpdates() {
			updHz += rateHz(f)
		}
	}
	var bulk []float64
	for i, f := range s.Flows {
		fl, k := flow(s, i)
		if f.Kind == scenario.KindBulk {
			fl.GoodputBps -= CostPerHz * (updHz - 28) / float64(bulkN)
			bulk = append(bulk, fl.GoodputBps)
			fl.SignalShare = map[string]float64{"owd": 0.75, "rtt": 0.25}
		}
		if f.IsUpdates() {
			hz := rateHz(f)
			age := report.Round3(AgeMs(hz, capacity) + SeedAgeMs(s.Seed))
			fl.AgeMs = &report.AgeStats{Mean: age, P95: 2 * age, Peak: 3 * age}
			fl.RateHz = &hz
			fl.GoodputBps = hz * float64(f.Size*8)
		}
		if o.Trace {
			trace(&fl, k)
		}
		r.Flows = append(r.Flows, fl)
	}
	r.Jain = report.Jain(bulk)
	return r, nil
}

// flow is the fake's flow i of s before its kind's own numbers: every
// figure grows with k, from the controller's name, the flow's index and
// the seed.
func flow(s *scenario.Scenario, i int) (report.Flow, float64) {
	f := s.Flows[i]
	d := s.Duration.D()
	k := float64(len(f.CC)+i) + float64(s.Seed%5)
	return report.Flow{
		Name: f.Name, Kind: f.Kind, CC: f.CC,
		GoodputBps: 250e3 * k, Bytes: int64(31250 * k * d.Seconds()),
		Lost: int64(k), Retransmitted: int64(k) / 2,
		OWDms:   report.Stats{Mean: 55 + k, P50: 54 + k, P95: 60 + 3*k, P99: 70 + 4*k},
		QueueMs: report.Stats{Mean: 5 + k, P50: 4 + k, P95: 10 + 3*k, P99: 20 + 4*k},
		Sent:    100, Delivered: 95, StartS: f.Start.D().Seconds(), EndS: f.End(s).D().Seconds(),
	}, k
}

// trace gives fl the time series and per-packet delays of a traced run,
// around its goodput and k (see flow).
func trace(fl *report.Flow, k float64) {
	fl.Series = &report.Series{}
	for j := range 50 {
		t := float64(j) * 0.4
		fl.Series.T = append(fl.Series.T, t)
		fl.Series.GoodputBps = append(fl.Series.GoodputBps, fl.GoodputBps*(1+0.3*math.Sin(t+k)))
		owd := 50 + 10*k + 5*math.Cos(t)
		if j == 20 {
			owd = math.NaN() // nothing delivered in that interval
		}
		fl.Series.OWDms = append(fl.Series.OWDms, owd)
		fl.Series.CwndBytes = append(fl.Series.CwndBytes, 20000+5000*math.Sin(t/2+k))
		fl.Series.AgeMs = append(fl.Series.AgeMs, 100+40*math.Abs(math.Sin(t*3)))
		fl.Series.RateHz = append(fl.Series.RateHz, 20)
	}
	for j := range 3000 {
		fl.OWDSamples = append(fl.OWDSamples, 50+k*5+float64(j%97)*0.3+float64(j%13))
	}
}

// rateHz is the update rate the fake simulator gives an update flow: its
// fixed rate, 28 Hz under acp, 9 Hz under lazy.
func rateHz(f scenario.Flow) float64 {
	switch {
	case f.Kind == scenario.KindFixed:
		return f.UpdateRate
	case f.CC == "acp":
		return 28
	case f.CC == "lazy":
		return 9
	}
	return f.UpdateRate
}

// Runs runs Sim on Scenario for each controller, traced, labelled with
// the controller and 0.25 s of wall time.
func Runs(t testing.TB, ccs ...string) (*scenario.Scenario, []*report.Run) {
	t.Helper()
	s := LoadScenario(t)
	var runs []*report.Run
	for _, name := range ccs {
		r, err := Sim(s, sim.Options{CC: name, Trace: true})
		require.NoError(t, err)
		r.CC = name
		r.WallS = 0.25
		runs = append(runs, r)
	}
	return s, runs
}

var pngMagic = []byte("\x89PNG\r\n\x1a\n")

// RequirePNG checks that path holds a PNG image of some size.
func RequirePNG(t testing.TB, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err, path)
	require.Greater(t, len(b), 1000, path)
	require.True(t, bytes.HasPrefix(b, pngMagic), path)
}
