package main

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/bench/sim"
)

// testScenario is a small dumbbell with two bulk flows (one pinned), a
// reverse cbr flow and an acp update flow.
const testScenario = `{
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

// writeScenario writes body to dir/name and returns the path.
func writeScenario(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

func loadTestScenario(t *testing.T) *scenario.Scenario {
	t.Helper()
	s, err := scenario.Parse([]byte(testScenario))
	require.NoError(t, err)
	return s
}

// fakeAgeMs is the mean age (ms) the fake simulator gives an update flow
// at rate hz on a path carrying capacity updates/s: half the update interval
// plus a queueing term that explodes at capacity. Its minimum is at
// hz = √(5C)/(1+√(5C)/C).
func fakeAgeMs(hz, capacity float64) float64 {
	if hz >= capacity {
		return 1e5
	}
	return 500/hz + 100/(1-hz/capacity)
}

// fakeCostPerHz is what every update per second of the update flows costs
// the fake simulator's bulk flows, bit/s (split among them), counted from
// acp's 28 Hz (so the fixture's goodputs under acp are the plain ones): far
// more than the updates' own bit rate, so that the sweep's cost bound binds
// below the age optimum.
const fakeCostPerHz = 60e3

// fakeSeedAgeMs is the fake simulator's seed-to-seed noise on every mean
// age: 0, 0.3, 0.6 or 0.9 ms by seed.
func fakeSeedAgeMs(seed int64) float64 { return 0.3 * float64(seed%4) }

// fakeSim stands in for sim.Run: a deterministic function of the scenario
// and options, with traces when asked.
func fakeSim(s *scenario.Scenario, o sim.Options) (*report.Run, error) {
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
	capacity := capacityHz(s)
	var bulkN int
	var updHz float64
	for _, f := range s.Flows {
		if f.Kind == scenario.KindBulk {
			bulkN++
		}
		if f.IsUpdates() {
			updHz += fakeRateHz(f)
		}
	}
	var bulk []float64
	for i, f := range s.Flows {
		k := float64(len(f.CC)+i) + float64(s.Seed%5)
		fl := report.Flow{
			Name: f.Name, Kind: f.Kind, CC: f.CC,
			GoodputBps: 250e3 * k, Bytes: int64(31250 * k * d.Seconds()),
			Lost: int64(k), Retransmitted: int64(k) / 2,
			OWDms:   report.Stats{Mean: 55 + k, P50: 54 + k, P95: 60 + 3*k, P99: 70 + 4*k},
			QueueMs: report.Stats{Mean: 5 + k, P50: 4 + k, P95: 10 + 3*k, P99: 20 + 4*k},
			Sent:    100, Delivered: 95, StartS: f.Start.D().Seconds(), EndS: f.End(s).D().Seconds(),
		}
		if f.Kind == scenario.KindBulk {
			fl.GoodputBps -= fakeCostPerHz * (updHz - 28) / float64(bulkN)
			bulk = append(bulk, fl.GoodputBps)
			fl.SignalShare = map[string]float64{"owd": 0.75, "rtt": 0.25}
		}
		if f.IsUpdates() {
			hz := fakeRateHz(f)
			age := report.Round3(fakeAgeMs(hz, capacity) + fakeSeedAgeMs(s.Seed))
			fl.AgeMs = &report.AgeStats{Mean: age, P95: 2 * age, Peak: 3 * age}
			fl.RateHz = &hz
			fl.GoodputBps = hz * float64(f.Size*8)
		}
		if o.Trace {
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
		r.Flows = append(r.Flows, fl)
	}
	r.Jain = report.Jain(bulk)
	return r, nil
}

// fakeRateHz is the update rate the fake simulator gives an update flow:
// its fixed rate, 28 Hz under acp, 9 Hz under lazy.
func fakeRateHz(f scenario.Flow) float64 {
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

// fixtureRuns runs fakeSim on the test scenario for each controller, traced.
func fixtureRuns(t *testing.T, ccs ...string) (*scenario.Scenario, []*report.Run) {
	t.Helper()
	s := loadTestScenario(t)
	var runs []*report.Run
	for _, name := range ccs {
		r, err := fakeSim(s, sim.Options{CC: name, Trace: true})
		require.NoError(t, err)
		r.CC = name
		r.WallS = 0.25
		runs = append(runs, r)
	}
	return s, runs
}

var _ simFunc = fakeSim
