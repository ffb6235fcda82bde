// Package ntptest starts a real NTP server (Debian's chronyd) on a loopback
// port for tests: package ntpclock (the NTP client) and the endpoints' NTP
// option are tested against it, not against a mock of the NTP library.
package ntptest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock/ntpclock"
)

// StartChronyd starts a chronyd serving NTP on a spare 127.0.0.1 UDP port
// and returns "127.0.0.1:port" once it answers. local=true configures
// "local stratum 8" (a valid, synchronized server); local=false leaves it
// unsynchronized (it then answers stratum 0, leap 3). chronyd runs with -x,
// so it never touches the system clock. Outside CI a missing chronyd skips
// the test; with CI=true it fails it.
func StartChronyd(t testing.TB, local bool) string {
	t.Helper()
	bin, err := exec.LookPath("chronyd")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/chronyd"); serr == nil {
			bin, err = "/usr/sbin/chronyd", nil
		}
	}
	if err != nil {
		msg := "chronyd not found (Debian: apt-get install -y chrony); the NTP tests need a real NTP server"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}

	// A spare port: bind, read it, release it for chronyd.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	port := pc.LocalAddr().(*net.UDPAddr).Port
	require.NoError(t, pc.Close())

	dir := t.TempDir()
	conf := fmt.Sprintf(`# fresh clock test: an NTP server on loopback only
port %d
bindaddress 127.0.0.1
allow 127.0.0.1
cmdport 0
bindcmdaddress /
pidfile %s
driftfile %s
`, port, filepath.Join(dir, "chronyd.pid"), filepath.Join(dir, "chronyd.drift"))
	if local {
		conf += "local stratum 8\n"
	}
	confPath := filepath.Join(dir, "chrony.conf")
	require.NoError(t, os.WriteFile(confPath, []byte(conf), 0o644))

	// -x: never adjust the system clock; -d: foreground, log to stderr;
	// -f: our config. As root, "-u root" keeps chronyd from dropping to the
	// _chrony user (which cannot write into the test's private temp dir);
	// otherwise -U lets it start unprivileged (it needs no privilege here).
	args := []string{"-x", "-d", "-f", confPath}
	if os.Geteuid() == 0 {
		args = append(args, "-u", "root")
	} else {
		args = append(args, "-U")
	}
	logPath := filepath.Join(dir, "chronyd.log")
	logf, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		_ = logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("chronyd log:\n%s", b)
		}
	})

	// Wait until it answers (valid or not): retry for a few seconds.
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(5 * time.Second)
	for {
		select {
		case err := <-exited:
			exited <- err
			b, _ := os.ReadFile(logPath)
			t.Fatalf("chronyd exited early (%v):\n%s", err, b)
		default:
		}
		_, err := ntpclock.Query(context.Background(), ntpclock.Config{Server: addr, Timeout: 200 * time.Millisecond}, nil)
		if err == nil || errors.Is(err, ntpclock.ErrInvalidResponse) {
			return addr
		}
		require.True(t, time.Now().Before(deadline), "chronyd on %s did not answer: %v", addr, err)
		time.Sleep(20 * time.Millisecond)
	}
}
