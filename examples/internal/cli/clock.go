package cli

import (
	"fmt"
	"time"

	"github.com/fresh-udp/fresh/transport"
)

// ClockState says in a few words how far a sender's clocks can be trusted:
// this host's NTP state (when Config.NTPServer is set) and whether the
// one-way delays its controller gets back are measured yet. The receiver
// corrects each sample with its in-band estimate of the clock offset
// (clock.Inband) and says on every ACK whether it trusts that estimate
// (Stats.PeerClockSynced); until it does (a few seconds of packets) a
// delay-based controller acts on half the round-trip time instead.
func ClockState(s transport.Stats) string {
	out := ""
	if s.NTP.Enabled {
		switch {
		case s.NTP.Synced:
			out = fmt.Sprintf("ntp synced (offset %v, stratum %d); ", s.NTP.Offset.Round(100*time.Microsecond), s.NTP.Stratum)
		case s.NTP.Err != nil:
			out = fmt.Sprintf("ntp NOT synced (%v); ", s.NTP.Err)
		default:
			out = "ntp NOT synced; "
		}
	}
	switch {
	case s.PeerClockSynced:
		return out + "one-way delays measured (the peer trusts its clock-offset estimate)"
	case s.SRTT == 0:
		return out + "no delay samples yet"
	case s.CC == "owd":
		return out + "one-way delays not measured yet (the peer is still learning the clock offset): RTT/2 stands in"
	}
	return out + "one-way delays not measured yet (the peer is still learning the clock offset)"
}
