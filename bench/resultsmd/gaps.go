package resultsmd

import (
	"fmt"
	"os"
	"strings"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/seeds"
	"github.com/fresh-udp/fresh/bench/sim"
	"github.com/fresh-udp/fresh/bench/summary"
	"github.com/fresh-udp/fresh/bench/table"
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
var gapSeeds = seeds.Range(1, 20)

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
	summary.Row
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

// gaps writes the "Controller research: the gaps" section: owd where it
// was weak (beside CUBIC, jitter on fast links, a 100 kbit/s link), each
// number beside the committed "before" (gaps-baseline.json).
func (c *Report) gaps() error {
	rows, err := c.gapRows()
	if err != nil {
		return err
	}
	g, err := newBeforeNow(rows, c.plots, gapsBaselineFile)
	if err != nil {
		return err
	}
	c.printf("\n## Controller research: the gaps\n\n%s\n\n", gapsProse)
	c.printf("\"Before\" is `bench/results/%s`, measured before the research changed\n", gapsBaselineFile)
	c.printf("owd (`freshbench results --gaps-baseline`); \"now\" is this report's run.\n\n")
	c.gapsFairness(g)
	c.gapsFileSeed(g)
	c.gapsSeeds(g)
	return nil
}

// gapTables is the section's rows, before (the baseline) and now.
type gapTables = beforeNow[gapRow]

// The section's cells.
func gapShare(r gapRow) string {
	return fmt.Sprintf("%.1f ± %.1f %% (%.1f–%.1f)", 100*r.Share.Mean, 100*r.Share.SD, 100*r.Share.Min, 100*r.Share.Max)
}
func gapJain(r gapRow) string { return fmt.Sprintf("%.3f ± %.3f", r.Jain.Mean, r.Jain.SD) }
func gapUtil(r gapRow) string { return fmt.Sprintf("%.3f", r.Utilization.Mean) }
func gapUtilPM(r gapRow) string {
	return fmt.Sprintf("%.3f ± %.3f", r.Utilization.Mean, r.Utilization.SD)
}
func gapGoodput(r gapRow) string   { return table.BitRate(r.GoodputBps.Mean) }
func gapGoodputPM(r gapRow) string { return table.BitRatePM(r.GoodputBps) }
func gapQueue(r gapRow) string {
	return fmt.Sprintf("%.1f ± %.1f ms", r.QueueP95Ms.Mean, r.QueueP95Ms.SD)
}

// gapQueuePackets is gapQueue, and in packet times where the row knows
// one.
func gapQueuePackets(r gapRow) string {
	q := gapQueue(r)
	if r.PacketTimeMs > 0 {
		q += fmt.Sprintf(" = %.2f ± %.2f packet times", r.QueueP95Ms.Mean/r.PacketTimeMs, r.QueueP95Ms.SD/r.PacketTimeMs)
	}
	return q
}

// gapsFairness is the table of every controller beside three CUBIC flows.
func (c *Report) gapsFairness(g *gapTables) {
	c.printf("| controller beside three CUBIC flows | share before | share now | Jain before | Jain now |\n|---|---:|---:|---:|---:|\n")
	for _, cc := range gapsFairnessCCs {
		key := "paper-fairness/" + cc + "/" + gapSeedsLabel
		c.printf("| %s | %s | %s |\n", cc, g.pair(key, gapShare), g.pair(key, gapJain))
	}
	c.printf("\n`go run ./bench/cmd/freshbench sim --seeds %s --cc %s bench/scenarios/paper-fairness.json`\n\n",
		gapSeedsLabel, strings.Join(gapsFairnessCCs, ","))
}

// gapsFileSeed is the table of every gap scenario on the file's seed.
func (c *Report) gapsFileSeed(g *gapTables) {
	c.printf("| scenario (file's seed) | cc | utilisation before | utilisation now | goodput before | goodput now | p95 queueing before | p95 queueing now |\n|---|---|---:|---:|---:|---:|---:|---:|\n")
	var files []string
	for _, gs := range gapScenarios {
		files = append(files, "bench/scenarios/"+gs.name+".json")
		queue := func(r gapRow) string {
			q := fmt.Sprintf("%.1f ms", r.QueueP95Ms.Mean)
			if gs.thin && r.PacketTimeMs > 0 {
				q += fmt.Sprintf(" = %.1f packet times of %.1f ms", r.QueueP95Ms.Mean/r.PacketTimeMs, r.PacketTimeMs)
			}
			return q
		}
		for _, cc := range gapsCCs {
			key := gs.name + "/" + cc + "/file"
			c.printf("| %s | %s | %s | %s | %s |\n", gs.name, cc, g.pair(key, gapUtil), g.pair(key, gapGoodput), g.pair(key, queue))
		}
	}
	c.printf("\n`go run ./bench/cmd/freshbench sim --cc %s %s`\n\n", strings.Join(gapsCCs, ","), strings.Join(files, " "))
}

// gapsSeeds is the table of the gap scenarios over gapSeeds.
func (c *Report) gapsSeeds(g *gapTables) {
	c.printf("| scenario (seeds %s) | cc | share before | share now | goodput before | goodput now | utilisation before | utilisation now | p95 queueing before | p95 queueing now |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n", gapSeedsLabel)
	var files []string
	for _, gs := range gapScenarios {
		if !gs.seeds {
			continue
		}
		files = append(files, "bench/scenarios/"+gs.name+".json")
		q := gapQueue
		if gs.thin {
			q = gapQueuePackets
		}
		for _, cc := range gapsCCs {
			key := gs.name + "/" + cc + "/" + gapSeedsLabel
			c.printf("| %s | %s | %s | %s | %s | %s |\n", gs.name, cc, g.pair(key, gapShare), g.pair(key, gapGoodputPM), g.pair(key, gapUtilPM), g.pair(key, q))
		}
	}
	c.printf("\n`go run ./bench/cmd/freshbench sim --seeds %s --cc %s %s`\n", gapSeedsLabel, strings.Join(gapsCCs, ","), strings.Join(files, " "))
}

// gapRows measures every row of the section.
func (c *Report) gapRows() ([]gapRow, error) {
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
func (c *Report) gapRow(name, cc string, seedList []int64) (gapRow, error) {
	s, err := c.load(name)
	if err != nil {
		return gapRow{}, err
	}
	label := "file"
	if seedList == nil {
		seedList = []int64{s.Seed}
	} else {
		label = gapSeedsLabel
	}
	var runs []*report.Run
	for _, seed := range seedList {
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
		Row:          summary.Runs(s, cc, runs),
		Seeds:        label,
		PacketTimeMs: report.Round3(float64(wireBytes*8) / float64(s.Forward.Rate) * 1e3),
	}, nil
}

// ipUDPHeaders is IPv4's 20 bytes and UDP's 8 on every datagram, as the
// simulator puts them on the link.
const ipUDPHeaders = 28

// WriteGapsBaseline measures the rows of "Controller research: the gaps"
// and writes them to path as JSON: the "before" of later reports
// (bench/results/gaps-baseline.json). It writes no report.
func (c *Report) WriteGapsBaseline(path string) error {
	rows, err := c.gapRows()
	if err != nil {
		return err
	}
	b, err := report.Marshal(gapsBaseline{Source: sourceRevision(c.dir), Command: gapsBaselineCommand, Rows: rows})
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// gapsProse is the text of the "Controller research: the gaps" section
// around its tables: what was changed in owd and why, written by hand.
// Backticks are written as § (a Go raw string cannot hold them).
var gapsProse = strings.ReplaceAll(`<!-- gaps-prose -->
Three places where §owd§ failed and a user could not leave it on: beside a
buffer-filling TCP flow in a drop-tail buffer (4 % of the link beside three
CUBIC flows, 2.5 % beside one), under delay noise that keeps packet order
(33 % of a 10 Mbit/s link with 20 ms of it, 12 % of 50 Mbit/s with 10 ms),
and on a 100 kbit/s link (9 packets of p95 queueing). Each got a mechanism
from the delay-based controllers that handle it, adopted only where every
other number held; each has its own file in §owd/§, a Tuning switch to turn
it off, unit tests per rule, and a §bench/sim§ test. The scenarios are
§bench/scenarios/gap-*.json§ (and §robust-slow-short§, §robust-jitter-slow§
for the false switches below).

**Beside a buffer filler: competitive mode** (§owd/compete.go§; the entry
and exit described here were replaced by the drain test of "Controllers on
paths nobody tuned for" below, after they switched alone on cellular
traces; the numbers in this paragraph are from when it was written, the
tables show today's). Copa's mode
switch (Arun and Balakrishnan, NSDI 2018, Section 2.2) on one-way delay: if the
queue did not nearly empty in two windows of 5·SRTT, and the queue is
someone else's — the flow sits at its 2-packet floor, or cutting its window
by a quarter did not lower the queue, or the queue does not follow its
window — or if two congestive losses hit the flow at its floor within 30 s
(the latecomer, who joined a full buffer and never saw it empty), the window
becomes CUBIC's (RFC 9438). The way back is Nimbus's question (SIGCOMM 2022)
asked with the base-delay slowdown §owd§ already runs: if holding the
window at the floor for two round trips drains the queue, the buffer filler
is gone, and the flow slow-starts back to its delay target (a switch back
within 10 s undoes a wrong return: beside one CUBIC flow the queue does
drain after CUBIC's cut, so it resumes at 0.7 of the CUBIC window it had).
Copa+'s critique
(false switches) is answered by the "someone else's" test: each of its three
parts was added after a false switch on a path outside the gap scenarios
(below). Results: beside three CUBIC flows §owd§'s share went from 4.0 ± 0.2 %
to 18.3 ± 3.8 % (20 paired seeds; CUBIC itself gets 22.1 ± 2.3 % in the same
slot), beside one from 2.5 % to 42.6 ± 2.1 % (CUBIC: 45.4 %); beside one
kernel CUBIC flow (iperf3) through the TUN emulator, 10 Mbit/s, 40 ms, a
one-BDP FIFO, from 4.0 ± 0.2 % (5 runs) to 44.2 ± 4.6 % of the link (10 runs, 40.4–55.3 %)
(§freshbench emu --tun --runs 10 bench/scenarios/tun-10mbps-40ms-vs-cubic.json§,
as root). The worst seed beside three CUBIC flows still gets 10.8 %: there
the flow never sees the queue empty relative to its (latecomer) base and
loses too rarely at its floor to count.

**Order-keeping delay noise: a floor learned from the window's response**
(§owd/response.go§). The issue is not noise the RFC 3550 jitter sees: a link
that holds packets and releases them together moves the delay smoothly from
packet to packet, so J stays small, and at a high sending rate the held
time becomes a standing delay of nearly the whole holding time. What tells
it from a queue is whether it responds to the window: per round (one SRTT)
the controller correlates the round's mean queueing delay with the previous
round's mean window. A queue the flow builds follows its window (0.9 and
more on the paper's paths); noise does not. Below 0.2 the largest round
delay × 2 becomes a floor under μ, capped at 20 ms and at twice the mean
range of the raw samples within a round (noise is jagged within a round, a
queue held by others or by an AQM is smooth). Results: 20 ms of jitter at
10 Mbit/s from 33 % to 93.8 ± 2.0 % utilisation (worst seed 88.7 %), 10 ms
at 50 Mbit/s from 12 % to 87.7 ± 1.2 % (worst 84.9 %; 20 seeds), p95
queueing 7 ms (CUBIC: 49–83 ms).
40 ms of jitter is beyond the 20 ms cap and stays at 18 %.

**Thin links** (§owd/thin.go§, §owd/dispersion.go§). On a 100 kbit/s link one
packet is 87 ms: μ's millisecond targets all mean "a packet or more", the
RFC 3550 term reads the queue's packet steps as 20 ms of jitter, and a
window that grows one packet per round trip overshoots a bandwidth-delay
product of 1.5 packets every time. With the bottleneck's packet time
measured by packet-pair dispersion of the flow's own OWD samples (the
minimum arrival gap of consecutive packets that met in the queue; it does
not shrink with the flow's share, as an ACK-rate estimate does), a link
where a quarter packet exceeds 5 ms gets a target in packets, as Vegas and
Copa have: μ at a quarter packet of queueing, a quarter packet of increase
per round trip, and a paced window that may fall below 2 packets to 1.2
bandwidth-delay products (slowdowns to half of one). A delay-based
slow-start exit with a queue above half the base delay now also drains it
at once (the window × OWDmin/OWDcur, as BBR's drain): the initial window's
queue took 10 s to drain at 100 kbit/s. Results: p95 queueing from 9.1 to
1.16 packet times at 97.5 % utilisation (from 99.6 %).

Found on the way: a flow whose slow start ended on a loss before its first
RTT sample never scheduled a base-delay slowdown (§armProbe§ fixes it).

**Every other target, before → now** (the tables above are regenerated;
"before" is main at 37f15c0): RTT sweep owd p95 queueing 22.4 → 22.4 ms
(bound 1.2 × today's: 26.9 ms; the issue's 16.9 ms was the old model's,
before the simulator ran the shipped session) and goodput 0.970× → 0.969×
CUBIC's (missed before and after); four §owd§ flows Jain 1.000 → 1.000;
loss sweep 1.73× → 1.73× CUBIC; reverse congestion 7.2× → 7.1× rttdelay,
§owd§'s drop 9.5 % → 9.8 % on the file's seed (10.0 % → 10.1 % mean over
seeds 1–6: at the bound before and after), §owd-eq2§'s 7.4 % → 7.7 %; ACP
unchanged (it does not use §owd§): 1.27× the oracle, missed before and
after.

**Tried and rejected**, each measured on the same seeds:

- μ capped in packets with the packet time from the ACK rate: flows that
  share a link each believe it thin (Jain of four §owd§ flows 1.00 → 0.77),
  and random loss lowers the ACK rate (loss sweep 871 → 714–750 kbit/s).
- μ capped alone, without the quarter-packet increase and the drain:
  100 kbit/s p95 788 → 606–690 ms. OWDcur over a time span (half the base
  delay) instead of 4 samples: no gain (360 ms).
- Longer OWDcur filters against jitter (the minimum over 0.5–2 base
  delays, Copa's standing delay): 20 ms jitter 32 → 38–50 %, RTT sweep p95
  22 → 26–107 ms.
- Decrease proportional to OWDv − μ instead of OWDv: jitter 32 → 39 %,
  RTT sweep goodput +1.5 %, but p95 at 50 Mbit/s 5 → 34 ms and a 600 ms
  path 7.3 → 3.8 Mbit/s.
- A noise floor from the spread of samples above their sliding minimum
  (×1.5–3): 20 ms jitter to 47–79 %, but RTT sweep p95 22 → 24–29 ms: the
  1.5 Mbit/s path's packet steps and CBR look the same sample by sample.
  Only the window's response separates them.
- The response test as "did a 2-SRTT decrease episode shrink the queue":
  episodes end before two SRTTs under jitter; it never fired (32 %).
- The response floor without the spread cap: two §owd§ flows p95 6.8 →
  18.9 ms, and §owd§ took 66 % from CUBIC under CoDel (22 % before and now);
  capped at max(base delay, 20 ms): four §owd§ flows' p95 67 → 285 ms.
- Entering competitive mode on a slowdown whose queue did not drain:
  four §owd§ flows Jain 1.00 → 0.77 (their shared standing queue), and
  beside one CUBIC the queue does drain after CUBIC's cut.
- Copa's test alone: false switches on a route change (+100 ms: the delay
  steps and stays flat, hence the "queue moved" condition), on 1 Mbit/s at
  10 ms (p95 58 → 252 ms: the flow's own queue) and on 5–10 ms of jitter at
  1.5–2 Mbit/s (22 → 279 ms).
- Judging "nearly empty" and "moved" against the full RFC 3550 noise term:
  beside three CUBIC flows 18 % → 12–15 % (the competitor's packet-sized
  steps inflate the term to 60 ms).
- Competitive mode for §owd-eq2§: its hold band keeps a standing queue of
  its own; on the reverse-congestion path it switched and lost 14 %.

**Not solved** then (the latecomer and 40 ms of jitter are solved in
"Controllers on paths nobody tuned for"): a latecomer beside a CUBIC flow
that filled a 10 × BDP buffer first (3.5 %, unchanged: the queue it
measures falls with its own window); 40 ms of jitter (18 %); §owd§ beside CUBIC under CoDel keeps 22 %;
at 300 kbit/s the thin-link rules trade utilisation for queue (98.6 → 90 %,
p95 142 → 11 ms); the reverse-congestion drop sits at the 10 % bound as it
did before.`, "§", "`")
