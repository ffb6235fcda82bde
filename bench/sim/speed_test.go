package sim

import (
	"path/filepath"
	"testing"

	"github.com/fresh-udp/fresh/bench/scenario"
)

// BenchmarkPaperDumbbell simulates the paper's 100 s dumbbell at 90 ms RTT
// under owd: the simulator's speed on the scenario RESULTS.md reports
// (100 simulated seconds per op).
func BenchmarkPaperDumbbell(b *testing.B) {
	s, err := scenario.Load(filepath.Join("..", "scenarios", "paper-rtt-90ms.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Run(s, Options{CC: "owd"}); err != nil {
			b.Fatal(err)
		}
	}
}
