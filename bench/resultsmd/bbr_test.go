package resultsmd

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/report"
)

// The BBR section runs each side bbrKernelRuns times, reports mean ± SD and
// judges the targets from those means.
func TestBBRVersusKernelSection(t *testing.T) {
	for _, tc := range []struct {
		name          string
		oursGp, oursQ float64
		wantGp, wantQ string
	}{
		{"close", 9.2e6, 36, "| `tun-10mbps-40ms-bbr`: goodput within ±10 % of kernel BBR's | -3.0 % | **met** |", "| `tun-10mbps-40ms-bbr`: p95 queueing within ±30 % of kernel BBR's | -2.7 % | **met** |"},
		{"far", 7e6, 15, "goodput within ±10 % of kernel BBR's | -26.2 % | **missed** |", "p95 queueing within ±30 % of kernel BBR's | -59.5 % | **missed** |"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked []string
			n := 0
			run := func(_ context.Context, name, cc string) (*report.Run, error) {
				asked = append(asked, name+"/"+cc)
				n++
				r := &report.Run{Scenario: name, Utilization: report.Utilization{Forward: 0.98}}
				if name == "tun-10mbps-40ms-bbr" || name == "tun-trace-tmobile-lte-short-down-fifo-bbr" {
					// Alternate a little so the SD is not zero.
					gp := tc.oursGp + float64(n%2)*0.02e6
					r.Flows = []report.Flow{{Name: "bulk", Kind: "bulk", GoodputBps: gp, QueueMs: report.Stats{P50: 28, P95: tc.oursQ}, Retransmitted: 150}}
				} else {
					r.Flows = []report.Flow{{Name: "kernel-bbr", Kind: "iperf3", GoodputBps: 9.5e6, QueueMs: report.Stats{P50: 27, P95: 37}, Retransmitted: 200}}
				}
				return r, nil
			}
			rep := &tunReport{run: run}
			require.NoError(t, rep.bbrVersusKernel(context.Background()))
			require.Len(t, asked, 4*bbrKernelRuns, "two paths, two sides")
			require.Equal(t, "tun-10mbps-40ms-bbr/bbr", asked[0])
			require.Equal(t, "tun-10mbps-40ms-kernel-bbr/", asked[bbrKernelRuns])
			require.Equal(t, "tun-trace-tmobile-lte-short-down-fifo-bbr/bbr", asked[2*bbrKernelRuns])
			require.Equal(t, "tun-trace-tmobile-lte-short-down-fifo-kernel-bbr/", asked[3*bbrKernelRuns])
			md := rep.md.String()
			require.Contains(t, md, "| kernel bbr | 9.50 ± 0.00 Mbit/s | 0.980 ± 0.000 | 27.0 ± 0.0 ms | 37.0 ± 0.0 ms | 200 ± 0 |")
			require.Contains(t, md, tc.wantGp)
			require.Contains(t, md, "| `tun-trace-tmobile-lte-short-down-fifo-bbr`: goodput within ±10 % of kernel BBR's |")
			require.Contains(t, md, tc.wantQ)
		})
	}
	require.Equal(t, 0.0, relDiff(0, 0))
}
