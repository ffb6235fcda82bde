package sim

import (
	"math"
	"strings"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

func nan() float64 { return math.NaN() }

// result turns the run's state into a report.Run.
func (w *world) result(opts Options) *report.Run {
	s := w.s
	dur := s.Duration.D()
	end := clock.Mono(0).Add(dur)
	r := &report.Run{
		Scenario:  s.Name,
		Driver:    "sim",
		Seed:      s.Seed,
		CC:        opts.CC,
		DurationS: dur.Seconds(),
	}
	var jain []float64
	for _, f := range w.flows {
		active := f.end.Sub(f.start).Seconds()
		fr := report.Flow{
			Name:      f.spec.Name,
			Kind:      f.spec.Kind,
			CC:        f.spec.CC,
			Bytes:     f.st.bytes,
			Sent:      f.st.sent,
			Delivered: f.st.delivered,
			StartS:    f.start.Sub(0).Seconds(),
			EndS:      f.end.Sub(0).Seconds(),
			OWDms:     report.Summarize(f.st.owdMs),
			QueueMs:   report.Summarize(f.st.queueMs),
		}
		if f.cli != nil {
			st := f.cli.Stats(end)
			fr.Lost, fr.Retransmitted = st.PacketsLost, st.Retransmitted
			fr.AckFrequencySent, fr.AckRatio = st.AckFrequencySent, st.AckRatio
		}
		if active > 0 {
			fr.GoodputBps = report.Round3(float64(f.st.bytes*8) / active)
			fr.SendRateBps = report.Round3(float64(f.st.sentBytes*8) / active)
		}
		if !f.isBulk() && !f.isUpdates() {
			fr.Lost = f.st.sent - f.st.delivered
		}
		if f.isBulk() {
			fr.SlowStartS = report.Round3(f.st.slowStart.Seconds())
			if len(f.st.modes) > 0 {
				fr.ModeS = map[string]float64{}
				for mode, d := range f.st.modes {
					fr.ModeS[mode] = report.Round3(d.Seconds())
				}
			}
			if !f.reverse { // Jain over the flows that share the forward bottleneck
				jain = append(jain, float64(f.st.bytesAtMark[1]-f.st.bytesAtMark[0]))
			}
		}
		if f.isBulk() || f.isUpdates() {
			var total int64
			for _, n := range f.st.signals {
				total += n
			}
			if total > 0 {
				fr.SignalShare = map[string]float64{}
				for sig, n := range f.st.signals {
					if n > 0 {
						fr.SignalShare[cc.DelaySignal(sig).String()] = report.Round3(float64(n) / float64(total))
					}
				}
			}
			if f.st.clockErrN > 0 {
				e := report.Round3(f.st.clockErrSum / float64(f.st.clockErrN))
				fr.ClockErrorMs = &e
			}
		}
		if f.isUpdates() {
			sum := f.age.Summary(min(end, f.end))
			fr.AgeMs = &report.AgeStats{Mean: report.Round3(ms(sum.Mean)), P95: report.Round3(ms(sum.P95)), Peak: report.Round3(ms(sum.Max))}
			fr.Lost = f.st.sent - f.st.delivered
			rate := 0.0
			if active > 0 {
				rate = report.Round3(float64(f.st.sent) / active)
			}
			fr.RateHz = &rate
		}
		if w.trace {
			se := w.series[f.idx]
			fr.Series = &se
			fr.OWDSamples = w.owdSamples[f.idx]
		}
		r.Flows = append(r.Flows, fr)
	}
	r.Jain = report.Jain(jain)
	r.Path = s.DescribePaths()
	if w.trace {
		r.CapacityBps = w.capacity
	}
	fs, rs := w.fwd.Stats(), w.rev.Stats()
	r.Utilization = report.Utilization{
		Forward: report.Round3(fs.BusyTime.Seconds() / dur.Seconds()),
		Reverse: report.Round3(rs.BusyTime.Seconds() / dur.Seconds()),
	}
	if r.CC == "" {
		r.CC = defaultLabel(s.Flows)
	}
	return r
}

// defaultLabel names a run without --cc: the controllers of its bulk flows.
func defaultLabel(flows []scenario.Flow) string {
	var names []string
	seen := map[string]bool{}
	for _, f := range flows {
		if f.Kind == "bulk" && !seen[f.CC] {
			seen[f.CC] = true
			names = append(names, f.CC)
		}
	}
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, "+")
}
