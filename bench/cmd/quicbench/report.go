package main

import (
	"fmt"
	"strings"
	"time"
)

func report(ccName string, dur, warm time.Duration, loopBytes, runs int, bn []bottleneckResult, lb []loopResult) string {
	var b strings.Builder
	stack := func(hooked bool) string {
		if hooked {
			return "quic-go + hook (" + ccName + ")"
		}
		return "quic-go default"
	}
	loopStack := func(r loopResult) string {
		if r.traced {
			return "quic-go default + qlog recorder (no hook)"
		}
		return stack(r.hooked)
	}
	fmt.Fprintf(&b, "### quic-go with fresh's congestion hook\n\n")
	fmt.Fprintf(&b, "Bottleneck: 10 Mbit/s each way, 40 ms RTT, FIFO of one BDP (50 000 bytes), bench/emu relay on loopback; one stream uploading for %v, the first %v left out. Queueing delay: the forward queue's backlog, sampled every 2 ms.\n\n", dur, warm)
	fmt.Fprintf(&b, "| loss | stack | goodput (Mbit/s) | queue p50 (ms) | queue p95 (ms) | quic-go cwnd < hook's | hook-bound / quic-bound time |\n")
	fmt.Fprintf(&b, "|---|---|---:|---:|---:|---:|---|\n")
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/1e6) }
	for _, r := range bn {
		binds, split := "–", "–"
		if r.hooked {
			binds = fmt.Sprintf("%.0f %%", r.quicBinds*100)
			split = fmt.Sprintf("%.1f s / %.1f s", r.hookBound.Seconds(), r.quicBound.Seconds())
		}
		fmt.Fprintf(&b, "| %.0f %% | %s | %.2f | %s | %s | %s | %s |\n", r.loss*100, stack(r.hooked), r.goodput/1e6, ms(r.p50), ms(r.p95), binds, split)
	}
	fmt.Fprintf(&b, "\n")
	for i := 0; i+1 < len(bn); i += 2 {
		d, h := bn[i], bn[i+1]
		fmt.Fprintf(&b, "- loss %.0f %%: hook/default goodput %.2f×, p95 queueing delay %.2f×\n", d.loss*100, h.goodput/d.goodput, ratio(h.p95, d.p95))
	}
	if len(lb) == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, "\nLoopback (no bottleneck), %d MiB per run, median of %d runs:\n\n", loopBytes>>20, runs)
	fmt.Fprintf(&b, "| stack | goodput (Mbit/s, median) | runs (Mbit/s) | ÷ plain of the same round, median | CPU s/GB (median) |\n|---|---:|---|---:|---:|\n")
	for _, r := range lb {
		var rs []string
		for _, g := range r.goodputs {
			rs = append(rs, fmt.Sprintf("%.0f", g/1e6))
		}
		fmt.Fprintf(&b, "| %s | %.0f | %s | %.2f | %.2f |\n", loopStack(r), r.median/1e6, strings.Join(rs, ", "), median(r.ratios), r.medianCPU)
	}
	if len(lb) == 3 && lb[0].median > 0 {
		fmt.Fprintf(&b, "\n- loopback: hook/plain goodput %.2f× (medians), %.2f× (median of run pairs); CPU per GB %.2f×\n",
			lb[2].median/lb[0].median, median(lb[2].ratios), lb[2].medianCPU/lb[0].medianCPU)
		fmt.Fprintf(&b, "- plain quic-go with a qlog recorder (the other design's information source, alone)/plain: goodput %.2f×, CPU per GB %.2f×\n",
			lb[1].median/lb[0].median, lb[1].medianCPU/lb[0].medianCPU)
	}
	return b.String()
}

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
