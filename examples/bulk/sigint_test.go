//go:build unix

package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/fresh-udp/fresh/examples/internal/syncbuf"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/examples/internal/testcerts"
)

// The real binary, sent SIGINT in the middle of a test as Ctrl-C does:
// its summary on stdout, iperf3's message on stderr, exit status 1. This
// is what cli.Main's signal handling adds to
// TestClientInterruptPrintsSummary.
func TestClientBinarySIGINT(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "bulk")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))

	files := testcerts.Write(t, "bulk-client")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	port, _, srvDone := startServer(t, ctx, files, "-1")

	stdout, stderr := &syncbuf.Buffer{}, &syncbuf.Buffer{}
	cmd := exec.CommandContext(ctx, bin, append([]string{"-c", "127.0.0.1", "-p", port, "-t", "30", "-i", "0.2", "-b", "5M"}, files.ClientArgs("--")...)...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	require.NoError(t, cmd.Start())
	require.Eventually(t, func() bool { return containsAll(stdout.String(), "0.20-0.40") }, 20*time.Second, 10*time.Millisecond,
		"stdout: %s\nstderr: %s", stdout, stderr)
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	err = cmd.Wait()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "%v", err)
	require.Equal(t, 1, exit.ExitCode(), "stderr: %s", stderr)
	require.False(t, exit.Sys().(syscall.WaitStatus).Signaled(), "it exited, not killed by the signal")
	require.Contains(t, stdout.String(), "- - - - - - - - -")
	require.Regexp(t, `sender\n`, stdout.String())
	require.Equal(t, "bulk: interrupt - the client has terminated\n", stderr.String())
	require.ErrorContains(t, <-srvDone, "interrupt - the client has terminated")
}
