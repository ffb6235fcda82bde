package resultsmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/internal/benchtest"
	"github.com/fresh-udp/fresh/bench/internal/usage"
)

// TestACPSection writes the ACP section for two small scenarios (2 s, one
// with a CUBIC flow) and a periodic source: every path has its row, both
// oracles and the targets, every target row is recorded, and the sweep plot
// is drawn.
func TestACPSection(t *testing.T) {
	dir, plots := t.TempDir(), filepath.Join(t.TempDir(), "results")
	require.NoError(t, os.Mkdir(plots, 0o755))
	write := func(name, body string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".json"), []byte(body), 0o644))
	}
	write("acp-tiny", `{"name": "acp-tiny", "duration": "2s", "forward": {"rate": "1Mbps", "delay": "10ms", "queue": {"limit": 20}},
	  "reverse": {"rate": "1Mbps", "delay": "10ms"}, "flows": [{"name": "updates", "kind": "acp"}]}`)
	write("acp-cross", `{"name": "acp-cross", "duration": "2s", "forward": {"rate": "1Mbps", "delay": "10ms", "queue": {"limit": 20}},
	  "reverse": {"rate": "1Mbps", "delay": "10ms"},
	  "flows": [{"name": "updates", "kind": "acp"}, {"name": "cross", "kind": "bulk", "cc": "cubic", "pin": true}]}`)
	write("periodic-tiny", `{"name": "periodic-tiny", "duration": "2s", "forward": {"rate": "1Mbps", "delay": "10ms"},
	  "reverse": {"rate": "1Mbps", "delay": "10ms"}, "flows": [{"name": "sensor", "kind": "acp", "update_rate": 20, "size": 100}]}`)
	defer func(seeds []int64) { acpSeeds = seeds }(acpSeeds)
	acpSeeds = []int64{1, 2} // ten in the report; two keep the test short under -race
	c := New(Config{Scenarios: dir, Out: filepath.Join(filepath.Dir(plots), "RESULTS.md"), Plots: plots})
	require.NoError(t, c.acp())
	md := c.md.String()
	for _, want := range []string{
		"## ACP: age of information against the oracle",
		"| acp-cross | 2 |", "| acp-tiny | 2 |", "(no bulk flow)",
		"worst acp / constrained", "### Periodic sources", "| periodic-tiny | acp |", "| periodic-tiny | lazy |",
		"![sweep, acp-cross](results/acp-cross-sweep.png)",
	} {
		require.Contains(t, md, want)
	}
	require.Equal(t, 3, strings.Count(md, "| acp-cross |"), "the cross path in all three tables")
	var keys []string
	for _, tr := range c.targets {
		keys = append(keys, tr.key)
	}
	require.Equal(t, []string{
		"ACP: every path within the constrained oracle's budget",
		"ACP: worst acp / oracle age (≤ 1.10×)", "ACP: worst acp / Lazy age (≤ 0.8×)",
	}, keys)
	benchtest.RequirePNG(t, filepath.Join(plots, "acp-cross-sweep.png"))
	benchtest.RequirePNG(t, filepath.Join(plots, "acp-tiny-sweep.png"))
}

// Links to the figures are relative to the report, or the figures' own
// paths when the report goes to stdout.
func TestRel(t *testing.T) {
	c := New(Config{Out: filepath.Join("bench", "RESULTS.md"), Plots: filepath.Join("bench", "results")})
	require.Equal(t, "results/acp-cross-sweep.png", c.rel("acp-cross-sweep.png"))
	c = New(Config{Out: "-", Plots: filepath.Join("bench", "results")})
	require.Equal(t, filepath.Join("bench", "results", "x.png"), c.rel("x.png"))
}

// A scenarios folder without the paper's files is a usage error naming
// the file.
func TestGenerateMissingScenario(t *testing.T) {
	err := New(Config{Scenarios: t.TempDir(), Out: "-", Plots: t.TempDir()}).Generate()
	require.True(t, usage.Is(err))
	require.ErrorContains(t, err, "paper-rtt-60ms.json")
}
