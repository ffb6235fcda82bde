package resultsmd

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fresh-udp/fresh/bench/plots"
	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/runner"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/bench/sim"
	"github.com/fresh-udp/fresh/bench/summary"
	"github.com/fresh-udp/fresh/bench/sweep"
	"github.com/fresh-udp/fresh/bench/table"
)

// The ACP section of "freshbench results": every acp-* scenario swept over
// acpSeeds (acp, lazy and the fixed-rate grid on every seed, both oracles
// per seed), acp-literal on the same seeds, and the periodic-source
// scenarios (periodic-*).

// acpSeeds are the seeds of the ACP section: ten, so that a regulator whose
// outcome depends on the draw shows it.
var acpSeeds = []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}

// acpOriginal are the five paths the ACP targets were first set on; the
// "before and after" rows (acp against the unconstrained oracle and lazy)
// are over these.
var acpOriginal = []string{"acp-10mbps-100ms", "acp-1mbps-40ms", "acp-cross", "acp-lossy", "acp-short"}

// acpRow is one scenario's sweep and its acp-literal runs.
type acpRow struct {
	sum     *sweep.Summary
	literal sweep.AgeDist
}

// acp writes the section "ACP: age of information against the oracle".
func (c *Report) acp() error {
	rows, err := c.acpSweeps()
	if err != nil {
		return err
	}
	c.acpIntro()
	c.acpTables(rows)
	c.acpTargets(rows)
	if err := c.periodic(); err != nil {
		return err
	}
	c.printf("%s\n\n", acpProse)
	c.printf("![sweep, acp-cross](%s)\n\n", c.rel("acp-cross-sweep.png"))
	c.printf("![sweep, 1 Mbit/s/40 ms](%s)\n\n", c.rel("acp-1mbps-40ms-sweep.png"))
	return nil
}

// acpSweeps sweeps every acp-* scenario on acpSeeds, runs it under
// acp-literal, and draws the sweep.
func (c *Report) acpSweeps() ([]acpRow, error) {
	files, err := filepath.Glob(filepath.Join(c.dir, "acp-*.json"))
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	sweeper := runner.New("sim", runner.Config{Seeds: acpSeeds}, sim.Run, io.Discard, io.Discard)
	var rows []acpRow
	for _, file := range files {
		s, err := c.load(strings.TrimSuffix(filepath.Base(file), ".json"))
		if err != nil {
			return nil, err
		}
		sum, _, err := sweeper.Sweep(s)
		if err != nil {
			return nil, err
		}
		lit, err := c.literalAges(s)
		if err != nil {
			return nil, err
		}
		rows = append(rows, acpRow{sum: sum, literal: lit})
		if c.plots != "" {
			if err := plots.WriteSweep(c.plots, sum); err != nil {
				return nil, err
			}
		}
	}
	return rows, nil
}

func (c *Report) acpIntro() {
	c.printf("## ACP: age of information against the oracle\n\n")
	c.printf("Update flows of 1024-byte updates, DSCP CS7, on the `acp-*` paths: 1 Mbit/s/40 ms,\n")
	c.printf("10 Mbit/s/100 ms, 2 Mbit/s/60 ms with 5 %% loss, a short 10 Mbit/s/2 ms path, a\n")
	c.printf("10 → 1 → 10 Mbit/s capacity change (40 ms, 100-packet FIFO), and shared paths:\n")
	c.printf("2 Mbit/s/40 ms with a CUBIC flow and CBR (`acp-cross`), 5 Mbit/s/50 ms with two\n")
	c.printf("CUBIC flows (`acp-cross2`), 2 Mbit/s/40 ms with a CUBIC flow through CoDel\n")
	c.printf("(`acp-codel`). Every scenario runs on seeds 1–10, and every number below is\n")
	c.printf("per seed (paired: acp, lazy and both oracles on the same seed), then over the\n")
	c.printf("seeds: mean, worst seed and max/min (`freshbench sim --seeds 1-10 --acp-sweep`).\n\n")
	c.printf("Two oracles, both fixed update rates swept on every seed: the **oracle**, the\n")
	c.printf("rate with the lowest mean age; and the **constrained** oracle, the rate with the\n")
	c.printf("lowest mean age among those that cost the elastic (bulk) flows at most %.0f %% of\n", 100*sweep.CostBound)
	c.printf("the goodput they get beside lazy on the same seed (without bulk flows the two\n")
	c.printf("are one). The grid is geometric from 0.5 Hz to the path's capacity and refined\n")
	c.printf("around both oracles until neighbouring rates' mean ages differ by no more than\n")
	c.printf("the noise, the seed-to-seed SD of a fixed rate's mean age; the rates within\n")
	c.printf("that noise of the best form the oracle's range. Cost is the elastic flows'\n")
	c.printf("goodput lost against lazy's run of the same seed.\n\n")
}

// acpTables writes the oracles' ranges, and every policy's and oracle's
// mean age and cost, a row per path.
func (c *Report) acpTables(rows []acpRow) {
	c.printf("| path | seeds | noise (ms) | oracle range (Hz) | constrained range (Hz) |\n|---|---:|---:|---:|---:|\n")
	for _, r := range rows {
		s := r.sum
		constrained := table.Range(s.ConstrainedRange)
		if !s.Elastic {
			constrained = "(no bulk flow)"
		}
		c.printf("| %s | %d | %.1f | %s | %s |\n", s.Scenario, len(s.Seeds), s.NoiseMs, table.Range(s.OracleRange), constrained)
	}
	c.printf("\nMean age over the seeds, ms (worst seed, max/min); cost to the elastic flows, mean (worst):\n\n")
	c.printf("| path | acp | lazy | oracle | constrained | acp-literal | acp cost | constrained cost | acp / constrained (worst seed) | acp / oracle (worst) | acp / lazy (worst) |\n")
	c.printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	dist := func(d sweep.AgeDist) string {
		return fmt.Sprintf("%.1f (%.1f, %.2f)", d.MeanMs, d.WorstMs, d.MaxOverMin)
	}
	costs := func(s *sweep.Summary, d sweep.AgeDist) string {
		if !s.Elastic {
			return "–"
		}
		return fmt.Sprintf("%.1f %% (%.1f %%)", 100*d.MeanCost, 100*d.WorstCost)
	}
	for _, r := range rows {
		s := r.sum
		c.printf("| %s | %s | %s | %s | %s | %.1f | %s | %s | %.2f | %.2f | %.2f |\n", s.Scenario,
			dist(s.ACP), dist(s.Lazy), dist(s.Oracle), dist(s.Constrained), r.literal.MeanMs,
			costs(s, s.ACP), costs(s, s.Constrained), s.WorstOverConstrained, s.WorstOverOracle, s.WorstOverLazy)
	}
}

// acpTargets judges acp on every path against the constrained oracle,
// and on the original paths against the oracle and lazy.
func (c *Report) acpTargets(rows []acpRow) {
	c.printf("\nTargets on every path, 10 seeds: worst seed ≤ 1.10× the constrained oracle (same\n")
	c.printf("seed), max/min of acp's mean age ≤ 1.15, acp's cost to the elastic flows ≤ %.0f %%:\n\n", 100*sweep.CostBound)
	c.printf("| path | worst acp / constrained | max/min | worst cost |\n|---|---:|---:|---:|\n")
	var missed []string
	for _, r := range rows {
		s := r.sum
		okRatio, okSpread := s.WorstOverConstrained <= 1.10, s.ACP.MaxOverMin <= 1.15
		okCost := !s.Elastic || s.ACP.WorstCost <= sweep.CostBound
		cost := "–"
		if s.Elastic {
			cost = fmt.Sprintf("%.1f %% %s", 100*s.ACP.WorstCost, verdict(okCost))
		}
		c.printf("| %s | %.2f %s | %.2f %s | %s |\n", s.Scenario, s.WorstOverConstrained, verdict(okRatio),
			s.ACP.MaxOverMin, verdict(okSpread), cost)
		if !okRatio || !okSpread || !okCost {
			missed = append(missed, s.Scenario)
		}
	}
	ok := len(missed) == 0
	c.printf("\nAll three on every path: %s", c.target("ACP: every path within the constrained oracle's budget",
		fmt.Sprintf("%d of %d paths", len(rows)-len(missed), len(rows)), ok))
	if !ok {
		c.printf(" (missed on %s)", strings.Join(missed, ", "))
	}
	c.printf(".\n\n")

	worstO, worstL := 0.0, 0.0
	for _, r := range rows {
		if slices.Contains(acpOriginal, r.sum.Scenario) {
			worstO, worstL = max(worstO, r.sum.WorstOverOracle), max(worstL, r.sum.WorstOverLazy)
		}
	}
	c.printf("On the five paths the ACP targets were first set on (%s), worst seed against the\n", strings.Join(acpOriginal, ", "))
	c.printf("unconstrained oracle %.2f× (≤ 1.10×: %s) and against Lazy %.2f× (≤ 0.8×: %s).\n\n", worstO,
		c.target("ACP: worst acp / oracle age (≤ 1.10×)", fmt.Sprintf("%.2f×", worstO), worstO <= 1.10), worstL,
		c.target("ACP: worst acp / Lazy age (≤ 0.8×)", fmt.Sprintf("%.2f×", worstL), worstL <= 0.8))
}

// literalAges runs s's update flows under acp-literal on acpSeeds.
func (c *Report) literalAges(s *scenario.Scenario) (sweep.AgeDist, error) {
	lit, err := sweep.WithUpdates(s, sweep.AsPolicy("acp-literal"))
	if err != nil {
		return sweep.AgeDist{}, err
	}
	var ages []float64
	for _, seed := range acpSeeds {
		v := *lit
		v.Seed = seed
		r, err := sim.Run(&v, sim.Options{})
		if err != nil {
			return sweep.AgeDist{}, fmt.Errorf("%s under acp-literal, seed %d: %w", s.Name, seed, err)
		}
		if a, _ := sweep.UpdateAge(r); sweep.Measured(a) {
			ages = append(ages, a)
		}
	}
	m := summary.Of(ages)
	return sweep.AgeDist{MeanMs: report.Round3(m.Mean), WorstMs: m.Max, BestMs: m.Min}, nil
}

// periodic writes the periodic-source rows: every periodic-* scenario under
// acp and lazy on acpSeeds, the share of the source's readings delivered, the
// mean age and the p95 queueing delay of the updates.
func (c *Report) periodic() error {
	files, err := filepath.Glob(filepath.Join(c.dir, "periodic-*.json"))
	if err != nil {
		return err
	}
	slices.Sort(files)
	c.printf("### Periodic sources\n\n")
	c.printf("A sensor read every 1/`update_rate` hands each reading to SendUpdate; the\n")
	c.printf("regulator decides when the freshest leaves, and a newer reading replaces one\n")
	c.printf("not sent yet. Readings delivered (of those taken), mean age and p95 queueing of\n")
	c.printf("the updates, mean over seeds 1–10 (worst seed's share):\n\n")
	c.printf("| scenario | policy | delivered | age (ms) | queue p95 (ms) | rate (Hz) |\n|---|---|---:|---:|---:|---:|\n")
	for _, file := range files {
		s, err := c.load(strings.TrimSuffix(filepath.Base(file), ".json"))
		if err != nil {
			return err
		}
		for _, pol := range []string{"acp", "lazy"} {
			v, err := sweep.WithUpdates(s, sweep.AsPolicy(pol))
			if err != nil {
				return err
			}
			var share, age, q95, rate []float64
			for _, seed := range acpSeeds {
				w := *v
				w.Seed = seed
				r, err := sim.Run(&w, sim.Options{})
				if err != nil {
					return fmt.Errorf("%s under %s, seed %d: %w", s.Name, pol, seed, err)
				}
				for i, f := range r.Flows {
					spec := w.Flows[i]
					if !spec.PeriodicSource() {
						continue
					}
					share = append(share, float64(f.Delivered)/(spec.UpdateRate*(f.EndS-f.StartS)))
					if f.AgeMs != nil {
						age = append(age, f.AgeMs.Mean)
					}
					q95 = append(q95, f.QueueMs.P95)
					if f.RateHz != nil {
						rate = append(rate, *f.RateHz)
					}
				}
			}
			sh := summary.Of(share)
			c.printf("| %s | %s | %.1f %% (%.1f %%) | %.1f | %.1f | %.1f |\n", s.Name, pol, 100*sh.Mean, 100*sh.Min,
				summary.Of(age).Mean, summary.Of(q95).Max, summary.Of(rate).Mean)
		}
	}
	c.printf("\n")
	return nil
}

// acpProse explains the section's numbers: what the regulator does, and
// where it falls short.
const acpProse = `fresh's ` + "`acp`" + ` keeps ACP's epochs (about one SRTT, at least 200 ms,
or 20 updates at high rates) and its measurement of the monitor's age, and
decides with ACP's four rows on a different cause: the send rate of the
updates an epoch's ACKs acknowledge, not the backlog (beside a neighbour's
queue the backlog follows the neighbour's sawtooth, and both of its phases
read as DEC), judged net of the change in the updates' queueing delay and
outside the epoch-to-epoch noise. Steps are multiplicative and adapt as in
Rprop (grow on agreement, halve on reversal), so noise yields small steps
and no mode. Four bounds act on the rate it sets: B = 10 updates in flight
(λ ≤ B/SRTT, 6 for 10 s after the path showed a neighbour's queue) and one of
their ACKs in the return path's queue; K = 4 updates waiting at
the bottleneck (λ ≤ K/Q̄, the point where a rate increase beside a standing
queue buys less than 1/9 of its size in age); just under the delivery rate
the path showed when the updates' own queue formed, with a drain at that
rate (ACP's 1/Z + b*/T); and (1 + 1)× the rate of a source that cannot
generate at will. ` + "`acp-literal`" + ` is ACP's decision table alone: it
collapses to λ_min on every path, as before. The package documentation
(` + "`go doc ./acp`" + `) names every rule.

Where it falls short: through CoDel beside CUBIC the queue stays short, so
neither the queue bound nor the age (which falls up to about 56 Hz) says
that the updates take the CUBIC flow's bandwidth; only the backlog bound
limits them, at six updates per RTT, and that costs the CUBIC flow more
than the 10 % budget. The backlog bound costs the idle 10 Mbit/s, 100 ms
path its last few milliseconds of age (the oracle fills the path; B/SRTT
is 100 Hz), and keeps the capacity drop's FIFO from filling at the old rate
before any ACK can tell.`
