package transport

import "github.com/fresh-udp/fresh/internal/session"

// Stats is a snapshot of one connection (Conn.Stats): the stream's
// congestion control (controller, window, pacing rate, RTT, one-way
// delays and which delay signal is in use), the clock-offset estimate,
// datagram and byte counters, and the update counters and age of
// information on each side. Counters count since the connection began;
// each field's unit is in its name or comment.
type Stats = session.Stats

// AgeStats is the age of information at this end (monitor side): the
// time-average age since the first update, its 95th percentile and the
// largest age so far.
type AgeStats = session.AgeStats

// NTPStats is the state of the endpoint's NTP-corrected clock (Stats.NTP):
// whether it has one, whether it is synchronised, the last offset
// measured, the server and its stratum, and the last query's error.
type NTPStats = session.NTPStats
