package cellular

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fresh-udp/fresh/bench/plots"
	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/seeds"
)

// Write writes the files of "freshbench traces": the figures into dir,
// the Markdown section to md (dir/traces.md if ""), linking the figures
// relative to it, and unless json is "" every run to json as
// report.Marshal encodes it; "-" writes the Markdown or the JSON to
// stdout instead of a file. It returns the files it wrote.
func (res *Summary) Write(dir, md, json string, stdout io.Writer) ([]string, error) {
	if md == "" {
		md = filepath.Join(dir, "traces.md")
	}
	wrote, err := res.WriteFigures(dir)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	res.WriteMarkdown(&buf, "##", func(file string) string { return plots.Link(md, dir, file) })
	if md == "-" {
		_, err = stdout.Write(buf.Bytes())
	} else if err = os.WriteFile(md, buf.Bytes(), 0o644); err == nil {
		wrote = append(wrote, md)
	}
	if err != nil || json == "" {
		return wrote, err
	}
	if err := report.WriteJSON(json, res.runs, stdout); err != nil {
		return nil, err
	}
	if json != "-" {
		wrote = append(wrote, json)
	}
	return wrote, nil
}

// figureName is the PNG of a trace's figure.
func (g *group) figureName() string {
	return "traces-" + plots.FileName(strings.ToLower(strings.ReplaceAll(g.trace, ".", "-"))) + ".png"
}

// WriteFigures draws one figure per trace into dir, traces-<trace>.png,
// and returns the paths.
func (res *Summary) WriteFigures(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var wrote []string
	for _, g := range res.groups {
		f, err := res.figure(g)
		if err != nil {
			return wrote, err
		}
		path := filepath.Join(dir, g.figureName())
		if err := f.Save(path); err != nil {
			return wrote, err
		}
		wrote = append(wrote, path)
	}
	return wrote, nil
}

// figure is a trace's throughput–delay figure: a panel per queue
// discipline, side by side on shared axes, each controller's mean over
// the seeds large and labelled, each seed small.
func (res *Summary) figure(g *group) (*plots.Figure, error) {
	s0 := g.scenarios[0].s
	rtt := s0.Forward.Delay.D() + s0.Reverse.Delay.D()
	title := fmt.Sprintf("%s: throughput vs. p95 one-way delay (better: up and right)", g.trace)
	subtitle := fmt.Sprintf("%s/%s, RTT %d ms; each controller's mean over %d seeds (large, labelled) and each seed (small)",
		s0.Forward.DescribeCapacity(), filepath.Ext(g.reverse), rtt.Milliseconds(), len(res.cfg.Seeds))
	var panels []plots.MarkPanel
	for _, ts := range g.scenarios {
		pm := plots.MarkPanel{Title: fmt.Sprintf("%s, %d packets", ts.queue, ts.s.Forward.Queue.Limit)}
		for i, c := range ts.cells {
			pm.Marks = append(pm.Marks, plots.Mark{Label: c.CC, Index: i, X: c.mean(c.OWD95), Y: c.mean(c.Throughput) / 1e6})
			for k := range c.Seeds {
				pm.Small = append(pm.Small, plots.Mark{Label: c.CC, Index: i, X: c.OWD95[k], Y: c.Throughput[k] / 1e6})
			}
		}
		panels = append(panels, pm)
	}
	return plots.ThroughputDelay(title, subtitle, panels)
}

// WriteMarkdown writes the summary's section under a heading of level
// heading ("##"); link(file) is how the section links a figure file
// (relative to the Markdown file).
func (res *Summary) WriteMarkdown(w io.Writer, heading string, link func(string) string) {
	cfg := res.cfg
	fmt.Fprintf(w, "%s Cellular traces\n\n", heading)
	fmt.Fprintf(w, "One bulk flow over a path replaying a cellular link trace, the data direction one file and the\n")
	fmt.Fprintf(w, "ACK direction its pair, 20 ms of propagation each way, a 200-packet buffer at both ends (drop-tail,\n")
	fmt.Fprintf(w, "as base stations keep, or CoDel with RFC 8289's defaults), 60 s from a random point of the trace\n")
	fmt.Fprintf(w, "(`bench/scenarios/trace-*.json`). The traces were recorded with the Saturator tool of Winstein,\n")
	fmt.Fprintf(w, "Sivaraman and Balakrishnan (\"Stochastic Forecasts Achieve High Throughput and Low Delay over\n")
	fmt.Fprintf(w, "Cellular Networks\", NSDI 2013) and are distributed with the Mahimahi emulator (Netravali et al.,\n")
	fmt.Fprintf(w, "\"Mahimahi: Accurate Record-and-Replay for HTTP\", ATC 2015), whose mm-link semantics `bench/netem`\n")
	fmt.Fprintf(w, "replays (`bench/traces/README.md`). Every controller runs the same %d seeds, so each sees the same\n", len(cfg.Seeds))
	fmt.Fprintf(w, "%d windows of every trace. Throughput is the bulk flow's goodput; p95 OWD its 95th-percentile\n", len(cfg.Seeds))
	fmt.Fprintf(w, "one-way delay; utilisation the share of the forward link's delivery-opportunity bytes that carried\n")
	fmt.Fprintf(w, "data. \"Worst\" is the lowest throughput and the highest p95 OWD of any seed, with that seed.\n")
	fmt.Fprintf(w, "Reproduce with `go run ./bench/cmd/freshbench traces --seeds %s --cc %s`.\n\n", seeds.Label(cfg.Seeds), strings.Join(cfg.CCs, ","))

	res.writeOverview(w)
	for _, g := range res.groups {
		res.writeTrace(w, heading, link, g)
	}
}

// writeTrace is one trace's figure and table: a row per queue and
// controller.
func (res *Summary) writeTrace(w io.Writer, heading string, link func(string) string, g *group) {
	fmt.Fprintf(w, "%s# %s (ACKs: %s)\n\n", heading, g.trace, g.reverse)
	fmt.Fprintf(w, "![%s: throughput against p95 one-way delay](%s)\n\n", g.trace, link(g.figureName()))
	fmt.Fprintf(w, "| queue | cc | throughput mean [Mbit/s] | worst seed | p95 OWD mean [ms] | worst seed | utilisation |\n")
	fmt.Fprintf(w, "|---|---|---:|---:|---:|---:|---:|\n")
	for _, ts := range g.scenarios {
		for _, c := range ts.cells {
			tw, ts0 := c.worst(c.Throughput, true)
			ow, os0 := c.worst(c.OWD95, false)
			fmt.Fprintf(w, "| %s | %s | %.2f | %.2f (seed %d) | %.1f | %.1f (seed %d) | %.1f %% |\n",
				ts.queue, c.CC, c.mean(c.Throughput)/1e6, tw/1e6, ts0, c.mean(c.OWD95), ow, os0, 100*c.mean(c.Util))
		}
	}
	fmt.Fprintln(w)
}

// writeOverview is the table over all traces: per queue and controller,
// the median over the traces of its throughput relative to the best
// controller's on that scenario, and of its p95 delay relative to the
// lowest.
func (res *Summary) writeOverview(w io.Writer) {
	type key struct{ queue, cc string }
	rel := map[key][2][]float64{}
	var queues []string
	for _, g := range res.groups {
		for _, ts := range g.scenarios {
			if !slices.Contains(queues, ts.queue) {
				queues = append(queues, ts.queue)
			}
			bestT, bestD := 0.0, math.Inf(1)
			for _, c := range ts.cells {
				bestT, bestD = max(bestT, c.mean(c.Throughput)), min(bestD, c.mean(c.OWD95))
			}
			for _, c := range ts.cells {
				k := key{ts.queue, c.CC}
				v := rel[k]
				if bestT > 0 {
					v[0] = append(v[0], c.mean(c.Throughput)/bestT)
				}
				if bestD > 0 && !math.IsInf(bestD, 1) {
					v[1] = append(v[1], c.mean(c.OWD95)/bestD)
				}
				rel[k] = v
			}
		}
	}
	fmt.Fprintf(w, "Over the %d traces, the median of each controller's mean throughput as a share of the best\n", len(res.groups))
	fmt.Fprintf(w, "controller's on the same scenario, and of its mean p95 OWD as a multiple of the lowest:\n\n")
	fmt.Fprintf(w, "| queue | cc | throughput / best | p95 OWD / lowest |\n|---|---|---:|---:|\n")
	for _, q := range queues {
		for _, name := range res.cfg.CCs {
			v := rel[key{q, name}]
			fmt.Fprintf(w, "| %s | %s | %.2f | %.2f× |\n", q, name, median(v[0]), median(v[1]))
		}
	}
	fmt.Fprintln(w)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
