package main

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/emu"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/examples/internal/testcerts"
)

// TestSameScriptThroughTUN runs bulk and iperf3, each as a client in one
// network namespace and a server in the other, over the same emulated
// path (the TUN router: 20 Mbit/s, 20 ms RTT), and reads both tools' JSON
// with the one readSummary. Root, /dev/net/tun and iperf3 are needed; the
// test skips with the reason otherwise.
func TestSameScriptThroughTUN(t *testing.T) {
	iperf3, err := exec.LookPath("iperf3")
	if err != nil {
		t.Skip("iperf3 not installed")
	}
	path := scenario.Path{Rate: scenario.Rate(20e6), Delay: scenario.Duration(10 * time.Millisecond), Queue: scenario.Queue{Limit: 100}}
	tun, err := emu.NewTUN(emu.TUNConfig{Forward: path, Reverse: path, Seed: 1})
	if errors.Is(err, emu.ErrNoTUN) {
		t.Skip(err)
	}
	require.NoError(t, err)
	defer tun.Close()

	// The build (without -race, so that bulk and iperf3 compare as the
	// commands run) compiles the library anew on a cold cache: it gets
	// what is left of go test's -timeout, less a minute and a half for
	// the run, and says so if that runs out.
	bin := filepath.Join(t.TempDir(), "bulk")
	buildTimeout := 5 * time.Minute
	if dl, ok := t.Deadline(); ok {
		buildTimeout = time.Until(dl) - 90*time.Second
	}
	bctx, bcancel := context.WithTimeout(context.Background(), buildTimeout)
	defer bcancel()
	start := time.Now()
	out, err := exec.CommandContext(bctx, "go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, bctx.Err(), "go build -o %s ./examples/bulk: the build timed out after %v: give go test a longer -timeout", bin, time.Since(start).Round(time.Second))
	require.NoError(t, err, "go build -o %s ./examples/bulk failed after %v:\n%s", bin, time.Since(start).Round(time.Second), out)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A child started in a namespace dies with the test (Pdeathsig), and
	// runs entirely in that namespace.
	command := func(name string, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		return cmd
	}
	srvAddr := tun.ServerAddr().String()
	// bulk runs with mutual TLS, as by default; its certificate is for
	// localhost, so the client names it (--server-name) while dialling the
	// namespace's address.
	certs := testcerts.Write(t, "tun-client")
	servers := []*exec.Cmd{
		command(bin, append([]string{"-s", "-1", "-p", "5301"}, certs.ServerArgs("--")...)...),
		command(iperf3, "-s", "-1", "-B", srvAddr, "-p", "5201"),
	}
	for _, s := range servers {
		require.NoError(t, tun.InServer(s.Start))
		defer func() { _ = s.Wait() }()
	}
	defer cancel()

	// client runs a client in the client namespace until its JSON has no
	// "refused" error (a server may still be starting).
	client := func(name string, args ...string) []byte {
		var last []byte
		for range 50 {
			var b []byte
			require.NoError(t, tun.InClient(func() error {
				b, _ = command(name, args...).Output()
				return nil
			}))
			if !strings.Contains(string(b), "refused") && len(b) > 0 {
				return b
			}
			last = b
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("%s: no result; last output: %s", name, last)
		return nil
	}
	outputs := map[string][]byte{
		"bulk": client(bin, append([]string{"-c", srvAddr, "-p", "5301", "-t", "2", "-J", "--server-name", "localhost"},
			certs.ClientArgs("--")...)...),
		"iperf3": client(iperf3, "-c", srvAddr, "-p", "5201", "-t", "2", "-J"),
	}
	got := map[string]summary{}
	for name, b := range outputs {
		s, err := readSummary(b)
		require.NoError(t, err, "%s: %s", name, b)
		require.Equal(t, 2.0, s.Duration, name)
		require.Positive(t, s.FirstIntervalBytes, name)
		require.Less(t, s.ReceivedBitsPerSecond, 20e6, "%s: no more than the emulated link", name)
		got[name] = s
	}
	// The same path: both tools move data at a rate of the same order
	// (each ramps up over a 20 ms RTT within the 2 s).
	require.Greater(t, got["bulk"].ReceivedBitsPerSecond, 0.3*got["iperf3"].ReceivedBitsPerSecond)
	require.Greater(t, got["iperf3"].ReceivedBitsPerSecond, 0.3*got["bulk"].ReceivedBitsPerSecond)
	t.Logf("through the TUN router: bulk %.2f Mbit/s, iperf3 %.2f Mbit/s",
		got["bulk"].ReceivedBitsPerSecond/1e6, got["iperf3"].ReceivedBitsPerSecond/1e6)
}
