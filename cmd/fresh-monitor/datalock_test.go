//go:build linux

package main

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// runProc runs fresh-monitor with args to its end (at most 30 s) and
// returns its exit code and output.
func runProc(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), asMonitorEnv+"=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, ctx.Err(), "fresh-monitor %v did not end within 30 s:\n%s", args, out)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	}
	require.NoError(t, err)
	return 0, string(out)
}

// A second monitor on the -data of a running one refuses to start (exit
// 1), before it writes anything there, naming the holder's PID and NATS
// address and the flags that fix it. Once the holder is killed (SIGKILL:
// no clean-up of its own), the kernel has released the lock and a monitor
// starts on the same -data, although the lock file still names the dead
// process.
func TestSecondMonitorOnSameDataRefused(t *testing.T) {
	data := t.TempDir()
	args := []string{"-listen", "127.0.0.1:0", "-nats-listen", "127.0.0.1:0", "-metrics", "off", "-data", data}
	a := startProc(t, args...)
	pid := strconv.Itoa(a.cmd.Process.Pid)
	ca, err := os.ReadFile(filepath.Join(data, "dev-ca.pem"))
	require.NoError(t, err)

	code, out := runProc(t, args...)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "fresh-monitor: -data "+data+" is in use by fresh-monitor (pid "+pid+")")
	require.Contains(t, out, "give this monitor its own -data DIR")
	require.Contains(t, out, "-nats "+a.natsTo, "where to share the store instead")
	require.Contains(t, out, "or stop "+pid)
	require.NotContains(t, out, "listening on")
	after, err := os.ReadFile(filepath.Join(data, "dev-ca.pem"))
	require.NoError(t, err)
	require.Equal(t, ca, after, "the refused monitor wrote its throwaway CA over the running one's")

	// A monitor that only stores into another's JetStream (-nats) with
	// credentials of its own writes nothing into -data: not refused.
	b := startProc(t, "-listen", "127.0.0.1:0", "-nats", a.natsTo, "-metrics", "127.0.0.1:0", "-data", data, "-insecure")
	require.Eventually(t, func() bool { return get(t, b.metrics+"/readyz") == http.StatusOK }, 30*time.Second, 10*time.Millisecond)
	b.stop(t)

	require.NoError(t, a.cmd.Process.Kill())
	_ = a.cmd.Wait()
	lockFile, err := os.ReadFile(filepath.Join(data, lockFileName))
	require.NoError(t, err)
	require.Regexp(t, regexp.MustCompile(`(?m)^pid `+pid+`$`), string(lockFile), "the dead holder's PID stays in the file")
	c := startProc(t, "-listen", "127.0.0.1:0", "-nats-listen", "127.0.0.1:0", "-metrics", "127.0.0.1:0", "-data", data)
	require.Eventually(t, func() bool { return get(t, c.metrics+"/readyz") == http.StatusOK }, 30*time.Second, 10*time.Millisecond)
	c.stop(t)
}
