package emudriver

import (
	"math"
	"slices"
	"strings"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
)

// result turns the finished run into a report.Run, with bench/sim's field
// meanings; the package doc lists where the numbers come from.
func (d *driver) result() *report.Run {
	s := d.s
	dur := s.Duration.D()
	r := &report.Run{
		Scenario:  s.Name,
		Driver:    d.net.driverName(),
		Seed:      s.Seed,
		CC:        d.opts.CC,
		DurationS: dur.Seconds(),
	}
	var jain []float64
	for _, f := range d.flows {
		f.mu.Lock()
		fr := f.report(d)
		if f.spec.Kind == scenario.KindBulk && !f.spec.Reverse {
			jain = append(jain, float64(f.m.jainBytes))
		}
		f.mu.Unlock()
		r.Flows = append(r.Flows, fr)
	}
	r.Jain = report.Jain(jain)
	r.Path = s.DescribePaths()
	busy := d.net.busy()
	r.Utilization = report.Utilization{
		Forward: report.Round3(min(busy[0].BusySince(d.busy0[0]).Seconds()/dur.Seconds(), 1)),
		Reverse: report.Round3(min(busy[1].BusySince(d.busy0[1]).Seconds()/dur.Seconds(), 1)),
	}
	if r.CC == "" {
		r.CC = defaultLabel(s.Flows)
	}
	return r
}

// report is the flow's result; f.mu held.
func (f *flowRun) report(d *driver) report.Flow {
	active := (f.end - f.start).Seconds()
	m := &f.m
	fr := report.Flow{
		Name:   f.spec.Name,
		Kind:   f.spec.Kind,
		CC:     f.spec.CC,
		Bytes:  m.bytes,
		StartS: f.start.Seconds(),
		EndS:   f.end.Seconds(),
	}
	if f.tunf != nil {
		fr.Link = &report.LinkCount{
			DataPackets: m.linkPkts[0], DataBytes: m.linkBytes[0],
			ReturnPackets: m.linkPkts[1], ReturnBytes: m.linkBytes[1],
		}
	}
	// Queueing delay: the OWD less the path's propagation delay at send
	// time less the flow's smallest such excess (serialisation and the
	// fixed cost of the loopback hops), per packet.
	queue := m.queueMs
	if !d.exact {
		queue = make([]float64, len(m.owdMs))
		minExcess := math.Inf(1)
		for i, o := range m.owdMs {
			minExcess = min(minExcess, o-m.baseMs[i])
		}
		for i, o := range m.owdMs {
			queue[i] = max(o-m.baseMs[i]-minExcess, 0)
		}
	}
	if d.opts.Trace {
		fr.OWDSamples = append([]float64(nil), m.owdMs...)
		se := m.series
		fr.Series = &se
	}
	delivered := int64(len(m.owdMs))
	fr.OWDms = report.Summarize(m.owdMs)
	fr.QueueMs = report.Summarize(queue)

	var sentBytes int64
	switch {
	case f.spec.Kind == scenario.KindCBR:
		fr.Sent, fr.Delivered = m.cbrSent, m.cbrDelivered
		fr.Lost = max(m.cbrSent-m.cbrDelivered, 0)
		sentBytes = m.cbrSentBytes
	case f.spec.Kind == scenario.KindBulk:
		ss := f.fin.sender
		fr.Sent, fr.Delivered = ss.PacketsSent, delivered
		fr.Lost, fr.Retransmitted = ss.PacketsLost, ss.Retransmitted
		sentBytes = ss.BytesSent + ipUDPHeader*ss.PacketsSent
		fr.SlowStartS = report.Round3(float64(m.slowStart) * statsEvery.Seconds())
		if len(m.modes) > 0 {
			fr.ModeS = map[string]float64{}
			for mode, n := range m.modes {
				fr.ModeS[mode] = report.Round3(float64(n) * statsEvery.Seconds())
			}
		}
		if m.samples > 0 {
			fr.SignalShare = map[string]float64{}
			for sig, n := range m.signals {
				if n > 0 {
					fr.SignalShare[sig] = report.Round3(float64(n) / float64(m.samples))
				}
			}
		}
		if m.clockErrN > 0 {
			e := report.Round3(m.clockErrSum / float64(m.clockErrN))
			fr.ClockErrorMs = &e
		}
	case f.spec.Kind == scenario.KindIperf3:
		// iperf3's own report: bytes received and goodput over its -t,
		// retransmissions, the sender's rate; delivered = data segments
		// seen at the router.
		fr.Delivered = delivered
		if rep := f.tunf.iperf; rep != nil {
			fr.Bytes = rep.End.SumReceived.Bytes
			fr.Retransmitted = rep.End.SumSent.Retransmits
			fr.GoodputBps = report.Round3(rep.End.SumReceived.BitsPerSecond)
			fr.SendRateBps = report.Round3(rep.End.SumSent.BitsPerSecond)
		}
		return fr
	case f.spec.Kind == scenario.KindTelemetry:
		fr.Sent, fr.Delivered = m.msgSent, m.msgRecv
		fr.Lost = max(m.msgSent-m.msgRecv, 0)
		sentBytes = m.msgSent * int64(f.spec.Size)
		w2r, e2e := report.Summarize(m.w2rMs), report.Summarize(m.e2eMs)
		fr.WriteToRouterMs, fr.EndToEndMs = &w2r, &e2e
		fr.WriteToRouterSamples = slices.Clone(m.w2rMs)
		if f.spec.Respond {
			rtt := report.Summarize(m.rttMs)
			fr.RTTMs = &rtt
		}
		if m.age.Started() {
			fr.AgeMs = f.ageStats(d)
		}
		if sl := f.tunf.sleep; sl != nil {
			sl.report(&fr)
		}
	case f.spec.IsUpdates():
		ss, rs := f.fin.sender, f.fin.receiver
		fr.Sent, fr.Delivered = ss.UpdatesSent, rs.UpdatesReceived
		fr.Lost = max(ss.UpdatesSent-rs.UpdatesReceived, 0)
		sentBytes = ss.BytesSent + ipUDPHeader*ss.PacketsSent
		fr.AgeMs = f.ageStats(d)
		rate := 0.0
		if active > 0 {
			rate = report.Round3(float64(ss.UpdatesSent) / active)
		}
		fr.RateHz = &rate
	}
	if active > 0 {
		fr.GoodputBps = report.Round3(float64(m.bytes*8) / active)
		fr.SendRateBps = report.Round3(float64(sentBytes*8) / active)
	}
	return fr
}

// ageStats summarises the age of information at the monitor up to the
// flow's end; f.mu held.
func (f *flowRun) ageStats(d *driver) *report.AgeStats {
	sum := f.m.age.Summary(monoOf(min(f.end, d.s.Duration.D())))
	return &report.AgeStats{
		Mean: report.Round3(float64(sum.Mean) / 1e6),
		P95:  report.Round3(float64(sum.P95) / 1e6),
		Peak: report.Round3(float64(sum.Max) / 1e6),
	}
}

// defaultLabel names a run without Options.CC: the controllers of its
// bulk flows, as bench/sim does.
func defaultLabel(flows []scenario.Flow) string {
	var names []string
	seen := map[string]bool{}
	for _, f := range flows {
		if f.Kind == scenario.KindBulk && !seen[f.CC] {
			seen[f.CC] = true
			names = append(names, f.CC)
		}
	}
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, "+")
}
