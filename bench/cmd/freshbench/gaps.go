package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/sim"
	"github.com/fresh-udp/fresh/internal/wire"
)

// The measurements behind the "Controller research: the gaps" section of
// RESULTS.md: where owd was weak when the research started (a competing
// CUBIC flow, jitter on fast links, a 100 kbit/s link), measured the same
// way before and after its changes. bench/results/gaps-baseline.json holds
// the "before" (written by "freshbench results --gaps-baseline FILE"), the
// report measures "now" and prints both.

// gapsBaselineFile is the committed "before", in the --plots directory.
const gapsBaselineFile = "gaps-baseline.json"

// gapSeeds are the paired seeds of the multi-seed rows: 20, the minimum
// the controller research reports mean ± SD over.
var gapSeeds = seedRange(1, 20)

var gapSeedsLabel = "1-20" // gapSeeds as --seeds reads it

// gapsFairnessCCs are compared beside three CUBIC flows over gapSeeds.
var gapsFairnessCCs = []string{"owd", "owd-eq2", "cubic", "reno", "rttdelay"}

// gapScenario is one gap-* scenario of the section.
type gapScenario struct {
	name  string
	seeds bool // also over gapSeeds (the CUBIC scenarios, where one seed says little)
	thin  bool // queueing also in packet times: on a thin link a few packets are seconds
}

var gapScenarios = []gapScenario{
	{name: "gap-cubic-1", seeds: true},
	{name: "gap-cubic-thin", seeds: true},
	{name: "gap-jitter-20ms-10mbps", seeds: true},
	{name: "gap-jitter-10ms-50mbps", seeds: true},
	{name: "gap-thin-100kbps", thin: true, seeds: true},
}

// gapsCCs are compared on every gap scenario.
var gapsCCs = []string{"owd", "cubic"}

// gapRow is one scenario under one controller over some seeds.
type gapRow struct {
	ccSummary
	// Seeds is "file" (the scenario's own seed, one run) or a --seeds
	// list.
	Seeds string `json:"seeds"`
	// PacketTimeMs is one bulk packet's serialisation time on the forward
	// link, (MSS + headers)·8 / rate, for queueing in packet times.
	PacketTimeMs float64 `json:"packet_time_ms"`
}

func (r gapRow) key() string { return r.Scenario + "/" + r.CC + "/" + r.Seeds }

// gapsBaseline is the file format of gaps-baseline.json.
type gapsBaseline struct {
	// Source is the commit measured ("git describe" of the scenarios'
	// tree), Command what measured it.
	Source  string   `json:"source"`
	Command string   `json:"command"`
	Rows    []gapRow `json:"rows"`
}

const gapsBaselineCommand = "go run ./bench/cmd/freshbench results --gaps-baseline bench/results/gaps-baseline.json"

func seedRange(first, last int64) []int64 {
	var out []int64
	for s := first; s <= last; s++ {
		out = append(out, s)
	}
	return out
}

// gapRows measures every row of the section.
func (c *resultsCommand) gapRows() ([]gapRow, error) {
	var rows []gapRow
	for _, cc := range gapsFairnessCCs {
		r, err := c.gapRow("paper-fairness", cc, gapSeeds)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	for _, g := range gapScenarios {
		for _, cc := range gapsCCs {
			r, err := c.gapRow(g.name, cc, nil)
			if err != nil {
				return nil, err
			}
			rows = append(rows, r)
		}
	}
	for _, g := range gapScenarios {
		if !g.seeds {
			continue
		}
		for _, cc := range gapsCCs {
			r, err := c.gapRow(g.name, cc, gapSeeds)
			if err != nil {
				return nil, err
			}
			rows = append(rows, r)
		}
	}
	return rows, nil
}

// gapRow runs scenario name under cc once per seed (nil: the file's seed)
// and summarises the runs as "freshbench sim --seeds" does.
func (c *resultsCommand) gapRow(name, cc string, seeds []int64) (gapRow, error) {
	s, err := c.load(name)
	if err != nil {
		return gapRow{}, err
	}
	label := "file"
	if seeds == nil {
		seeds = []int64{s.Seed}
	} else {
		label = gapSeedsLabel
	}
	var runs []*report.Run
	for _, seed := range seeds {
		var r *report.Run
		if seed == s.Seed {
			r, err = c.run(name, cc) // the file's seed: shared with the other sections
		} else {
			v := *s
			v.Seed = seed
			r, err = sim.Run(&v, sim.Options{CC: cc})
		}
		if err != nil {
			return gapRow{}, fmt.Errorf("%s under %s, seed %d: %w", name, cc, seed, err)
		}
		runs = append(runs, r)
	}
	wireBytes := s.MSS + wire.HeaderLen + wire.DataOverhead + ipUDPHeaders
	return gapRow{
		ccSummary:    summarizeRuns(s, cc, runs),
		Seeds:        label,
		PacketTimeMs: report.Round3(float64(wireBytes*8) / float64(s.Forward.Rate) * 1e3),
	}, nil
}

// ipUDPHeaders is IPv4's 20 bytes and UDP's 8 on every datagram, as the
// simulator puts them on the link.
const ipUDPHeaders = 28

// readGapsBaseline reads the committed "before" from dir; no file is no
// baseline (every "before" cell "-").
func readGapsBaseline(dir string) (map[string]gapRow, error) {
	out := map[string]gapRow{}
	if dir == "" {
		return out, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, gapsBaselineFile))
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	var base gapsBaseline
	if err := json.Unmarshal(b, &base); err != nil {
		return nil, fmt.Errorf("%s: %w", gapsBaselineFile, err)
	}
	for _, r := range base.Rows {
		out[r.key()] = r
	}
	return out, nil
}

// writeGapsBaseline measures the section's rows and writes them to path,
// the "before" of later reports.
func (c *resultsCommand) writeGapsBaseline(path string) error {
	rows, err := c.gapRows()
	if err != nil {
		return err
	}
	b, err := marshalStable(gapsBaseline{Source: sourceRevision(c.dir), Command: gapsBaselineCommand, Rows: rows})
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// sourceRevision names the controllers the baseline measured: the last
// commit that changed owd/ or cc/ in the scenarios' git tree (a rebase
// keeps that commit's hash, unlike the tip's), and whether they have
// uncommitted changes; "unknown revision" outside a git tree.
func sourceRevision(dir string) string {
	git := func(args ...string) (string, error) {
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
		return strings.TrimSpace(string(out)), err
	}
	rev, err := git("log", "-1", "--format=%h %s", "--", ":/owd", ":/cc")
	if err != nil || rev == "" {
		return "unknown revision"
	}
	src := "owd/ and cc/ as of commit " + rev
	if st, err := git("status", "--porcelain", "--", ":/owd", ":/cc"); err == nil && st != "" {
		src += ", with uncommitted changes"
	}
	return src
}
