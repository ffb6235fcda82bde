package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
)

// Goodput targets against quic-go (medians).
const (
	targetVsQUIC   = 1.0 // fresh ≥ 1.0× quic-go
	moonshotVsQUIC = 1.5 // fresh ≥ 1.5× quic-go
)

// writeTable prints the medians and ratios for a terminal.
func writeTable(w io.Writer, rep *Report) {
	fmt.Fprintf(w, "\nloopback bulk transfer: %d bytes × %d runs, medians over runs (%d CPUs, load %.2f → %.2f, max %.2f)\n\n",
		rep.Bytes, rep.Runs, rep.Machine.NumCPU, rep.Machine.Load1Start, rep.Machine.Load1End, rep.Machine.Load1Max)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "stack\truns\tgoodput Gbit/s\tmin…max\tCPU-s/GB\tlost/run\tothers, cores\tdetail")
	for _, s := range rep.Summary {
		if s.Runs == 0 {
			fmt.Fprintf(tw, "%s\t0/%d\t-\t-\t-\t-\t-\tall failed\n", s.Stack, s.Failed)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d/%d\t%.2f\t%.2f…%.2f\t%.2f\t%.0f\t%.2f\t%s\n", s.Stack, s.Runs, s.Runs+s.Failed,
			s.GoodputGbps, s.GoodputMinGbps, s.GoodputMaxGbps, s.CPUSecondsPerGB, s.LostPackets, s.OthersCores, s.Detail)
	}
	tw.Flush()
	if len(rep.Ratios) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ratio\tgoodput\tCPU-s/GB")
	for _, r := range rep.Ratios {
		fmt.Fprintf(tw, "%s / %s\t%.3f×%s\t%.2f×\n", r.Stack, r.Baseline, r.Goodput, verdict(r), r.CPU)
	}
	tw.Flush()
}

// grade names the quic-go target a goodput ratio meets.
func grade(goodput float64) string {
	switch {
	case goodput >= moonshotVsQUIC:
		return "moonshot met"
	case goodput >= targetVsQUIC:
		return "target met"
	}
	return "target missed"
}

// verdict is grade in parentheses for a ratio against quic-go, "" for other
// baselines (kernel TCP has no target but the fraction itself).
func verdict(r Ratio) string {
	if r.Baseline != stackQUIC {
		return ""
	}
	return " (" + grade(r.Goodput) + ")"
}

// writeMarkdown writes the medians and ratios as Markdown tables.
func writeMarkdown(w io.Writer, rep *Report) {
	fmt.Fprintf(w, "Medians over %d runs of %d bytes each (min … max of goodput beside; lost: packets\n", rep.Runs, rep.Bytes)
	fmt.Fprintln(w, "the sender declared lost, TCP: retransmitted segments; others: CPU the rest of the machine")
	fmt.Fprintln(w, "used meanwhile, in cores):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| stack | runs | goodput, Gbit/s | min … max | CPU-s/GB | lost pkts/run | others, cores | notes |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---|")
	for _, s := range rep.Summary {
		if s.Runs == 0 {
			fmt.Fprintf(w, "| %s | 0/%d | – | – | – | – | – | all failed |\n", s.Stack, s.Failed)
			continue
		}
		fmt.Fprintf(w, "| %s | %d/%d | %.2f | %.2f … %.2f | %.2f | %.0f | %.2f | %s |\n", s.Stack, s.Runs, s.Runs+s.Failed,
			s.GoodputGbps, s.GoodputMinGbps, s.GoodputMaxGbps, s.CPUSecondsPerGB, s.LostPackets, s.OthersCores, s.Detail)
	}
	if len(rep.Ratios) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| fresh stack | baseline | goodput ratio | target | CPU-s/GB ratio |")
	fmt.Fprintln(w, "|---|---|---:|---|---:|")
	for _, r := range rep.Ratios {
		target := "fraction of kernel TCP"
		if r.Baseline == stackQUIC {
			target = fmt.Sprintf("≥ %.1f× (moonshot %.1f×): **%s**", targetVsQUIC, moonshotVsQUIC, grade(r.Goodput))
		}
		fmt.Fprintf(w, "| %s | %s | %.3f× | %s | %.2f× |\n", r.Stack, r.Baseline, r.Goodput, target, r.CPU)
	}
}

// writeMarkdownFile writes writeMarkdown's tables to path.
func writeMarkdownFile(path string, rep *Report) error {
	var b strings.Builder
	writeMarkdown(&b, rep)
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// writeJSONFile writes the whole report, raw samples included, to path.
func writeJSONFile(path string, rep *Report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
