package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMain lets the test binary be the device's child process, as the
// command's binary is (run execs os.Executable).
func TestMain(m *testing.M) {
	if p := os.Getenv(childEnv); p != "" {
		if err := runDevice(p); err != nil {
			fmt.Fprintf(os.Stderr, "device %s: %v\n", p, err)
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}

// Every peer runs as its own process, its monitor counts what arrived,
// and the device's context switches and CPU time are read: a smoke run
// at 20 readings a second for 1 s (costs depend on the machine; only
// that they were measured is checked).
func TestDeviceCost(t *testing.T) {
	peers := peerNames()
	if _, err := exec.LookPath("mosquitto"); err != nil {
		t.Logf("no mosquitto: the mqtt peers must say why they did not run")
	}
	o := options{hz: 20, duration: time.Second, warm: 300 * time.Millisecond, runs: 1, peers: peers, mosquitto: "mosquitto"}
	out, err := os.CreateTemp(t.TempDir(), "out")
	require.NoError(t, err)
	require.NoError(t, run(t.Context(), o, out))
	b, err := os.ReadFile(out.Name())
	require.NoError(t, err)
	t.Logf("\n%s", b)
	rows := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Split(line, "|"); len(f) > 2 {
			rows[strings.TrimSpace(f[1])] = line
		}
	}
	for _, p := range peers {
		require.Contains(t, rows, p, "a row per peer")
		if _, err := exec.LookPath("mosquitto"); err != nil && strings.HasPrefix(p, "mqtt") {
			require.Contains(t, rows[p], "not run: no mosquitto")
			continue
		}
		require.NotContains(t, rows[p], "not run", p)
		require.NotContains(t, rows[p], "**0.0**", "%s: a process that sends wakes up", p)
	}
}

// A device whose monitor hears nothing fails the run rather than look
// cheap.
func TestDeviceCostSilentDevice(t *testing.T) {
	o := options{hz: 20, duration: time.Second, warm: 200 * time.Millisecond, runs: 1, peers: []string{"udp"}, mosquitto: "mosquitto"}
	ctx := t.Context()
	m, err := startMonitors(ctx, o)
	require.NoError(t, err)
	defer m.close()
	// The device sends, but to a socket that is not the monitor's.
	elsewhere, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer elsewhere.Close()
	m.addr["udp"] = elsewhere.LocalAddr().String()
	self, err := os.Executable()
	require.NoError(t, err)
	_, err = measure(ctx, self, m, "udp", o)
	require.ErrorContains(t, err, "not doing its job")
}

func TestFlags(t *testing.T) {
	for _, args := range [][]string{{"-hz", "0"}, {"-duration", "10ms"}, {"-runs", "0"}, {"-peers", "udp,nope"}, {"extra"}} {
		_, err := parseFlags(args)
		require.Error(t, err, "%v", args)
	}
	o, err := parseFlags([]string{"-peers", "udp,fresh", "-hz", "2"})
	require.NoError(t, err)
	require.Equal(t, []string{"udp", "fresh"}, o.peers)
}
