package sim

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fresh-udp/fresh/bench/scenario"
)

// FuzzScenario decodes arbitrary scenario files and simulates every one
// that validates (its duration cut to 2 s and rates to 100 Mbit/s, so one
// input stays cheap): whatever a user writes in a scenario, freshbench
// reports an error or a result, never a panic, a hang, or NaN in the JSON.
func FuzzScenario(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("..", "scenarios", "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	for i, file := range files {
		if i%4 != 0 { // a spread of the paper and ACP scenarios
			continue
		}
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"name":"x","duration":"1s","forward":{"rate":"1Mbps"},"reverse":{"rate":"1Mbps"},"flows":[{"name":"a","kind":"bulk"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := scenario.Parse(b)
		if err != nil {
			return
		}
		s.Duration = min(s.Duration, scenario.Duration(2*time.Second))
		for _, p := range []*scenario.Path{&s.Forward, &s.Reverse} {
			p.Rate = min(p.Rate, scenario.Rate(100e6))
			if w := p.RateWalk; w != nil {
				w.Min, w.Max = min(w.Min, scenario.Rate(100e6)), min(w.Max, scenario.Rate(100e6))
			}
		}
		r, err := Run(s, Options{})
		if err != nil {
			return
		}
		finite := func(what string, v float64) {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				t.Fatalf("%s = %v", what, v)
			}
		}
		finite("jain", r.Jain)
		finite("utilization forward", r.Utilization.Forward)
		for _, fl := range r.Flows {
			finite(fl.Name+" goodput", fl.GoodputBps)
			finite(fl.Name+" owd p95", fl.OWDms.P95)
		}
	})
}
