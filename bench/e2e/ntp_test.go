package e2e_test

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/ntptest"
	"github.com/fresh-udp/fresh/transport"
)

// With Config.NTPServer both ends correct their wall clocks against a real
// NTP server (chronyd on loopback); with TrustPeerClock the one-way delays
// come straight from the corrected stamps. The client's clock is 3 s off:
// without NTP its OWD samples would be 3 s wrong and the controller would
// fall back to RTT/2.
func TestNTPCorrectedClocksGiveTrueOWD(t *testing.T) {
	addr := ntptest.StartChronyd(t, true)
	const delay = 15 * time.Millisecond
	srvCfg := transport.Config{NTPServer: addr, TrustPeerClock: true}
	cliCfg := transport.Config{NTPServer: addr, TrustPeerClock: true,
		Clock: offsetClock{clock.NewSystem(), 3 * time.Second}}
	cli, srv := overRelay(t, path(100e6, delay, 0, 1000), path(100e6, delay, 0, 1000), srvCfg, cliCfg)
	go io.Copy(io.Discard, srv)
	chunk := make([]byte, 4096)
	for range 200 {
		_, err := cli.Write(chunk)
		require.NoError(t, err)
		// A paced source (6.5 Mbit/s on a 100 Mbit/s path): the queue
		// stays empty, so the least OWD seen is the path's delay.
		time.Sleep(5 * time.Millisecond)
	}
	// NTP runs on its own schedule: wait for the sync, not a fixed time.
	require.Eventually(t, func() bool { st := cli.Stats(); return st.NTP.Synced && st.MinOWD > 0 }, 10*time.Second, 10*time.Millisecond,
		"the client's clock synchronised")
	st := cli.Stats()
	require.True(t, st.NTP.Enabled && st.NTP.Synced, "Stats.NTP shows the synchronised clock: %+v", st.NTP)
	require.NotZero(t, st.NTP.Stratum)
	require.Equal(t, "owd", st.Signal.String(), "NTP-corrected stamps are trusted")
	require.InDelta(t, float64(delay), float64(st.MinOWD), float64(3*time.Millisecond), "OWDmin %v", st.MinOWD)
}
