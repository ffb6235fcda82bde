package cli

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/clock/ntpclock"
	"github.com/fresh-udp/fresh/transport"
)

func TestClockState(t *testing.T) {
	owd := transport.Stats{CC: "owd", Signal: cc.SignalOWD, MinOWD: 20 * time.Millisecond}
	rtt := transport.Stats{CC: "owd", Signal: cc.SignalRTT, MinOWD: 20 * time.Millisecond}
	require.Contains(t, ClockState(owd, nil), "one-way delays measured")
	require.Contains(t, ClockState(rtt, nil), "RTT/2 stands in")
	require.Contains(t, ClockState(transport.Stats{CC: "cubic"}, nil), "no delay samples yet")
	require.Contains(t, ClockState(transport.Stats{CC: "owd", MinOWD: time.Millisecond}, nil), "no delay samples yet")
	require.Contains(t, ClockState(transport.Stats{CC: "cubic", MinOWD: time.Millisecond}, nil), "one-way delays measured")
	require.NotContains(t, ClockState(owd, nil), "ntp")

	nc, err := ntpclock.New(clock.NewManual(time.Unix(1e9, 0)), ntpclock.Config{Server: "ntp.test"})
	require.NoError(t, err)
	require.Contains(t, ClockState(owd, nc), "ntp NOT synced; ")
	nc.ObserveError(errors.New("i/o timeout"))
	require.Contains(t, ClockState(owd, nc), "ntp NOT synced (i/o timeout); ")
	nc.Observe(ntpclock.Sample{Offset: 3 * time.Millisecond, RTT: time.Millisecond, Stratum: 2, Server: "ntp.test:123"})
	require.Contains(t, ClockState(owd, nc), "ntp synced (offset 3ms, stratum 2); one-way delays measured")
}
