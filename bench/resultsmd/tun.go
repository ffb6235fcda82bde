package resultsmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/fresh-udp/fresh/bench/emudriver"
	"github.com/fresh-udp/fresh/bench/internal/usage"
	"github.com/fresh-udp/fresh/bench/plots"
	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/summary"
)

// "freshbench results --tun" also runs the experiments that need kernel
// TCP through the TUN router (root, and tens of minutes of real time) and
// writes bench/results/tun.md and its plots, which the report then
// appends: fresh beside iperf3's kernel TCP, AQM for mission-critical
// telemetry, ACP updates marked CS7 under FIFO, WMM-like priority and
// CAKE, and Nagle's sender-side buffering. Every table comes from the runs
// of that invocation; nothing is typed in by hand.

// tunRunFunc runs one scenario (by name) under cc through the TUN router.
type tunRunFunc func(ctx context.Context, name, cc string) (*report.Run, error)

// tunReport is one regeneration of bench/results/tun.md.
type tunReport struct {
	run   tunRunFunc
	plots string // where the CDF plots go ("" for none)
	md    bytes.Buffer
}

func (t *tunReport) printf(format string, args ...any) { fmt.Fprintf(&t.md, format, args...) }

// runTUN is the real tunRunFunc: the scenario from dir, through
// emudriver with the TUN router, traced (for the CDF plots).
func (c *Report) runTUN(ctx context.Context, name, cc string) (*report.Run, error) {
	s, err := c.load(name)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(c.stderr, "freshbench results: %s %s (%v of real time)\n", name, cc, s.Duration.D())
	r, err := emudriver.Run(ctx, s, emudriver.Options{CC: cc, TUN: true, Trace: true})
	if err != nil {
		return nil, fmt.Errorf("%s under %q: %w", name, cc, err)
	}
	return r, nil
}

// writeTUN regenerates tun.md in the plots directory.
func (c *Report) writeTUN(ctx context.Context) error {
	if c.plots == "" {
		return usage.Errorf("--tun writes tun.md into the --plots directory: give one")
	}
	t := &tunReport{run: c.runTUN, plots: c.plots}
	if err := t.generate(ctx); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(c.plots, "tun.md"), t.md.Bytes(), 0o644)
}

func (t *tunReport) generate(ctx context.Context) error {
	t.printf("## Kernel TCP beside fresh through the TUN router\n\n")
	t.printf("Regenerate with `sudo go run ./bench/cmd/freshbench results --tun` (root:\n")
	t.printf("network namespaces and TUN devices; about 40 minutes of real time). Every\n")
	t.printf("flow runs between two network namespaces through the TUN router\n")
	t.printf("(`freshbench emu --tun`); one run each, so numbers move by a few percent\n")
	t.printf("from one regeneration to the next (the seed fixes the links, not the\n")
	t.printf("scheduling). Delays are measured at the router the same way for every\n")
	t.printf("flow, kernel TCP included: `queue` is the bottleneck queue's delay per data\n")
	t.printf("packet, `owd` the time through the emulated link. Our flows carry 82 bytes\n")
	t.printf("of headers per 1400-byte segment, kernel TCP 52 per 1448, so at the same\n")
	t.printf("utilisation kernel TCP's goodput is about 2 %% higher.\n\n")
	for _, sec := range []func(context.Context) error{t.versusKernel, t.bbrVersusKernel, t.aqm, t.acpPriority, t.nagle} {
		if err := sec(ctx); err != nil {
			return err
		}
	}
	return nil
}

// bulkRow is one line of the kernel-TCP tables.
func (t *tunReport) bulkRow(label string, r *report.Run, f report.Flow) {
	t.printf("| %s | %.2f Mbit/s | %.3f | %.1f ms | %.1f ms | %.1f ms | %d |\n", label, f.GoodputBps/1e6,
		r.Utilization.Forward, f.QueueMs.P50, f.QueueMs.P95, f.OWDms.P95, f.Retransmitted)
}

const bulkHeader = "| flow | goodput | utilisation | queue p50 | queue p95 | owd p95 | retransmitted |\n|---|---:|---:|---:|---:|---:|---:|\n"

// versusKernel writes the tables of fresh and kernel TCP, each alone and
// together, on a clean path, a lossy one and the paper's dumbbell, and
// judges the targets.
func (t *tunReport) versusKernel(ctx context.Context) error {
	t.printf("### fresh and kernel TCP, each alone and together\n\n")
	t.printf("10 Mbit/s both ways, 40 ms RTT, a FIFO of one bandwidth-delay product\n")
	t.printf("(33 packets, about 39 ms), 30 s per run (`tun-10mbps-40ms*`):\n\n")
	t.printf(bulkHeader)
	ours, kernel := map[string]report.Flow{}, map[string]report.Flow{}
	var owdUtil float64
	for _, cc := range []string{"owd", "cubic"} {
		r, f, err := t.bulkRun(ctx, "tun-10mbps-40ms", cc, "bulk", fmt.Sprintf("`%s` (fresh)", cc))
		if err != nil {
			return err
		}
		ours[cc] = f
		if cc == "owd" {
			owdUtil = r.Utilization.Forward
		}
	}
	for _, cc := range []string{"cubic", "reno", "bbr"} {
		_, f, err := t.bulkRun(ctx, "tun-10mbps-40ms-kernel-"+cc, "", "kernel-"+cc, "kernel "+cc)
		if err != nil {
			return err
		}
		kernel[cc] = f
	}
	share, err := t.together(ctx)
	if err != nil {
		return err
	}
	lossRatio, err := t.lossy(ctx)
	if err != nil {
		return err
	}
	paper, err := t.dumbbell(ctx)
	if err != nil {
		return err
	}
	cubicDiff := ours["cubic"].GoodputBps/kernel["cubic"].GoodputBps - 1
	t.printf("\nTargets:\n\n| target | measured | |\n|---|---|---|\n")
	t.printf("| `owd` keeps ≥ 0.90 of the link with p95 queueing ≤ 25 ms where kernel CUBIC fills the buffer | utilisation %.3f, queue p95 %.1f ms (kernel CUBIC %.1f ms); dumbbell %.1f ms (kernel CUBIC %.1f ms) | %s |\n",
		owdUtil, ours["owd"].QueueMs.P95, kernel["cubic"].QueueMs.P95, paper["owd"].QueueMs.P95, paper["kernel"].QueueMs.P95,
		verdict(owdUtil >= 0.90 && ours["owd"].QueueMs.P95 <= 25 && paper["owd"].QueueMs.P95 <= 25))
	t.printf("| with 1 %% loss, `owd` ≥ 2× kernel CUBIC's goodput | %.2f× | %s |\n", lossRatio, verdict(lossRatio >= 2))
	t.printf("| our `cubic` within ±10 %% of kernel CUBIC's goodput (clean path) | %+.1f %% | %s |\n", 100*cubicDiff, verdict(cubicDiff >= -0.10 && cubicDiff <= 0.10))
	t.printf("| `owd` beside one kernel CUBIC flow gets ≥ 30 %% of the link | %.1f %% | %s |\n\n", 100*share, verdict(share >= 0.30))
	t.printf("No controller was tuned for these runs. The last target is where a\n")
	t.printf("delay-based flow yields to a buffer-filling one, in its competitive\n")
	t.printf("mode; whether and when it switches differs from run to run, so this one\n")
	t.printf("run's share is a draw (ten runs: \"Controllers on paths nobody tuned\n")
	t.printf("for\" in RESULTS.md).\n\n")
	return nil
}

// bulkRun runs scenario name under cc and writes the table row, labelled
// label, of its flow called flowName.
func (t *tunReport) bulkRun(ctx context.Context, name, cc, flowName, label string) (*report.Run, report.Flow, error) {
	r, err := t.run(ctx, name, cc)
	if err != nil {
		return nil, report.Flow{}, err
	}
	f := flow(r, flowName)
	t.bulkRow(label, r, f)
	return r, f, nil
}

// together writes owd beside kernel CUBIC, and returns owd's share.
func (t *tunReport) together(ctx context.Context) (float64, error) {
	both, err := t.run(ctx, "tun-10mbps-40ms-vs-cubic", "")
	if err != nil {
		return 0, err
	}
	o, k := flow(both, "owd"), flow(both, "kernel-cubic")
	share := summary.GoodputShare(both, summary.ByName("owd"), summary.AnyFlow)
	t.printf("\nTogether (`tun-10mbps-40ms-vs-cubic`, both from 0 to 30 s): `owd` %.2f Mbit/s,\n", o.GoodputBps/1e6)
	t.printf("kernel CUBIC %.2f Mbit/s; `owd` has %.1f %% of the goodput, and both see\n", k.GoodputBps/1e6, 100*share)
	t.printf("the queue CUBIC keeps full (p95 %.1f ms).\n\n", k.QueueMs.P95)
	return share, nil
}

// lossy writes owd and kernel CUBIC on the lossy path, and returns owd's
// goodput over CUBIC's.
func (t *tunReport) lossy(ctx context.Context) (float64, error) {
	t.printf("With 1 %% random loss on the data path (`tun-10mbps-40ms-loss1*`):\n\n%s", bulkHeader)
	_, lo, err := t.bulkRun(ctx, "tun-10mbps-40ms-loss1", "owd", "bulk", "`owd` (fresh)")
	if err != nil {
		return 0, err
	}
	_, lk, err := t.bulkRun(ctx, "tun-10mbps-40ms-loss1-kernel-cubic", "", "kernel-cubic", "kernel cubic")
	if err != nil {
		return 0, err
	}
	return lo.GoodputBps / lk.GoodputBps, nil
}

// dumbbell writes owd, our CUBIC and the kernel's on the OWD paper's
// dumbbell, and returns their bulk flows by controller ("kernel" for the
// kernel's).
func (t *tunReport) dumbbell(ctx context.Context) (map[string]report.Flow, error) {
	t.printf("\nThe OWD paper's dumbbell: 1.5 Mbit/s, 90 ms RTT, 50-packet FIFO, 200 kbit/s\n")
	t.printf("of CBR forward and 1 Mbit/s back, 100 s (`tun-paper-rtt-90ms*`):\n\n%s", bulkHeader)
	paper := map[string]report.Flow{}
	for _, cc := range []string{"owd", "cubic"} {
		_, f, err := t.bulkRun(ctx, "tun-paper-rtt-90ms", cc, "bulk", fmt.Sprintf("`%s` (fresh)", cc))
		if err != nil {
			return nil, err
		}
		paper[cc] = f
	}
	_, f, err := t.bulkRun(ctx, "tun-paper-rtt-90ms-iperf3", "", "bulk", "kernel cubic")
	if err != nil {
		return nil, err
	}
	paper["kernel"] = f
	return paper, nil
}

// aqmDisciplines are the AQM paper's four queues, in its order.
var aqmDisciplines = []string{"fifo", "codel", "fq_codel", "cake"}

func (t *tunReport) aqm(ctx context.Context) error {
	t.printf("### AQM for mission-critical telemetry\n\n")
	t.printf("The AQM/IIoT paper's setting: 10 Mbit/s both ways, 10 ms RTT; low-rate\n")
	t.printf("periodic telemetry over kernel TCP (an AIV at 9.6 kbit/s, a gantry at\n")
	t.printf("2 kbit/s, a smart meter at 25 kbit/s, as its Table 2) and a 1 Mbit/s\n")
	t.printf("camera-like UDP stream, alone and with two elastic iperf3 CUBIC flows from\n")
	t.printf("2 s; queues as its Table 1 (FIFO 500 packets; CoDel, FQ-CoDel and CAKE\n")
	t.printf("1000, CAKE with the LAN preset), 30 s per run (`tun-aqm-*`). Per\n")
	t.printf("telemetry flow: throughput and the round trip. The AIV and the meter are\n")
	t.printf("request/response (the receiver answers each message; RTT from the write\n")
	t.printf("to the answer's read, as the paper measures it), the gantry one-way\n")
	t.printf("(latency from write to read); jitter is the AIV's RTT p95 − p50:\n\n")
	t.printf("| queue | TCP load | AIV kbit/s | AIV RTT p50 / p95 | meter kbit/s | meter RTT p50 / p95 | gantry one-way p95 | AIV jitter | camera queue p95 | TCP goodput |\n")
	t.printf("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, q := range aqmDisciplines {
		for _, bg := range []bool{false, true} {
			name, load := "tun-aqm-"+q, "none"
			if bg {
				name, load = name+"-bg", "2× CUBIC"
			}
			r, err := t.run(ctx, name, "")
			if err != nil {
				return err
			}
			aiv, meter, gantry, cam := flow(r, "aiv"), flow(r, "meter"), flow(r, "gantry"), flow(r, "camera")
			var tcp float64
			for _, f := range r.Flows {
				if f.Kind == "iperf3" {
					tcp += f.GoodputBps
				}
			}
			orZero := func(s *report.Stats) report.Stats {
				if s == nil {
					return report.Stats{}
				}
				return *s
			}
			a, m, g := orZero(aiv.RTTMs), orZero(meter.RTTMs), orZero(gantry.EndToEndMs)
			tcpCol := "-"
			if bg {
				tcpCol = fmt.Sprintf("%.2f Mbit/s", tcp/1e6)
			}
			t.printf("| %s | %s | %.1f | %.1f / %.1f ms | %.1f | %.1f / %.1f ms | %.1f ms | %.1f ms | %.1f ms | %s |\n",
				q, load, aiv.GoodputBps/1e3, a.P50, a.P95, meter.GoodputBps/1e3, m.P50, m.P95, g.P95, a.P95-a.P50, cam.QueueMs.P95, tcpCol)
		}
	}
	t.printf("\nThe paper, with the elastic flows: FIFO's RTT grows from 10 ms to 150–200 ms\n")
	t.printf("and the AIV's throughput collapses (−80 %%); CoDel about 20 ms; FQ-CoDel and\n")
	t.printf("CAKE keep about 10 ms and the full throughput. Our telemetry sources write\n")
	t.printf("on a fixed schedule whatever happens (open loop), so their throughput holds\n")
	t.printf("even under FIFO, where the paper's AIV, which waits for its answers, fell\n")
	t.printf("behind; the round trip is the figure to compare. Our FIFO's 500 packets\n")
	t.printf("hold up to 600 ms at 10 Mbit/s, hence a larger RTT than the paper's.\n\n")
	return nil
}

func (t *tunReport) acpPriority(ctx context.Context) error {
	t.printf("### ACP updates marked CS7 beside kernel TCP\n\n")
	t.printf("The ACP prioritisation paper's question, on a 20 Mbit/s, 20 ms RTT path\n")
	t.printf("with a 100-packet queue: n ACP update flows beside m iperf3 CUBIC flows,\n")
	t.printf("the updates marked CS7 or best effort, under a FIFO, the WMM-like strict\n")
	t.printf("priority of Wi-Fi's access categories (`wmm`) and CAKE's DiffServ tins,\n")
	t.printf("20 s per run (`tun-acp*`). Mean age over the n update flows, mean / p95, ms:\n\n")
	t.printf("| n ACP, m TCP | alone (no TCP) | fifo CS7 | fifo BE | wmm CS7 | wmm BE | cake CS7 | cake BE | wmm CS7 / alone |\n")
	t.printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	worst := 0.0
	for _, nm := range [][2]int{{2, 1}, {5, 2}, {10, 5}} {
		n, m := nm[0], nm[1]
		age := func(name string) (mean, p95 float64, err error) {
			r, err := t.run(ctx, name, "")
			if err != nil {
				return 0, 0, err
			}
			k := 0
			for _, f := range r.Flows {
				if f.AgeMs != nil {
					mean += f.AgeMs.Mean
					p95 += f.AgeMs.P95
					k++
				}
			}
			if k > 0 {
				mean, p95 = mean/float64(k), p95/float64(k)
			}
			return mean, p95, nil
		}
		alone, aloneP95, err := age(fmt.Sprintf("tun-acp%d-alone", n))
		if err != nil {
			return err
		}
		row := []string{fmt.Sprintf("%d, %d", n, m), fmt.Sprintf("%.1f / %.1f", alone, aloneP95)}
		var wmmCS7 float64
		for _, q := range []string{"fifo", "wmm", "cake"} {
			for _, mark := range []string{"cs7", "be"} {
				mean, p95, err := age(fmt.Sprintf("tun-acp%d-tcp%d-%s-%s", n, m, q, mark))
				if err != nil {
					return err
				}
				if q == "wmm" && mark == "cs7" {
					wmmCS7 = mean
				}
				row = append(row, fmt.Sprintf("%.1f / %.1f", mean, p95))
			}
		}
		ratio := wmmCS7 / alone
		worst = max(worst, ratio)
		row = append(row, fmt.Sprintf("%.2f×", ratio))
		t.printf("| %s |\n", strings.Join(row, " | "))
	}
	t.printf("\nTarget: with CS7 and priority the age stays within 1.2× of the age without\n")
	t.printf("TCP: worst %.2f× %s. Under CAKE, flow queueing already protects the update\n", worst, verdict(worst <= 1.2))
	t.printf("flows whatever their mark (and its voice tin caps them at a quarter of the\n")
	t.printf("link); under strict priority the marked updates never wait behind TCP, but\n")
	t.printf("nothing stops them from taking the link from it (see the `wmm-acp-cubic`\n")
	t.printf("simulation in bench/README.md).\n\n")
	return nil
}

func (t *tunReport) nagle(ctx context.Context) error {
	t.printf("### Nagle and delayed ACKs: sender-side buffering\n\n")
	t.printf("A 100-byte message every 20 ms over kernel TCP with Nagle's algorithm on,\n")
	t.printf("with `TCP_NODELAY`, and as fresh status updates (SendUpdate; ACP decides\n")
	t.printf("when an update leaves, and a newer one replaces one still waiting), at RTT\n")
	t.printf("10, 30 and 100 ms over 10 Mbit/s, 20 s per run (`tun-nagle-*`). The\n")
	t.printf("latency from the application's write to the message's arrival at the\n")
	t.printf("router, ms (p50 / p95 / p99), and the messages delivered:\n\n")
	t.printf("| RTT | TCP, Nagle on | TCP_NODELAY | fresh updates | fresh updates delivered |\n|---|---:|---:|---:|---:|\n")
	var figures []string
	for _, rtt := range []int{10, 30, 100} {
		name := fmt.Sprintf("tun-nagle-rtt%dms", rtt)
		r, err := t.run(ctx, name, "")
		if err != nil {
			return err
		}
		cell := func(f report.Flow) string {
			if f.WriteToRouterMs == nil {
				return "-"
			}
			s := *f.WriteToRouterMs
			return fmt.Sprintf("%.1f / %.1f / %.1f", s.P50, s.P95, s.P99)
		}
		fr := flow(r, "fresh-updates")
		delivered := "-"
		if fr.Sent > 0 {
			pct := 100 * float64(fr.Delivered) / float64(fr.Sent)
			delivered = fmt.Sprintf("%.0f %%", pct)
			if pct < 99.5 { // "100 %" with some superseded would read as a contradiction
				delivered += " (the rest superseded)"
			}
		}
		t.printf("| %d ms | %s | %s | %s | %s |\n", rtt, cell(flow(r, "tcp-nagle")), cell(flow(r, "tcp-nodelay")), cell(fr), delivered)
		if t.plots != "" {
			if err := plots.WriteLatencyCDF(t.plots, name, r); err != nil {
				return err
			}
			figures = append(figures, fmt.Sprintf("![write-to-router CDF, RTT %d ms](results/%s-cdf.png)", rtt, name))
		}
	}
	t.printf("\nNagle holds a small write while an earlier one is unacknowledged, and the\n")
	t.printf("receiver delays its ACK, so the buffering grows with the RTT; with\n")
	t.printf("`TCP_NODELAY` a message leaves at once. fresh's update path never queues\n")
	t.printf("one message behind another. ACP sends the freshest update at the rate it\n")
	t.printf("finds age-optimal for the path; a periodic source slower than that rate\n")
	t.printf("is its bound (the regulator holds the rate just above the source's, so a\n")
	t.printf("reading leaves when it is written), and a source faster than the path\n")
	t.printf("allows has its older readings superseded by newer ones (the last column\n")
	t.printf("says how many arrived). For a source that must deliver every message\n")
	t.printf("whatever the path, that is the wrong tool; for a monitor that wants the\n")
	t.printf("newest reading, it is the point.\n\n")
	for _, p := range figures {
		t.printf("%s\n\n", p)
	}
	return nil
}
