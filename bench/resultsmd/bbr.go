package resultsmd

import (
	"context"
	"fmt"
	"math"

	"github.com/fresh-udp/fresh/bench/summary"
)

// The BBR section of tun.md: fresh's BBR (cc.BBR, which follows Linux's
// tcp_bbr.c) against the kernel's own BBR on the same emulated paths — the
// clean 10 Mbit/s path and a cellular trace — each side run bbrKernelRuns
// times because real-time runs differ from one another (the seed fixes the
// links, not the scheduling).

// bbrKernelRuns is how many runs each side gets per path (5: enough for a
// mean ± SD that separates a real difference from scheduling noise on a
// shared machine).
const bbrKernelRuns = 5

// bbrSide is one row of a comparison: a scenario and the flow measured.
type bbrSide struct {
	label, scenario, cc, flow string
}

// bbrPath is one comparison: fresh's side first, then the kernel's.
type bbrPath struct {
	title string // what the path is, for the table's caption
	sides [2]bbrSide
}

var bbrPaths = []bbrPath{
	{"10 Mbit/s both ways, 40 ms, a one-BDP FIFO (33 packets), 30 s, the path of the first table", [2]bbrSide{
		{"`bbr` (fresh)", "tun-10mbps-40ms-bbr", "bbr", "bulk"},
		{"kernel bbr", "tun-10mbps-40ms-kernel-bbr", "", "kernel-bbr"},
	}},
	{"the T-Mobile LTE downlink trace (`TMobile-LTE-short.down`, its uplink for the ACKs), 20 ms each way, 200-packet FIFOs, 60 s, the same trace window for both, drawn from the seed", [2]bbrSide{
		{"`bbr` (fresh)", "tun-trace-tmobile-lte-short-down-fifo-bbr", "bbr", "bulk"},
		{"kernel bbr", "tun-trace-tmobile-lte-short-down-fifo-kernel-bbr", "", "kernel-bbr"},
	}},
}

// bbrSideStats is what the table reports of one side, over its runs.
type bbrSideStats struct {
	goodput, util, q50, q95, retx summary.MeanSD
}

func (t *tunReport) bbrVersusKernel(ctx context.Context) error {
	t.printf("### fresh's BBR beside the kernel's\n\n")
	t.printf("`bbr` is BBR v1 as Linux's tcp_bbr.c has it (see cc/bbr.go). Each table\n")
	t.printf("runs it alone on a path, and the kernel's BBR alone (iperf3) on the same\n")
	t.printf("path, %d runs each, mean ± SD. Targets: goodput within ±10 %% and p95\n", bbrKernelRuns)
	t.printf("queueing within ±30 %% of the kernel's.\n\n")
	var verdicts []string
	for _, p := range bbrPaths {
		st, err := t.bbrTable(ctx, p)
		if err != nil {
			return err
		}
		gpDiff := relDiff(st[0].goodput.Mean, st[1].goodput.Mean)
		qDiff := relDiff(st[0].q95.Mean, st[1].q95.Mean)
		verdicts = append(verdicts,
			fmt.Sprintf("| `%s`: goodput within ±10 %% of kernel BBR's | %+.1f %% | %s |\n", p.sides[0].scenario, 100*gpDiff, verdict(math.Abs(gpDiff) <= 0.10)),
			fmt.Sprintf("| `%s`: p95 queueing within ±30 %% of kernel BBR's | %+.1f %% | %s |\n", p.sides[0].scenario, 100*qDiff, verdict(math.Abs(qDiff) <= 0.30)))
	}
	t.printf("| target | measured | |\n|---|---|---|\n")
	for _, v := range verdicts {
		t.printf("%s", v)
	}
	t.printf("\nPart of the goodput gap is the headers (82 bytes per 1400-byte segment\n")
	t.printf("against 52 per 1448: 2.1 %% at the same utilisation). On the clean path\n")
	t.printf("both keep a standing queue here, where the simulator's exact timing gives\n")
	t.printf("a much shorter one: the 10-round max filter takes the high tail of rate\n")
	t.printf("samples that the router's timer lateness makes noisy, so btlBw sits above\n")
	t.printf("the link's rate (`ss -ti` shows it for the kernel's flow), pacing at\n")
	t.printf("0.99·btlBw outruns the link, and inflight grows towards the 2·BDP cwnd cap\n")
	t.printf("until ProbeRTT drains the queue every 10 s. On the trace both fill much of\n")
	t.printf("the buffer and lose packets by the thousand, likely because BBR v1's max\n")
	t.printf("filter keeps the rate of the trace's best moments for 10 round trips and\n")
	t.printf("loss does not lower it.\n\n")
	return nil
}

// bbrTable runs both sides of p and writes their table.
func (t *tunReport) bbrTable(ctx context.Context, p bbrPath) ([2]bbrSideStats, error) {
	var st [2]bbrSideStats
	t.printf("On %s (`%s`, `%s`):\n\n", p.title, p.sides[0].scenario, p.sides[1].scenario)
	t.printf("| flow | goodput | utilisation | queue p50 | queue p95 | retransmitted |\n|---|---:|---:|---:|---:|---:|\n")
	for i, s := range p.sides {
		var gp, util, q50, q95, retx []float64
		for range bbrKernelRuns {
			r, err := t.run(ctx, s.scenario, s.cc)
			if err != nil {
				return st, err
			}
			f := flow(r, s.flow)
			gp = append(gp, f.GoodputBps/1e6)
			util = append(util, r.Utilization.Forward)
			q50 = append(q50, f.QueueMs.P50)
			q95 = append(q95, f.QueueMs.P95)
			retx = append(retx, float64(f.Retransmitted))
		}
		st[i] = bbrSideStats{summary.Of(gp), summary.Of(util), summary.Of(q50), summary.Of(q95), summary.Of(retx)}
		t.printf("| %s | %.2f ± %.2f Mbit/s | %.3f ± %.3f | %.1f ± %.1f ms | %.1f ± %.1f ms | %.0f ± %.0f |\n", s.label,
			st[i].goodput.Mean, st[i].goodput.SD, st[i].util.Mean, st[i].util.SD,
			st[i].q50.Mean, st[i].q50.SD, st[i].q95.Mean, st[i].q95.SD, st[i].retx.Mean, st[i].retx.SD)
	}
	t.printf("\n")
	return st, nil
}

// relDiff is ours/theirs − 1 (0 when both are 0, +Inf when only theirs is:
// nothing to compare with, which no target accepts).
func relDiff(ours, theirs float64) float64 {
	if theirs == 0 {
		if ours == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return ours/theirs - 1
}
