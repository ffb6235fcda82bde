package resultsmd

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/report"
)

// fakeTUN answers every scenario the TUN report asks for with made-up
// flows, and records what was asked.
type fakeTUN struct {
	asked []string
}

func (f *fakeTUN) run(_ context.Context, name, cc string) (*report.Run, error) {
	f.asked = append(f.asked, name+"/"+cc)
	r := &report.Run{Scenario: name, Utilization: report.Utilization{Forward: 0.97}}
	bulk := func(n string, bps, q95 float64) report.Flow {
		return report.Flow{Name: n, Kind: "bulk", GoodputBps: bps, QueueMs: report.Stats{P95: q95}}
	}
	tele := func(n string, p50, p95 float64) report.Flow {
		return report.Flow{Name: n, Kind: "telemetry", GoodputBps: 9600,
			EndToEndMs: &report.Stats{P50: p50, P95: p95}, WriteToRouterMs: &report.Stats{P50: p50 / 2, P95: p95 / 2, P99: p95},
			RTTMs:                &report.Stats{P50: 2 * p50, P95: 2 * p95},
			WriteToRouterSamples: []float64{1, 2, 3}, Sent: 100, Delivered: 90}
	}
	switch {
	case name == "tun-10mbps-40ms" && cc == "owd":
		r.Flows = []report.Flow{bulk("bulk", 9.2e6, 7)}
	case name == "tun-10mbps-40ms":
		r.Flows = []report.Flow{bulk("bulk", 9.4e6, 38)}
	case strings.HasPrefix(name, "tun-10mbps-40ms-kernel-"):
		r.Flows = []report.Flow{bulk("kernel-"+strings.TrimPrefix(name, "tun-10mbps-40ms-kernel-"), 9.6e6, 38)}
	case name == "tun-10mbps-40ms-vs-cubic":
		r.Flows = []report.Flow{bulk("owd", 0.4e6, 37), bulk("kernel-cubic", 9.3e6, 37)}
	case name == "tun-10mbps-40ms-loss1":
		r.Flows = []report.Flow{bulk("bulk", 6e6, 3)}
	case name == "tun-10mbps-40ms-loss1-kernel-cubic":
		r.Flows = []report.Flow{bulk("kernel-cubic", 2e6, 5)}
	case strings.HasPrefix(name, "tun-paper-rtt-90ms"):
		r.Flows = []report.Flow{bulk("bulk", 1.2e6, 19)}
	case strings.HasPrefix(name, "tun-aqm-"):
		r.Flows = []report.Flow{tele("aiv", 6, 9), tele("meter", 6, 9), tele("gantry", 6, 9), {Name: "camera", Kind: "cbr"}}
	case strings.HasPrefix(name, "tun-acp"):
		age := 20.0
		if strings.Contains(name, "fifo") {
			age = 100
		}
		r.Flows = []report.Flow{{Name: "acp-1", Kind: "acp", AgeMs: &report.AgeStats{Mean: age, P95: 2 * age}}}
	case strings.HasPrefix(name, "tun-nagle-"):
		r.Flows = []report.Flow{tele("tcp-nagle", 20, 40), tele("tcp-nodelay", 0.1, 0.2), tele("fresh-updates", 0.1, 0.3)}
	}
	return r, nil
}

// The TUN report runs every experiment, computes each target from the runs
// and says met or missed as the numbers say.
func TestTUNReport(t *testing.T) {
	f := &fakeTUN{}
	rep := &tunReport{run: f.run, plots: t.TempDir()}
	require.NoError(t, rep.generate(context.Background()))
	md := rep.md.String()
	require.Len(t, f.asked, 11+2*len(bbrPaths)*bbrKernelRuns+8+21+3, "every run of the five sections")
	require.Contains(t, md, "| with 1 % loss, `owd` ≥ 2× kernel CUBIC's goodput | 3.00× | **met** |")
	require.Contains(t, md, "| our `cubic` within ±10 % of kernel CUBIC's goodput (clean path) | -2.1 % | **met** |")
	require.Contains(t, md, "gets ≥ 30 % of the link | 4.1 % | **missed** |")
	require.Contains(t, md, "worst 1.00× **met**", "wmm CS7 age equals the alone age in the fake")
	require.Contains(t, md, "| 30 ms | 10.0 / 20.0 / 40.0 | 0.1 / 0.1 / 0.2 |")
	require.Contains(t, md, "90 % (the rest superseded)")
	require.FileExists(t, rep.plots+"/tun-nagle-rtt100ms-cdf.png")
	require.Contains(t, md, "| fifo | 2× CUBIC | 9.6 | 12.0 / 18.0 ms |", "the AIV's round trip")
}
