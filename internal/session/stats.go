package session

import (
	"sync"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/owd"
)

// Stats is a snapshot of one connection, what transport.Stats shows of
// the session (the transport adds its clock's NTP state). The fields are
// documented there.
type Stats struct {
	// Stream congestion control.
	CC              string
	Window          cc.ByteCount
	PacingRate      cc.Bandwidth
	InSlowStart     bool
	Mode            string
	SRTT, MinRTT    time.Duration
	RTTVar          time.Duration
	MinOWD, CurOWD  time.Duration
	Signal          cc.DelaySignal
	ClockOffset     time.Duration
	ClockSynced     bool
	PeerClockSynced bool
	PathDead        bool

	// Datagrams and bytes on the wire.
	DatagramSize                                   int // the PLPMTU (pmtu.go)
	PMTUProbesSent, PMTUProbesLost, PMTUBlackHoles int64
	PacketsSent, PacketsReceived                   int64
	BytesSent, BytesReceived                       int64
	PacketsLost, Retransmitted                     int64
	Duplicates, Malformed                          int64
	Unauthenticated, Replayed                      int64
	KeyUpdates                                     int64
	StatelessResetsIgnored                         int64
	VersionNegotiationsIgnored                     int64 // forged: the server answered (version.go)

	// Connection migration (migrate.go).
	Migrations, MigrationsReverted, PathResets int64
	MigrationsRefused                          int64 // non-probing datagrams from a penalised address, dropped unread (migrate.go)

	// Stream.
	StreamBytesAcked, StreamBytesReceived int64
	StreamFramesDropped                   int64 // beyond Config.MaxStreamGaps holes
	OWDDiscarded                          int64

	// ACK frequency (ackfreq.go).
	AckRatio         int // packets per ACK asked of the peer (0: none asked)
	AckFrequencySent int64

	// Updates sent (source side) and received (monitor side).
	UpdatesSent, UpdatesSuperseded, UpdatesLost int64
	UpdatesAcked                                int64
	UpdateRate                                  float64
	UpdatesReceived, UpdatesStale               int64
	UpdatesRejected                             int64 // beyond Config.MaxUpdateFuture
	Age                                         AgeStats

	// 0-RTT (early.go).
	EarlyUpdatesSent, EarlyUpdatesReceived int64
	EarlyDropped                           int64
	EarlyRejected                          bool
}

// AgeStats is the age of information at this end (monitor side): the
// time-average age since the first update, its 95th percentile and the
// largest age so far (acp.AgeSummary.Max: the highest tooth of the
// sawtooth, or the current age if no update came for longer than that).
type AgeStats struct {
	Mean, P95, Peak time.Duration
}

// Stats is a snapshot of the session at now.
func (s *Session) Stats(now clock.Mono) Stats {
	st := s.st
	m := s.controllerMetrics()
	st.Window, st.PacingRate, st.InSlowStart, st.Mode = m.Window, m.PacingRate, m.InSlowStart, m.Mode
	st.SRTT, st.MinRTT, st.RTTVar = s.tr.RTT().Smoothed(), s.tr.RTT().Min(), s.tr.RTT().Var()
	st.Signal = m.Signal
	if d, ok := s.ctl.(interface{ Delays() owd.Delays }); ok {
		dl := d.Delays()
		st.MinOWD, st.CurOWD = dl.Min, dl.Cur
	}
	if st.MinOWD == 0 { // a controller without a delay analyzer, or none yet
		st.MinOWD, st.CurOWD = s.owd.min, s.owd.current()
	}
	if s.cfg.TrustPeerClock {
		st.ClockSynced = true
	} else if s.inband != nil { // none before the first sample: offset 0, not synced
		ib := s.inband.Status()
		st.ClockOffset, st.ClockSynced = ib.Offset, ib.Synced && !s.cfg.NoInband
	}
	st.UpdateRate = s.updateRate()
	st.PathDead = s.PathDead()
	st.DatagramSize = s.pmtu.size
	if s.afs != nil && s.afs.seq > 0 {
		st.AckRatio, st.AckFrequencySent = s.afs.ratio, s.afs.seq
	}
	st.PMTUProbesSent, st.PMTUProbesLost, st.PMTUBlackHoles = s.pmtu.sent, s.pmtu.lost, s.pmtu.blackHole
	if s.age.Started() {
		sum := s.age.Summary(now)
		st.Age = AgeStats{Mean: sum.Mean, P95: sum.P95, Peak: sum.Max}
	}
	return st
}

// controllerMetrics is the controller's Metrics; for one not built yet
// (see Config.CC), those of a fresh controller of that name,
// built once per name and payload size for every session: Stats is
// polled, and must not build a controller the session does not need.
func (s *Session) controllerMetrics() cc.Metrics {
	if s.ctl != nil {
		return s.ctl.Metrics()
	}
	key := freshMetricsKey{s.cfg.CC, cc.ByteCount(s.cfg.MSS())}
	if m, ok := freshMetrics.Load(key); ok {
		return m.(cc.Metrics)
	}
	ctl, err := newController(&s.cfg)
	if err != nil {
		panic(err) // CC promises NewController does not fail
	}
	m, _ := freshMetrics.LoadOrStore(key, ctl.Metrics())
	return m.(cc.Metrics)
}

type freshMetricsKey struct {
	name string
	mss  cc.ByteCount
}

var freshMetrics sync.Map // freshMetricsKey → cc.Metrics

// updateRate is the policy's rate; for one not built yet (see
// Config.UpdatePolicy), the rate a fresh one would start at with the RTT
// seen so far. Building one to ask costs a Stats call what it costs New;
// keeping it would cost every monitor's connection its regulator.
func (s *Session) updateRate() float64 {
	if s.policy != nil {
		return float64(s.policy.Rate())
	}
	pol, err := newPolicy(&s.cfg)
	if err != nil {
		return 0
	}
	if s.rttSeed > 0 {
		pol.SeedRTT(s.rttSeed)
	}
	return float64(pol.Rate())
}
