package transport

import (
	"fmt"
	"strings"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/internal/session"
)

// Stats is a snapshot of one connection (Conn.Stats). Counters count
// since the connection began; each field's unit is in its name or
// comment. String gives a one-line summary for logs.
type Stats struct {
	// Stream congestion control.
	CC          string       // controller name (Config.CC)
	Window      cc.ByteCount // congestion window, bytes
	PacingRate  cc.Bandwidth // bit/s
	InSlowStart bool
	// Mode is the stream controller's mode (cc.Metrics.Mode: "slow_start",
	// "avoidance", and owd's "probe" and "competitive", bbr's "startup",
	// "drain", "probe_bw", "probe_rtt", copa's "default" and "competitive").
	Mode   string
	SRTT   time.Duration // smoothed RTT (RFC 6298)
	MinRTT time.Duration
	RTTVar time.Duration // RTT variation (RFC 6298's RTTVAR), as TCP's tcpi_rttvar
	// MinOWD and CurOWD are the stream's one-way delays: the owd
	// controller's OWDmin and OWDcur, or, for a controller without them,
	// the smallest trusted sample since the connection opened and the
	// smallest of the last four (0 until the clocks are trusted).
	MinOWD time.Duration
	CurOWD time.Duration
	Signal cc.DelaySignal // which delay the controller acts on
	// ClockOffset is the estimated receiver − sender offset of the peer's
	// clock (in-band, clock.Inband), ClockSynced whether this end trusts
	// it, so that the one-way delays it stamps on its ACKs are true.
	ClockOffset time.Duration
	ClockSynced bool
	// PeerClockSynced says the peer trusts its own offset estimate: the
	// one-way delays on the ACKs this end receives are true, and a
	// delay-based controller may use them (until then owd acts on RTT/2).
	PeerClockSynced bool
	// PathDead says the path looks dead: the last few retransmission
	// timeouts in a row (4; about 3 s on a short path, 6 s at a 300 ms
	// RTT) brought no acknowledgement. The connection stays open, the
	// update policy's updates go at most one per timeout (probes, not a
	// sensor's rate into nothing), and the first acknowledgement clears
	// it; only IdleTimeout ends the connection. Watch it to tell a user
	// at once that the monitor is unreachable: Conn.PathChanged signals
	// each change, so an application need not poll.
	PathDead bool
	// PortUnreachable counts the ICMP port-unreachable errors the kernel
	// reported for this connection's peer after the handshake (a Dial'd
	// connection's connected socket only): the peer's host answered that
	// nothing listens on its port, as after the peer process died. The
	// protocol ignores them, as TCP ignores ICMP errors on an established
	// connection (RFC 5461: they are unauthenticated and may be
	// transient); an application may name them when it says why the
	// path is dead.
	PortUnreachable int64
	// PortUnreachableSinceHeard is the part of PortUnreachable counted
	// since the peer was last heard (a datagram of this connection
	// arrived): with PathDead, a sign that nothing listens at the peer's
	// address now, not an error from before it answered last.
	PortUnreachableSinceHeard int64
	// NTP is the state of this host's NTP-corrected clock, when the
	// endpoint has one (Config.NTPServer, or an ntpclock.Clock as
	// Config.Clock); the zero value otherwise.
	NTP NTPStats

	// Datagrams and bytes on the wire.
	// DatagramSize is the largest datagram stream data goes in now, UDP
	// payload bytes: path MTU discovery's current size (RFC 8899's
	// PLPMTU), from 1200 up to Config.MaxDatagram; MaxDatagram itself
	// with DisablePathMTUDiscovery.
	DatagramSize int
	// PMTUProbesSent and PMTUProbesLost count the discovery's probe
	// packets (a lost probe is a size the path does not carry, not
	// congestion: it is not in PacketsLost); PMTUBlackHoles counts the
	// fallbacks to 1200 bytes after full-size packets stopped arriving.
	PMTUProbesSent, PMTUProbesLost, PMTUBlackHoles int64
	PacketsSent, PacketsReceived                   int64
	BytesSent, BytesReceived                       int64
	PacketsLost                                    int64 // declared lost by this sender
	Retransmitted                                  int64 // stream packets that carried resent bytes
	Duplicates                                     int64 // packets received twice
	Malformed                                      int64 // datagrams dropped as malformed
	// Packets dropped by packet protection: failed authentication
	// (forged, corrupted, or for keys no longer held), or replayed (an
	// authentic packet number seen before, or too old to tell).
	Unauthenticated, Replayed int64
	KeyUpdates                int64 // key phases this end started or followed (RFC 9001 §6)
	// StatelessResetsIgnored counts stateless resets that did not carry
	// the token the server gave this connection (forged, or from a
	// server with another key): dropped, the connection goes on.
	StatelessResetsIgnored int64
	// VersionNegotiationsIgnored counts VersionNegotiations a dialer did
	// not act on because the server answered otherwise (before or within
	// a second after them): forged, by someone on the path who saw the
	// Initial (RFC 9000 §6.2).
	VersionNegotiationsIgnored int64

	// Connection migration (a server's: its client's NAT rebound, or the
	// client moved, RFC 9000 §9). Migrations counts moves to a new
	// address that the address then validated (it echoed a
	// PathChallenge), and moves back to the previous address;
	// MigrationsReverted the validations that failed or were abandoned,
	// the connection back on its previous address; PathResets the moves
	// whose round trip showed a new path, after which the congestion
	// controller and RTT estimator started afresh (RFC 9000 §9.4; a NAT
	// rebinding keeps the path and its state).
	Migrations, MigrationsReverted, PathResets int64
	// MigrationsRefused counts datagrams (other than path probes) that
	// came from a penalised address, one that failed validation before
	// (or was left before it answered): dropped unread, they do not move
	// the connection, which follows that address again only once it
	// echoes a probe or its penalty expires (RFC 9000 §9.3.3; see the
	// package doc, "Connection migration"). Copies of the client's
	// packets raced from a victim's address count here once the first
	// validation failed; ListenerStats.WrongAddress does not count them.
	MigrationsRefused int64

	// Stream.
	StreamBytesAcked    int64 // sent and acknowledged
	StreamBytesReceived int64 // received, duplicates included
	// StreamFramesDropped counts Data frames dropped unacknowledged because
	// storing them would hold more than the receiver's limit of holes (the
	// sender resends them).
	StreamFramesDropped int64
	// OWDDiscarded counts the peer's one-way-delay samples on ACKs that
	// were impossible (below zero, above the packet's round trip, or below
	// the smallest so far, each beyond the clocks' uncertainty) and were
	// not given to the controller.
	OWDDiscarded int64
	// AckRatio is how many ack-eliciting packets per ACK this end last
	// asked the peer for (an ACK frequency request, sent only when the
	// return path holds a standing queue and only to a peer whose
	// Config.MinAckDelay consents): 0 if it never asked, 2 (AckEvery's
	// default) once it asked and stepped back. AckFrequencySent counts
	// the requests.
	AckRatio         int
	AckFrequencySent int64

	// Updates sent (source side).
	UpdatesSent       int64
	UpdatesSuperseded int64 // replaced by a fresher one before they could go
	UpdatesLost       int64 // never retransmitted
	// UpdatesAcked counts updates the monitor acknowledged (it received
	// them; it may still have dropped one as stale): a device that wakes
	// to send one reading can close once this counts it.
	UpdatesAcked int64
	UpdateRate   float64 // the update policy's current rate, updates/s

	// Updates received (monitor side).
	UpdatesReceived int64
	UpdatesStale    int64 // older than one already delivered: dropped
	// UpdatesRejected counts updates generated further in the future than
	// Config.MaxUpdateFuture: dropped, never delivered.
	UpdatesRejected int64
	Age             AgeStats

	// 0-RTT (Config.Allow0RTT). EarlyUpdatesSent (dialer) counts the
	// updates sent under the early keys, before the handshake completed;
	// EarlyRejected says the listener refused the early data (its update
	// went again after the handshake). EarlyUpdatesReceived (listener)
	// counts the early updates delivered; EarlyDropped the packets under
	// the early keys it did not take: any frame but an update (stream
	// data is never taken early), or early data it had not accepted.
	EarlyUpdatesSent, EarlyUpdatesReceived int64
	EarlyDropped                           int64
	EarlyRejected                          bool
}

// AgeStats is the age of information at this end (monitor side): the
// time-average age since the first update, its 95th percentile and the
// largest age so far (the highest tooth of the sawtooth, or the current
// age if no update came for longer than that). All zero before the first
// update.
type AgeStats struct {
	Mean, P95, Peak time.Duration
}

// NTPStats is the state of the endpoint's NTP-corrected clock (Stats.NTP).
type NTPStats struct {
	Enabled bool          // the endpoint's clock is NTP-corrected
	Synced  bool          // a valid sync recently
	Offset  time.Duration // last measured server − local offset
	Stratum uint8         // the server's stratum (1: a reference clock)
	Server  string        // the server that answered
	Err     error         // the last query's error, nil after a success
}

// statsFrom is the transport's view of a session snapshot. Each field is
// named once here; a test fails if the session gains one this misses.
func statsFrom(s session.Stats) Stats {
	return Stats{
		CC: s.CC, Window: s.Window, PacingRate: s.PacingRate, InSlowStart: s.InSlowStart, Mode: s.Mode,
		SRTT: s.SRTT, MinRTT: s.MinRTT, RTTVar: s.RTTVar, MinOWD: s.MinOWD, CurOWD: s.CurOWD, Signal: s.Signal,
		ClockOffset: s.ClockOffset, ClockSynced: s.ClockSynced, PeerClockSynced: s.PeerClockSynced, PathDead: s.PathDead,
		DatagramSize: s.DatagramSize, PMTUProbesSent: s.PMTUProbesSent, PMTUProbesLost: s.PMTUProbesLost, PMTUBlackHoles: s.PMTUBlackHoles,
		PacketsSent: s.PacketsSent, PacketsReceived: s.PacketsReceived, BytesSent: s.BytesSent, BytesReceived: s.BytesReceived,
		PacketsLost: s.PacketsLost, Retransmitted: s.Retransmitted, Duplicates: s.Duplicates, Malformed: s.Malformed,
		Unauthenticated: s.Unauthenticated, Replayed: s.Replayed, KeyUpdates: s.KeyUpdates,
		StatelessResetsIgnored: s.StatelessResetsIgnored, VersionNegotiationsIgnored: s.VersionNegotiationsIgnored,
		Migrations: s.Migrations, MigrationsReverted: s.MigrationsReverted, PathResets: s.PathResets,
		MigrationsRefused: s.MigrationsRefused,
		StreamBytesAcked:  s.StreamBytesAcked, StreamBytesReceived: s.StreamBytesReceived,
		StreamFramesDropped: s.StreamFramesDropped, OWDDiscarded: s.OWDDiscarded,
		AckRatio: s.AckRatio, AckFrequencySent: s.AckFrequencySent,
		UpdatesSent: s.UpdatesSent, UpdatesSuperseded: s.UpdatesSuperseded, UpdatesLost: s.UpdatesLost, UpdatesAcked: s.UpdatesAcked, UpdateRate: s.UpdateRate,
		UpdatesReceived: s.UpdatesReceived, UpdatesStale: s.UpdatesStale, UpdatesRejected: s.UpdatesRejected,
		Age:              AgeStats(s.Age),
		EarlyUpdatesSent: s.EarlyUpdatesSent, EarlyUpdatesReceived: s.EarlyUpdatesReceived,
		EarlyDropped: s.EarlyDropped, EarlyRejected: s.EarlyRejected,
	}
}

// String is a one-line summary: the controller and its state, the wire
// counters, then the updates each way; sections that are all zero (no
// updates received, no NTP) are left out.
func (s Stats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s window %d B pacing %.2f Mbit/s srtt %v min-rtt %v", s.CC, s.Mode, s.Window,
		float64(s.PacingRate)/1e6, s.SRTT.Round(10*time.Microsecond), s.MinRTT.Round(10*time.Microsecond))
	if s.MinOWD > 0 {
		fmt.Fprintf(&b, " owd %v/%v (%s)", s.MinOWD.Round(10*time.Microsecond), s.CurOWD.Round(10*time.Microsecond), s.Signal)
	}
	if s.PathDead {
		b.WriteString(" PATH DEAD")
	}
	if s.DatagramSize > 0 {
		fmt.Fprintf(&b, "; datagram %d B", s.DatagramSize)
	}
	fmt.Fprintf(&b, "; sent %d pkts %d B, received %d pkts %d B, lost %d, retransmitted %d",
		s.PacketsSent, s.BytesSent, s.PacketsReceived, s.BytesReceived, s.PacketsLost, s.Retransmitted)
	if dropped := s.Duplicates + s.Malformed + s.Unauthenticated + s.Replayed; dropped > 0 {
		fmt.Fprintf(&b, ", dropped %d (dup %d, malformed %d, unauthenticated %d, replayed %d)",
			dropped, s.Duplicates, s.Malformed, s.Unauthenticated, s.Replayed)
	}
	if s.Migrations+s.MigrationsReverted+s.MigrationsRefused > 0 {
		fmt.Fprintf(&b, "; migrations %d (reverted %d, refused %d, path resets %d)", s.Migrations, s.MigrationsReverted, s.MigrationsRefused, s.PathResets)
	}
	if s.UpdatesSent > 0 {
		fmt.Fprintf(&b, "; updates sent %d (acked %d, superseded %d, lost %d) at %.1f/s", s.UpdatesSent, s.UpdatesAcked, s.UpdatesSuperseded, s.UpdatesLost, s.UpdateRate)
	}
	if s.UpdatesReceived > 0 {
		fmt.Fprintf(&b, "; updates received %d (stale %d, rejected %d), age %v", s.UpdatesReceived, s.UpdatesStale, s.UpdatesRejected, s.Age)
	}
	if s.EarlyUpdatesSent+s.EarlyUpdatesReceived+s.EarlyDropped > 0 || s.EarlyRejected {
		fmt.Fprintf(&b, "; 0-RTT updates sent %d, received %d, dropped %d", s.EarlyUpdatesSent, s.EarlyUpdatesReceived, s.EarlyDropped)
		if s.EarlyRejected {
			b.WriteString(", refused by the peer")
		}
	}
	if s.NTP.Enabled {
		fmt.Fprintf(&b, "; %v", s.NTP)
	}
	return b.String()
}

// String is "mean 5.1ms p95 9.6ms peak 11.6ms".
func (a AgeStats) String() string {
	r := func(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
	return fmt.Sprintf("mean %v p95 %v peak %v", r(a.Mean), r(a.P95), r(a.Peak))
}

// String is "ntp off", "ntp synced to SERVER (stratum N), offset D" or
// "ntp not synced: ERR".
func (n NTPStats) String() string {
	switch {
	case !n.Enabled:
		return "ntp off"
	case n.Synced:
		return fmt.Sprintf("ntp synced to %s (stratum %d), offset %v", n.Server, n.Stratum, n.Offset.Round(time.Microsecond))
	case n.Err != nil:
		return fmt.Sprintf("ntp not synced: %v", n.Err)
	default:
		return "ntp not synced yet"
	}
}
