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
	CC          string       // controller name
	Window      cc.ByteCount // congestion window, bytes
	PacingRate  cc.Bandwidth // bit/s
	InSlowStart bool         //
	// Mode is the stream controller's mode (cc.Metrics.Mode: "slow_start",
	// "avoidance", and owd's "probe" and "competitive", bbr's "startup",
	// "drain", "probe_bw", "probe_rtt").
	Mode   string
	SRTT   time.Duration // smoothed RTT (RFC 6298)
	MinRTT time.Duration //
	// MinOWD and CurOWD are the stream's one-way delays: the owd
	// controller's OWDmin and OWDcur, or, for a controller without them,
	// the smallest trusted sample since the connection opened and the
	// smallest of the last four (0 until the clocks are trusted).
	MinOWD time.Duration
	CurOWD time.Duration
	Signal cc.DelaySignal
	// Clocks: the estimated receiver − sender offset of the peer's clock
	// (in-band, clock.Inband) and whether this end trusts it, so that the
	// one-way delays it stamps on its ACKs are true.
	ClockOffset time.Duration
	ClockSynced bool
	// PeerClockSynced says the peer trusts its own offset estimate: the
	// one-way delays on the ACKs this end receives are true, and a
	// delay-based controller may use them (until then owd acts on RTT/2).
	PeerClockSynced bool

	// Datagrams and bytes on the wire.
	PacketsSent, PacketsReceived int64
	BytesSent, BytesReceived     int64
	PacketsLost                  int64 // declared lost by this sender
	Retransmitted                int64 // stream packets that carried resent bytes
	Duplicates                   int64 // packets received twice
	Malformed                    int64 // datagrams dropped as malformed
	// Packets dropped by packet protection: failed authentication
	// (forged, corrupted, or for keys no longer held), or replayed (an
	// authentic packet number seen before, or too old to tell).
	Unauthenticated, Replayed int64
	KeyUpdates                int64 // key phases this end started or followed (RFC 9001 §6)

	// Stream.
	StreamBytesAcked    int64 // sent and acknowledged
	StreamBytesReceived int64 // received, duplicates included
	// StreamFramesDropped counts Data frames dropped unacknowledged because
	// storing them would hold more than Config.MaxStreamGaps holes (the
	// sender resends them).
	StreamFramesDropped int64
	// OWDDiscarded counts the peer's one-way-delay samples on ACKs that
	// were impossible (below zero, above the packet's round trip, or below
	// the smallest so far, each beyond the clocks' uncertainty) and were
	// not given to the controller.
	OWDDiscarded int64

	// Updates sent (source side).
	UpdatesSent       int64
	UpdatesSuperseded int64   // replaced by a fresher one before they could go
	UpdatesLost       int64   // never retransmitted
	UpdateRate        float64 // the regulator's current rate, updates/s

	// Updates received (monitor side).
	UpdatesReceived int64
	UpdatesStale    int64 // older than one already delivered: dropped
	// UpdatesRejected counts updates generated further in the future than
	// Config.MaxUpdateFuture: dropped, never delivered.
	UpdatesRejected int64
	Age             AgeStats
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
	st.SRTT, st.MinRTT = s.tr.RTT().Smoothed(), s.tr.RTT().Min()
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
	st.UpdateRate = float64(s.policy.Rate())
	if s.age.Started() {
		sum := s.age.Summary(now)
		st.Age = AgeStats{Mean: sum.Mean, P95: sum.P95, Peak: sum.Max}
	}
	return st
}

// controllerMetrics is the controller's Metrics; for one not built yet
// (see Config.ControllerName), those of a fresh controller of that name,
// built once per name and payload size for every session: Stats is
// polled, and must not build a controller the session does not need.
func (s *Session) controllerMetrics() cc.Metrics {
	if s.ctl != nil {
		return s.ctl.Metrics()
	}
	key := freshMetricsKey{s.cfg.ControllerName, cc.ByteCount(s.cfg.MSS())}
	if m, ok := freshMetrics.Load(key); ok {
		return m.(cc.Metrics)
	}
	ctl, err := newController(&s.cfg)
	if err != nil {
		panic(err) // ControllerName promises NewController does not fail
	}
	m, _ := freshMetrics.LoadOrStore(key, ctl.Metrics())
	return m.(cc.Metrics)
}

type freshMetricsKey struct {
	name string
	mss  cc.ByteCount
}

var freshMetrics sync.Map // freshMetricsKey → cc.Metrics
