package resultsmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/seeds"
)

// gapsFixture copies the section's scenarios into a temporary folder, cut
// to 8 s (20 s where the test flow starts at 15 s) and 2 seeds so the
// test stays cheap, the thin link with a 500-byte MSS.
func gapsFixture(t *testing.T) *Report {
	t.Helper()
	was, label := gapSeeds, gapSeedsLabel
	gapSeeds, gapSeedsLabel = seeds.Range(1, 2), "1-2"
	t.Cleanup(func() { gapSeeds, gapSeedsLabel = was, label })
	dir := t.TempDir()
	names := []string{"paper-fairness"}
	for _, g := range gapScenarios {
		names = append(names, g.name)
	}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join("..", "scenarios", n+".json"))
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		m["duration"] = "8s"
		if n == "paper-fairness" || n == "gap-cubic-thin" {
			m["duration"] = "20s"
		}
		if n == "gap-thin-100kbps" {
			m["mss"] = 500
		}
		b, err = json.Marshal(m)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, n+".json"), b, 0o644))
	}
	return New(Config{Scenarios: dir, Plots: t.TempDir()})
}

func TestGapsBaselineAndSection(t *testing.T) {
	c := gapsFixture(t)

	// Without a baseline every "before" cell is "-".
	require.NoError(t, c.gaps())
	md := c.md.String()
	require.Contains(t, md, "## Controller research: the gaps\n\n<!-- gaps-prose -->")
	require.Contains(t, md, "| owd | - | ")
	require.Contains(t, md, "--seeds 1-2 --cc owd,owd-eq2,cubic,reno,rttdelay bench/scenarios/paper-fairness.json`")

	path := filepath.Join(c.plots, gapsBaselineFile)
	require.NoError(t, c.WriteGapsBaseline(path))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var base gapsBaseline
	require.NoError(t, json.Unmarshal(b, &base))
	seeded := 0
	for _, g := range gapScenarios {
		if g.seeds {
			seeded++
		}
	}
	require.Len(t, base.Rows, len(gapsFairnessCCs)+len(gapsCCs)*(len(gapScenarios)+seeded))
	keys := map[string]gapRow{}
	for _, r := range base.Rows {
		require.NotContains(t, keys, r.key())
		keys[r.key()] = r
	}
	fair := keys["paper-fairness/owd/1-2"]
	require.Equal(t, 2, fair.Runs)
	require.Equal(t, 2, fair.Share.N)
	require.Equal(t, 1, keys["gap-cubic-1/cubic/file"].Runs)
	require.Equal(t, 2, keys["gap-cubic-1/cubic/1-2"].Runs)
	// Packet time from the scenario's own MSS: (500 + 82 B)·8 / 100 kbit/s;
	// gap-cubic-1 keeps the default, (1000 + 82)·8 / 10 Mbit/s.
	require.Equal(t, 46.56, keys["gap-thin-100kbps/owd/file"].PacketTimeMs)
	require.Equal(t, 0.866, keys["gap-cubic-1/owd/file"].PacketTimeMs)

	// With the baseline, before and now are the same code: equal cells.
	c.md.Reset()
	require.NoError(t, c.gaps())
	md = c.md.String()
	require.NotContains(t, md, "| - |")
	row := regexp.MustCompile(`(?m)^\| owd \| (.+?) \| (.+?) \| (.+?) \| (.+?) \|$`).FindStringSubmatch(md)
	require.NotNil(t, row, md)
	require.Equal(t, row[1], row[2], "share before and now")
	require.Equal(t, row[3], row[4], "Jain before and now")
	require.Regexp(t, `\| gap-thin-100kbps \| owd \| .* = [0-9.]+ packet times of 46\.6 ms \|`, md)
	require.Regexp(t, `\| gap-cubic-1 \| owd \| [0-9.]+ ± [0-9.]+ % \([0-9.]+–[0-9.]+\) \|`, md, "the CUBIC scenarios over seeds report the share")
}
