package judge

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// passCell is "93% (93/100) ✓": the pass rate, the draws, and whether the
// target was met; "n/a" when the criterion never applied (no reference
// controller in the run, or the controller is the reference).
func passCell(row CriterionRow, p PassRate) string {
	if p.N == 0 {
		return "n/a"
	}
	mark := "✗"
	if row.Met(p) {
		mark = "✓"
	}
	return fmt.Sprintf("%.0f%% (%d/%d) %s", 100*p.Rate(), p.Pass, p.N, mark)
}

func valueCell(p PassRate) string {
	if p.N == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3g / %.3g", p.Median, p.Worst)
}

func need(row CriterionRow) string {
	if row.Need == 1 {
		return "every draw"
	}
	return fmt.Sprintf("≥ %.0f%% of draws", 100*row.Need)
}

func mbps(bps float64) string { return fmt.Sprintf("%.3f", bps/1e6) }

// WriteText prints every family's pass rates and leaderboard as aligned
// tables; with cost, also what each family took.
func WriteText(w io.Writer, r *Report, cost bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, f := range r.Families {
		fmt.Fprintf(tw, "family %s: %d draws × %d controllers\n", f.Family, f.Draws, len(r.CCs))
		fmt.Fprintf(tw, "CRITERION\tTARGET\t%s\n", strings.Join(r.CCs, "\t"))
		for _, row := range f.Criteria {
			cells := make([]string, len(row.PerCC))
			vals := make([]string, len(row.PerCC))
			for i, p := range row.PerCC {
				cells[i], vals[i] = passCell(row, p), valueCell(p)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", row.Title, need(row), strings.Join(cells, "\t"))
			fmt.Fprintf(tw, "  median / worst\t\t%s\n", strings.Join(vals, "\t"))
		}
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "GROUP\tCC\tDRAWS\tGOODPUT med [Mbit/s]\tOWD p95 med [ms]\tPOWER med [Mbit/s/s]")
		for _, l := range f.Leaderboard {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%.1f\t%.1f\n", l.Group, l.CC, l.N, mbps(l.GoodputBps), l.OWDP95Ms, l.Power)
		}
		if cost && f.Cost.Runs > 0 && f.Draws > 0 {
			fmt.Fprintf(tw, "cost: %d runs, %.2f s CPU per draw (%.3f s per run), %.1f s wall\n",
				f.Cost.Runs, f.Cost.CPU.Seconds()/float64(f.Draws), f.Cost.CPU.Seconds()/float64(f.Cost.Runs), f.Cost.Wall.Seconds())
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// WriteMarkdown prints the same tables in Markdown, for RESULTS.md; seeds
// names the seeds judged ("1001-1100").
func WriteMarkdown(w io.Writer, r *Report, seeds string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Seeds %s, scale %g; per criterion: pass rate (draws passed/judged, ✓ target met), then median / worst value.\n\n", seeds, r.Scale)
	for _, f := range r.Families {
		fmt.Fprintf(&b, "#### %s (%d draws)\n\n", f.Family, f.Draws)
		fmt.Fprintf(&b, "| criterion | target | %s |\n|---|---|%s\n", strings.Join(r.CCs, " | "), strings.Repeat("---|", len(r.CCs)))
		for _, row := range f.Criteria {
			cells := make([]string, len(row.PerCC))
			for i, p := range row.PerCC {
				cells[i] = passCell(row, p)
				if p.N > 0 {
					cells[i] += "<br>" + valueCell(p)
				}
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", row.Title, need(row), strings.Join(cells, " | "))
		}
		fmt.Fprintf(&b, "\n| group | cc | draws | goodput med [Mbit/s] | OWD p95 med [ms] | power med [Mbit/s/s] |\n|---|---|---|---|---|---|\n")
		for _, l := range f.Leaderboard {
			fmt.Fprintf(&b, "| %s | %s | %d | %s | %.1f | %.1f |\n", l.Group, l.CC, l.N, mbps(l.GoodputBps), l.OWDP95Ms, l.Power)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
