package plots

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/plot"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
)

// peerPoint is one telemetry flow's point, over the runs of one file.
type peerPoint struct {
	label string
	x, y  float64
}

// Peers draws the Pantheon-style figure of a peers comparison
// (bench/results/peers.md) from the runs of "freshbench emu --tun", one
// file's runs each, one point per telemetry flow averaged over its file's
// runs: streaming flows (beside a bulk upload) as the readings' p95 age at
// the monitor (log, inverted) against the upload's goodput beside them;
// sleeping flows (with sleep) as the wake-to-stored median (log, inverted)
// against the IP bytes of a wake, both directions (log, inverted). The
// title is "better: up and right"; the caller puts its own line above it.
func Peers(files [][]*report.Run) (*plot.Plot, error) {
	var pts []peerPoint
	sleeping := false
	for _, runs := range files {
		fp, sl, err := peerPoints(runs)
		if err != nil {
			return nil, err
		}
		pts, sleeping = append(pts, fp...), sleeping || sl
	}
	if len(pts) == 0 {
		return nil, errors.New("no telemetry flows in the files")
	}
	marks := make([]Mark, len(pts))
	for i, pt := range pts {
		marks[i] = Mark{Label: pt.label, Index: i, X: pt.x, Y: pt.y}
	}
	var p *plot.Plot
	if sleeping {
		p = newPlot("better: up and right", "wake to reading stored, median [ms] (log, inverted)", "IP bytes per wake, both directions (log, inverted)")
	} else {
		p = newPlot("better: up and right", "readings' p95 age at the monitor [ms] (log, inverted)", "upload goodput beside them [Mbit/s]")
	}
	labels, err := addPantheonMarks(p, marks, nil)
	if err != nil {
		return nil, err
	}
	// A dozen peers crowd where they share an upload: the legend names
	// them, the labels beside the marks would cover each other.
	if len(marks) > 8 {
		labels.text = make([]string, len(labels.text))
	}
	xlo, xhi, ylo, yhi := markRange(marks, nil)
	setPantheonAxes(p, xlo, xhi, yhi)
	if sleeping {
		p.Y.Scale = plot.InvertedScale{Normalizer: plot.LogScale{}}
		p.Y.Tick.Marker = logTicks{}
		f := math.Pow(math.Max(yhi/ylo, 1.2), 0.12)
		p.Y.Min, p.Y.Max = ylo/f, yhi*f
	}
	return p, nil
}

// peerPoints are the telemetry flows of one file's runs, averaged; a
// streaming flow's label says what upload it ran beside.
func peerPoints(runs []*report.Run) (pts []peerPoint, sleeping bool, err error) {
	var upload float64
	beside := ""
	for _, f := range runs[0].Flows {
		switch f.Kind {
		case scenario.KindBulk:
			beside = " + own owd upload"
		case scenario.KindIperf3:
			beside = " + CUBIC upload"
		}
	}
	for _, r := range runs {
		for _, f := range r.Flows {
			if f.Kind == scenario.KindBulk || f.Kind == scenario.KindIperf3 {
				upload += f.GoodputBps / 1e6 / float64(len(runs))
			}
		}
	}
	for _, f0 := range runs[0].Flows {
		if f0.Kind != scenario.KindTelemetry {
			continue
		}
		var x, y float64
		for _, r := range runs {
			f, ok := r.Flow(f0.Name)
			switch {
			case !ok:
				return nil, false, fmt.Errorf("%s: flow %s missing from a run", runs[0].Scenario, f0.Name)
			case f.WakeToStoredMs != nil && f.Link != nil && f.Sent > 0:
				sleeping = true
				x += f.WakeToStoredMs.P50
				y += float64(f.Link.DataBytes+f.Link.ReturnBytes) / float64(f.Sent)
			case f.AgeMs != nil:
				x, y = x+f.AgeMs.P95, upload*float64(len(runs))
			default:
				return nil, false, fmt.Errorf("%s: flow %s has neither an age nor wakes", runs[0].Scenario, f0.Name)
			}
		}
		n := float64(len(runs))
		label := f0.Name
		if !sleeping {
			label += beside
		}
		pts = append(pts, peerPoint{label: label, x: x / n, y: y / n})
	}
	return pts, sleeping, nil
}
