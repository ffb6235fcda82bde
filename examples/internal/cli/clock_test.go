package cli

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/transport"
)

func TestClockState(t *testing.T) {
	measured := transport.Stats{CC: "owd", SRTT: 40 * time.Millisecond, PeerClockSynced: true}
	learning := transport.Stats{CC: "owd", SRTT: 40 * time.Millisecond}
	require.Contains(t, ClockState(measured), "one-way delays measured")
	require.Contains(t, ClockState(learning), "RTT/2 stands in")
	require.NotContains(t, ClockState(transport.Stats{CC: "cubic", SRTT: time.Millisecond}), "RTT/2")
	require.Contains(t, ClockState(transport.Stats{CC: "cubic"}), "no delay samples yet")
	require.NotContains(t, ClockState(measured), "ntp")

	ntp := measured
	ntp.NTP = transport.NTPStats{Enabled: true}
	require.Contains(t, ClockState(ntp), "ntp NOT synced; ")
	ntp.NTP.Err = errors.New("i/o timeout")
	require.Contains(t, ClockState(ntp), "ntp NOT synced (i/o timeout); ")
	ntp.NTP = transport.NTPStats{Enabled: true, Synced: true, Offset: 3 * time.Millisecond, Stratum: 2}
	require.Contains(t, ClockState(ntp), "ntp synced (offset 3ms, stratum 2); one-way delays measured")
}
