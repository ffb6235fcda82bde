package acp

import (
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// SourceObserver is implemented by the update policies that use the
// application's reading times (Regulator). A transport calls
// OnUpdateOffered each time the application hands it an update (SendUpdate),
// whether or not that update is ever sent: a newer one may replace it
// before the policy lets it go. Policies that do not implement it never need
// to know.
type SourceObserver interface {
	// OnUpdateOffered records that the application offered an update
	// generated at now.
	OnUpdateOffered(now clock.Mono)
}

var _ SourceObserver = (*Regulator)(nil)

// The source bound (Tuning.SourceHeadroom = h). ACP assumes a source that
// can generate an update whenever the regulator asks; a sensor read every
// 20 ms cannot. A send whose update was generated after the send gate opened
// (gen > last send + 1/λ) waited for the source, not for the regulator. When
// at least half of an epoch's sends (and three or more) did, the epoch's
// send rate σ̂ (sends over the time between its first and last) is the
// source's, and sending faster cannot lower the age: nothing fresher exists
// to send. The rate is then held at (1 + h)·σ̂, so the gate is open whenever
// a reading appears and every reading goes at once; sending at the source's
// rate on a path with room for it does not raise the age either, so nothing
// is lost by going no lower. When the path cannot carry the source's rate,
// the rule lowers λ below σ, sends wait for the gate again, and the bound
// lapses: the regulator supersedes as ACP does.
const (
	// DefaultSourceHeadroom is h = 1: the gate opens at half the source's
	// interval, so a reading up to half an interval late or early (a
	// software timer on a loaded host) still finds it open. A narrower gate
	// (h = 0.25) loses readings to supersession whenever the host's timers
	// are late, as they are on a loaded machine.
	DefaultSourceHeadroom = 1.0
)

// sourceState counts an epoch's sends and those that waited for the source.
type sourceState struct {
	sends, waited int
	first, last   clock.Mono
}

// onSend notes a send at now of an update generated at gen, the gate having
// opened at gate (gateOK false for the first send).
func (s *sourceState) onSend(now, gen, gate clock.Mono, gateOK bool) {
	if s.sends == 0 {
		s.first = now
	}
	s.last = now
	s.sends++
	if gateOK && gen > gate {
		s.waited++
	}
}

// close ends the epoch: σ̂ if the epoch was source-limited, else 0.
func (s *sourceState) close() Rate {
	var sigma Rate
	if s.sends >= 3 && 2*s.waited >= s.sends && s.last > s.first {
		sigma = Rate(float64(s.sends-1) / s.last.Sub(s.first).Seconds())
	}
	*s = sourceState{}
	return sigma
}

// The offered rate (Tuning.StartBurst). ACP starts at one update per RTT,
// like TCP's initial window, conservative because nothing is known of the
// path. A periodic source faster than that loses every reading the
// regulator supersedes while it climbs: at 100 ms RTT a 50 Hz sensor starts
// five times faster than the regulator. When readings arrive while the send
// gate is still closed (now < NextSendTime), the source outpaces the
// regulator and its rate σ_o is measured (an EWMA of the intervals between
// such readings, gain 1/8 as SRTT's). Until the table first sets the rate,
// the regulator starts at min((1 + SourceHeadroom)·σ_o, StartBurst/SRTT)
// instead of 1/SRTT: the source's rate, with the headroom of the source
// bound, but never more than StartBurst updates per RTT, the initial
// window RFC 6928 allows TCP (10 segments). A source that generates
// whenever the gate opens (ACP's generate-at-will model) never offers while
// the gate is closed, so its start is ACP's.

// DefaultStartBurst is Tuning.StartBurst: 10 updates per RTT, the initial
// window of RFC 6928.
const DefaultStartBurst = 10

// offeredGain is the EWMA weight of a new interval in σ_o: 1/8, RFC 6298's
// α for SRTT.
const offeredGain = 1.0 / 8

// offeredState measures the source's rate from the readings that arrive
// while the send gate is closed.
type offeredState struct {
	last     clock.Mono
	lastOK   bool
	interval time.Duration // EWMA of the intervals
	valid    bool
}

// offered notes a reading offered at now; early says the gate was closed.
func (o *offeredState) offered(now clock.Mono, early bool) {
	if o.lastOK && early && now > o.last {
		d := now.Sub(o.last)
		if o.valid {
			o.interval += time.Duration(offeredGain * float64(d-o.interval))
		} else {
			o.interval, o.valid = d, true
		}
	}
	o.last, o.lastOK = now, true
}

// rate is σ_o (0 if not measured).
func (o *offeredState) rate() Rate {
	if !o.valid || o.interval <= 0 {
		return 0
	}
	return Rate(1 / o.interval.Seconds())
}

// OnUpdateOffered implements SourceObserver.
func (r *Regulator) OnUpdateOffered(now clock.Mono) {
	now = r.tick(now)
	r.offered.offered(now, r.sentAny && now < r.NextSendTime())
	if !r.ruled {
		r.setRate(r.startRate())
	}
}
