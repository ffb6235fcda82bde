package resultsmd

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fresh-udp/fresh/bench/sim"
	"github.com/fresh-udp/fresh/bench/summary"
)

// The sections that reproduce the paper: the RTT and loss sweeps, Table
// 3, the sensitivity to forward and reverse congestion, fairness; then the
// simulator's speed, and every target before and after the simulator ran
// the shipped session.

// The controllers compared in every bulk experiment, in table order.
var resultsCCs = []string{"owd", "owd-eq2", "cubic", "htcp", "reno", "rttdelay"}

// The paper's averages ("Adaptive congestion control in IoT networks:
// Leveraging one-way delay for enhanced performance", §5, Fig. 10 and 12).
var (
	paperRTT  = map[string]float64{"owd": 542.9, "cubic": 521, "htcp": 494, "reno": 485}
	paperLoss = map[string]float64{"owd": 528.5, "htcp": 508.1, "cubic": 472.3, "reno": 459.2}
)

// rttSweep writes the section "RTT sweep (Fig. 9/10)".
func (c *Report) rttSweep() error {
	names, cols := series("paper-rtt-%dms", "%d ms", 60, 75, 90, 105, 120, 135, 150)
	c.printf("## RTT sweep (Fig. 9/10)\n\n")
	c.printf("Dumbbell, 1.5 Mbit/s bottleneck both ways, 50-packet drop-tail FIFO, CBR\n")
	c.printf("200 kbit/s forward and 1000 kbit/s reverse, RTT 60…150 ms\n")
	c.printf("(`bench/scenarios/paper-rtt-*`). Goodput of the bulk flow, kbit/s:\n\n")
	gp, q95, err := c.sweepTable("RTT", names, cols)
	if err != nil {
		return err
	}
	c.paperRow("RTT sweep", paperRTT, gp)
	rc, rr, rq := gp["owd"]/gp["cubic"], gp["owd"]/gp["reno"], q95["owd"]/q95["cubic"]
	c.printf("Targets: owd ≥ 1.04× CUBIC goodput: %.3f× %s; ≥ 1.15× NewReno: %.3f× %s;\n", rc, c.target("RTT sweep: owd / CUBIC goodput (≥ 1.04×)", fmt.Sprintf("%.3f×", rc), rc >= 1.04), rr, c.target("RTT sweep: owd / NewReno goodput (≥ 1.15×)", fmt.Sprintf("%.3f×", rr), rr >= 1.15))
	c.printf("owd p95 queueing ≤ 0.5× CUBIC's: %.2f× %s.\n\n", rq, c.target("RTT sweep: owd / CUBIC p95 queueing (≤ 0.5×)", fmt.Sprintf("%.2f×", rq), rq <= 0.5))
	c.printf("Why we differ from the paper. The paper's goodputs (≈ 500 kbit/s on a path\n")
	c.printf("with 1.3 Mbit/s left over by the CBR flow) say its TCPs left most of the\n")
	c.printf("link idle; ours do not: here CUBIC, H-TCP and NewReno fill the 50-packet\n")
	c.printf("buffer and run the link at 100 %%, so no controller can beat them on goodput\n")
	c.printf("by 4 %% — that would exceed the capacity. What the loss-based controllers pay\n")
	c.printf("for it is a full buffer: %.0f ms of p95 queueing for CUBIC against %.0f ms\n", q95["cubic"], q95["owd"])
	c.printf("for owd. owd gives up %.1f %% of CUBIC's goodput for that: its Eq. 7\n", 100*(1-rc))
	c.printf("decrease is multiplicative per RTT and empties the queue now and then, and\n")
	c.printf("the base-delay probe pins the window to 2 packets for 2 SRTT every 20 s.\n")
	c.printf("`owd-eq2` (additive decrease) keeps %.1f %% of CUBIC's goodput with %.1f ms\n", 100*gp["owd-eq2"]/gp["cubic"], q95["owd-eq2"])
	c.printf("of p95 queueing, but loses on fairness (below).\n\n")
	if file, err := c.summary("paper-rtt-90ms"); err != nil {
		return err
	} else if file != "" {
		c.printf("![RTT 90 ms: goodput against p95 delay](%s)\n", c.rel(file))
	}
	if err := c.traced("paper-rtt-90ms", "owd"); err != nil {
		return err
	}
	c.printf("![owd window at RTT 90 ms](%s)\n", c.rel("paper-rtt-90ms-owd-cwnd.png"))
	c.printf("![owd one-way delay at RTT 90 ms](%s)\n\n", c.rel("paper-rtt-90ms-owd-owd.png"))
	return nil
}

// lossSweep writes the section "Loss sweep (Fig. 11/12)".
func (c *Report) lossSweep() error {
	names, cols := series("paper-loss-%dpct", "%d %%", 1, 2, 4, 6, 8, 10)
	c.printf("## Loss sweep (Fig. 11/12)\n\n")
	c.printf("As the RTT sweep at 100 ms RTT, with Bernoulli loss of 1…10 %% on the forward\n")
	c.printf("(data) path (`paper-loss-*`; the paper does not say which direction or RTT).\n")
	c.printf("Goodput, kbit/s:\n\n")
	gp, _, err := c.sweepTable("loss", names, cols)
	if err != nil {
		return err
	}
	c.paperRow("loss sweep", paperLoss, gp)
	lc := gp["owd"] / gp["cubic"]
	c.printf("Target: owd ≥ 1.10× CUBIC: %.2f× %s. Loss differentiation is what does it:\n", lc, c.target("loss sweep: owd / CUBIC goodput (≥ 1.10×)", fmt.Sprintf("%.2f×", lc), lc >= 1.10))
	c.printf("a loss while OWDv ≤ μ (short queue) costs ×0.9 instead of ×0.7/×0.5, so\n")
	c.printf("random loss does not keep the window small. The paper's ordering (owd >\n")
	c.printf("H-TCP > CUBIC > NewReno) is reproduced; our gaps are wider because\n")
	c.printf("our loss-based baselines respond to every random loss as the RFCs say.\n\n")
	if file, err := c.summary("paper-loss-2pct"); err != nil {
		return err
	} else if file != "" {
		c.printf("![2 %% loss: goodput against p95 delay](%s)\n\n", c.rel(file))
	}
	return nil
}

// table3 writes the section "Table 3 instances (Fig. 13)".
func (c *Report) table3() error {
	names, cols := series("paper-table3-%d", "%d", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	c.printf("## Table 3 instances (Fig. 13)\n\n")
	c.printf("Bandwidth 1…10 Mbit/s, RTT 340…50 ms, loss 1…10 %% as Table 3 lists; background\n")
	c.printf("UDP scaled to the bandwidth in the RTT sweep's proportions (2/15 forward,\n")
	c.printf("2/3 reverse). Goodput, kbit/s:\n\n")
	gp, _, err := c.sweepTable("instance", names, cols)
	if err != nil {
		return err
	}
	c.printf("owd averages %.2f× CUBIC and %.2f× NewReno here. With 1–10 %% random loss\n", gp["owd"]/gp["cubic"], gp["owd"]/gp["reno"])
	c.printf("every instance is loss-dominated, so this repeats the loss sweep's story.\n\n")
	return nil
}

// sweepTable runs the "bulk" flow of each scenario under every controller
// and writes a goodput table (kbit/s) with a mean row; it returns the means
// of goodput and of p95 queueing delay per controller.
func (c *Report) sweepTable(label string, names, cols []string) (gp, q95 map[string]float64, err error) {
	gp, q95 = map[string]float64{}, map[string]float64{}
	c.printf("| %s | %s |\n|---|%s\n", label, strings.Join(resultsCCs, " | "), strings.Repeat("---:|", len(resultsCCs)))
	for i, n := range names {
		row := []string{cols[i]}
		for _, cc := range resultsCCs {
			r, err := c.run(n, cc)
			if err != nil {
				return nil, nil, err
			}
			f := flow(r, "bulk")
			gp[cc] += f.GoodputBps / 1e3 / float64(len(names))
			q95[cc] += f.QueueMs.P95 / float64(len(names))
			row = append(row, fmt.Sprintf("%.0f", f.GoodputBps/1e3))
		}
		c.printf("| %s |\n", strings.Join(row, " | "))
	}
	row := []string{"**mean**"}
	for _, cc := range resultsCCs {
		row = append(row, fmt.Sprintf("**%.0f**", gp[cc]))
	}
	c.printf("| %s |\n", strings.Join(row, " | "))
	row = []string{"mean p95 queueing [ms]"}
	for _, cc := range resultsCCs {
		row = append(row, fmt.Sprintf("%.1f", q95[cc]))
	}
	c.printf("| %s |\n\n", strings.Join(row, " | "))
	return gp, q95, nil
}

// series names the scenarios of one sweep and their table column labels.
func series(nameFmt, colFmt string, values ...int) (names, cols []string) {
	for _, v := range values {
		names = append(names, fmt.Sprintf(nameFmt, v))
		cols = append(cols, fmt.Sprintf(colFmt, v))
	}
	return names, cols
}

// paperRow prints the paper's averages beside ours.
func (c *Report) paperRow(what string, paper, ours map[string]float64) {
	c.printf("Paper (%s averages) beside ours, kbit/s:\n\n| | owd | CUBIC | H-TCP | NewReno |\n|---|---:|---:|---:|---:|\n", what)
	c.printf("| paper | %.1f | %.1f | %.1f | %.1f |\n", paper["owd"], paper["cubic"], paper["htcp"], paper["reno"])
	c.printf("| fresh | %.1f | %.1f | %.1f | %.1f |\n\n", ours["owd"], ours["cubic"], ours["htcp"], ours["reno"])
}

func (c *Report) sensitivity() error {
	c.printf("## Sensitivity: forward vs reverse congestion (Figs. 6/7)\n\n")
	c.printf("100 ms RTT, 1.5 Mbit/s. `base`: light CBR both ways. `fwd`: a CUBIC bulk flow\n")
	c.printf("shares the forward path. `rev`: a CUBIC bulk flow runs on the reverse path,\n")
	c.printf("so our ACKs queue behind it (its sawtooth moves the RTT between ≈ 100 and\n")
	c.printf("370 ms). Goodput of the flow under test, kbit/s, and its p95 one-way delay:\n\n")
	c.printf("| scenario | %s |\n|---|%s\n", strings.Join(resultsCCs, " | "), strings.Repeat("---:|", len(resultsCCs)))
	gp := map[string]map[string]float64{}
	for _, n := range []string{"base", "fwd", "rev"} {
		gp[n] = map[string]float64{}
		row := []string{n}
		for _, cc := range resultsCCs {
			r, err := c.run("paper-sensitivity-"+n, cc)
			if err != nil {
				return err
			}
			f := flow(r, "bulk")
			gp[n][cc] = f.GoodputBps / 1e3
			row = append(row, fmt.Sprintf("%.0f (%.0f ms)", f.GoodputBps/1e3, f.OWDms.P95))
		}
		c.printf("| %s |\n", strings.Join(row, " | "))
	}
	ratio := gp["rev"]["owd"] / gp["rev"]["rttdelay"]
	drop := 1 - gp["rev"]["owd"]/gp["base"]["owd"]
	drop2 := 1 - gp["rev"]["owd-eq2"]/gp["base"]["owd-eq2"]
	c.printf("\nTargets: under reverse congestion owd ≥ 1.5× rttdelay: %.1f× %s; owd's goodput\n", ratio, c.target("reverse congestion: owd / rttdelay goodput (≥ 1.5×)", fmt.Sprintf("%.1f×", ratio), ratio >= 1.5))
	c.printf("drops ≤ 10 %% from the uncongested-reverse case: %.1f %% %s (owd-eq2: %.1f %% %s).\n\n", 100*drop, c.target("reverse congestion: owd's goodput drop (≤ 10 %)", fmt.Sprintf("%.1f %%", 100*drop), drop <= 0.10), 100*drop2, c.target("reverse congestion: owd-eq2's goodput drop (≤ 10 %)", fmt.Sprintf("%.1f %%", 100*drop2), drop2 <= 0.10))
	c.printf("The Vegas-style controller reads the ACK-path queue as its own and backs off\n")
	c.printf("to almost nothing; owd does not, because its signal is the forward one-way\n")
	c.printf("delay. What remains of owd's loss comes from the window itself: a window\n")
	c.printf("sends at cwnd/RTT, so it slows down when the RTT grows and bursts when it\n")
	c.printf("shrinks. fresh's reverse-path compensation (owd/reverse.go) scales the\n")
	c.printf("window by RTT/(RTT − ACK-path queueing), which cut that loss from 26 %% to\n")
	c.printf("15 %% (measured while developing it). The rest came from the control loop\n")
	c.printf("itself: its feedback takes the whole inflated RTT while ACKs arrive at the\n")
	c.printf("forward rate, so it applied RTT/(RTT − queueing) times too many window\n")
	c.printf("steps per feedback delay, kept decreasing after the forward queue had\n")
	c.printf("drained and left the link idle. Dividing each step by that factor, and\n")
	c.printf("timing the base-delay probe's hold by the forward loop, gives the figure\n")
	c.printf("above; with a clean ACK path both are no-ops.\n")
	c.printf("In `fwd` every delay-based controller yields to the loss-based CUBIC flow —\n")
	c.printf("the known limit of delay-based control against a buffer-filling competitor.\n\n")
	return nil
}

func (c *Report) fairness() error {
	c.printf("## Fairness (Fig. 14)\n\n")
	c.printf("1.5 Mbit/s, 100 ms RTT, 50-packet FIFO. `fairness-4`: four flows of the same\n")
	c.printf("controller starting at 0, 5, 10, 15 s. `paper-fairness`: three CUBIC flows\n")
	c.printf("(0, 5, 10 s) and the flow under test (15 s). Jain's index over the bulk\n")
	c.printf("flows while all are active, and the test flow's share of the goodput:\n\n")
	c.printf("| controller | Jain, 4 of a kind | Jain, with 3 CUBIC | test flow's share with 3 CUBIC |\n|---|---:|---:|---:|\n")
	jain, shares := map[string]float64{}, map[string]float64{}
	var withCubic float64
	for _, cc := range resultsCCs {
		r4, err := c.run("fairness-4", cc)
		if err != nil {
			return err
		}
		r, err := c.run("paper-fairness", cc)
		if err != nil {
			return err
		}
		share := summary.GoodputShare(r, summary.ByName("under-test"), summary.AnyFlow)
		jain[cc], shares[cc] = r4.Jain, share
		if cc == "owd" {
			withCubic = r.Jain
			c.targets = append(c.targets, targetRow{key: "fairness: owd's share beside three CUBIC", now: fmt.Sprintf("%.1f %%", 100*share), info: true})
		}
		c.printf("| %s | %.3f | %.3f | %.1f %% |\n", cc, r4.Jain, r.Jain, 100*share)
	}
	c.printf("\nTarget: four owd flows, Jain ≥ 0.95: %.3f %s. owd with three CUBIC flows\n", jain["owd"], c.target("fairness: Jain of four owd flows (≥ 0.95)", fmt.Sprintf("%.3f", jain["owd"]), jain["owd"] >= 0.95))
	c.printf("(aim ≥ 0.9): %.3f %s. The Eq. 7 decrease is multiplicative per RTT, which\n", withCubic, c.target("fairness: Jain of owd with three CUBIC (aim ≥ 0.9)", fmt.Sprintf("%.3f", withCubic), withCubic >= 0.9))
	c.printf("is what equalises competing windows (Chiu–Jain); Eq. 2's additive decrease\n")
	c.printf("does not (%.3f), which is why fresh's default is Eq. 7. Against CUBIC a\n", jain["owd-eq2"])
	c.printf("delay-based flow backs off from the queue CUBIC builds on purpose: Eq. 2,\n")
	c.printf("the paper's rule, gets %.1f %%. owd gets its share by switching to CUBIC\n", 100*shares["owd-eq2"])
	c.printf("while the queue never empties and is someone else's, and back once a\n")
	c.printf("slowdown drains it (\"Controller research: the gaps\" below, with 20 seeds);\n")
	c.printf("the paper reports owd the fairest without such a switch, which we could\n")
	c.printf("not reproduce.\n\n")
	return nil
}

// speed measures how much faster than real time the simulator runs the
// 100 s RTT scenario: median of 5 runs under owd.
func (c *Report) speed() error {
	s, err := c.load("paper-rtt-90ms")
	if err != nil {
		return err
	}
	var walls []float64
	for range 5 {
		start := time.Now()
		if _, err := sim.Run(s, sim.Options{CC: "owd"}); err != nil {
			return err
		}
		walls = append(walls, time.Since(start).Seconds())
	}
	slices.Sort(walls)
	ratio := s.Duration.D().Seconds() / walls[2]
	c.printf("## Simulator speed\n\n")
	c.printf("`paper-rtt-90ms` (100 s simulated, owd) took %.1f ms of wall time, median of\n", 1000*walls[2])
	c.printf("5 runs on this machine: %.0f× real time. Target ≥ 100×: %s. (This number\n", ratio, c.target("simulator speed (≥ 100× real time)", fmt.Sprintf("%.0f×", ratio), ratio >= 100))
	c.printf("changes from run to run; everything above is deterministic.)\n")
	return nil
}

// beforeSession holds every target as the simulator measured it while it
// had its own model of the endpoint (40-byte headers, fixed 64-byte ACKs,
// no pacing burst, no handshake; commit 6ec9111), before it drove the
// shipped session. The table in "Before and after" puts them beside
// today's numbers.
var beforeSession = []struct{ key, then string }{
	{"RTT sweep: owd / CUBIC goodput (≥ 1.04×)", "0.967×"},
	{"RTT sweep: owd / NewReno goodput (≥ 1.15×)", "0.969×"},
	{"RTT sweep: owd / CUBIC p95 queueing (≤ 0.5×)", "0.06×"},
	{"loss sweep: owd / CUBIC goodput (≥ 1.10×)", "1.70×"},
	{"reverse congestion: owd / rttdelay goodput (≥ 1.5×)", "8.7×"},
	{"reverse congestion: owd's goodput drop (≤ 10 %)", "5.7 %"},
	{"reverse congestion: owd-eq2's goodput drop (≤ 10 %)", "4.5 %"},
	{"fairness: Jain of four owd flows (≥ 0.95)", "1.000"},
	{"fairness: Jain of owd with three CUBIC (aim ≥ 0.9)", "0.793"},
	{"fairness: owd's share beside three CUBIC", "4.0 %"},
	{"ACP: worst acp / oracle age (≤ 1.10×)", "1.06×"},
	{"ACP: worst acp / Lazy age (≤ 0.8×)", "0.74×"},
	{"simulator speed (≥ 100× real time)", "3286×"},
}

// beforeAfter writes the table of every target before and after the
// simulator ran the shipped session.
func (c *Report) beforeAfter() error {
	c.printf("\n## Before and after: the simulator runs the shipped session\n\n")
	c.printf("Until this report the simulator had its own model of the endpoint;\n")
	c.printf("now it drives the transport's own sans-I/O session (internal/session),\n")
	c.printf("so the numbers above describe the protocol fresh ships. Every target,\n")
	c.printf("as the old model measured it (commit 6ec9111) and as measured now:\n\n")
	c.printf("| target | old model | shipped session | verdict |\n|---|---:|---:|---|\n")
	now := map[string]targetRow{}
	for _, t := range c.targets {
		now[t.key] = t
	}
	for _, b := range beforeSession {
		t, ok := now[b.key]
		if !ok {
			c.printf("| %s | %s | (not measured) | |\n", b.key, b.then)
			continue
		}
		v := verdict(t.met)
		if t.info {
			v = "(no target)"
		}
		c.printf("| %s | %s | %s | %s |\n", b.key, b.then, t.now, v)
	}
	c.printf("\n%s\n", whyTheNumbersMoved)
	return nil
}

// whyTheNumbersMoved explains every change in the table above that is
// larger than noise, each with the experiment that showed its cause.
const whyTheNumbersMoved = `What moved, and why (each cause checked by switching it off in one run):

- **Headers.** Every data packet now carries what fresh sends: a 28-byte
  header, a 26-byte frame and 28 bytes of IPv4 and UDP, 82 bytes against the
  old model's 40. Every controller loses about 4 % of goodput for it
  (CUBIC 1251 → 1203 kbit/s on the RTT sweep); the goodput ratios move by
  less than 0.5 %.
- **owd's p95 queueing on the RTT sweep, 16.9 → 22 ms.** The session's pacer
  allows a 2 ms burst after an idle gap (a user-space timer cannot wake much
  more finely); the old model paced strictly. With the burst set to 0 the
  session gives 18.4, 18.4 and 16.6 ms at 60, 90 and 150 ms RTT, the old
  model's 18.0, 18.1 and 16.6 ms. The ratio to CUBIC (0.08×) stays far below
  the 0.5× bar.
- **Reverse congestion, owd's drop 5.7 → 8.7 %.** Running the real session
  first gave 18.0 %, and showed a protocol bug: after 16 gaps every ACK
  carried all 16 ACK ranges (288 bytes) for the rest of the connection, so
  the reverse CUBIC flow's ACKs took 200 kbit/s of owd's 1.5 Mbit/s forward
  link. The session now stops repeating ranges the sender has seen
  acknowledged (RFC 9000 §13.2.4), which gave 8.7 %. The rest of the gap is
  the same ACK traffic at its real size (about 100 bytes on the wire, not
  the 64 the old model assumed).
- **ACP.** Update flows now open with a handshake whose RTT seeds the
  regulator, and each update datagram carries the real header. acp stays
  within 1.08× of the oracle and 0.77× of Lazy. The literal rule now
  collapses on every path (about 5 s of mean age, against Lazy's 53 ms
  before). The handshake's RTT is what tips it: with the seed switched off
  in the session it holds one update per RTT again (53.7 ms on
  acp-1mbps-40ms), as it did in the old model, which had no handshake.
- **Simulator speed, 3286× → about 1450× real time** (the figure varies
  from run to run). Every datagram is now
  encoded, decoded and acknowledged as on a socket, with the stream bytes
  copied through the send and receive buffers.
- **Table 3 (1–10 % loss on the data path).** owd averages 1.94× CUBIC, against 2.06×
  with the old model; beyond the headers this change was not decomposed.
  (One suspect, the old model skipping retransmissions of bytes the
  receiver already held, was ruled out: removing that from the old model
  changed no number.)
- The fairness rows move by 0.02 or less, within what one seed gives.
`
