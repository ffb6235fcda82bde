package main

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// plotCDF draws the queueing delay's CDF of every bottleneck run.
func plotCDF(path string, bn []bottleneckResult) error {
	p := plot.New()
	p.Title.Text = "Forward queueing delay, 10 Mbit/s, 40 ms RTT, FIFO 1 BDP"
	p.X.Label.Text = "queueing delay (ms)"
	p.Y.Label.Text = "CDF"
	var lines []any
	for _, r := range bn {
		pts := make(plotter.XYs, len(r.delays))
		for i, d := range r.delays {
			pts[i] = plotter.XY{X: float64(d) / 1e6, Y: float64(i+1) / float64(len(r.delays))}
		}
		name := "quic-go default"
		if r.hooked {
			name = "quic-go + hook"
		}
		lines = append(lines, fmt.Sprintf("%s, loss %.0f%%", name, r.loss*100), pts)
	}
	if err := plotutil.AddLines(p, lines...); err != nil {
		return err
	}
	p.Legend.Top, p.Legend.Left = false, false
	return p.Save(7*vg.Inch, 4*vg.Inch, path)
}
