package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/examples/internal/cli"
	"github.com/fresh-udp/fresh/examples/internal/syncbuf"
	"github.com/fresh-udp/fresh/examples/internal/testcerts"
	"github.com/fresh-udp/fresh/transport"
)

// helperEnv makes this test binary a process of TestHelperProcess's:
// "monitor CERT KEY CA" a monitor that stores nothing and commits what it
// reads, "agent ARGS…" the agent's main. Fields are separated by US (0x1f).
const helperEnv = "FRESH_AGENT_TEST_HELPER"

// TestHelperProcess is a monitor or an agent process for the tests that
// kill one (see helperEnv); it does nothing in a normal test run.
func TestHelperProcess(t *testing.T) {
	spec := os.Getenv(helperEnv)
	if spec == "" {
		t.Skip("a helper process of the tests that kill one")
	}
	args := strings.Split(spec, "\x1f")
	switch args[0] {
	case "agent":
		os.Args = append([]string{"agent"}, args[1:]...)
		cli.Main("agent", run) // exits 1 or 2 on an error, as the command does
	case "monitor":
		helperMonitor(args[1], args[2], args[3])
	}
}

// helperMonitor listens on loopback, prints "listening ADDR", and reads
// and commits every agent's upload until it is killed.
func helperMonitor(cert, key, ca string) {
	creds := cli.Credentials{Cert: cert, Key: key, CA: ca}
	cfg, err := creds.ServerTLS()
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	ln, err := transport.Listen("127.0.0.1:0", transport.Config{TLS: cfg})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("listening", ln.Addr())
	for {
		conn, err := ln.Accept(context.Background())
		if err != nil {
			os.Exit(1)
		}
		go func() {
			buf := make([]byte, 256<<10)
			var n int64
			for {
				k, err := conn.Read(buf)
				n += int64(k)
				if err != nil || conn.Commit(n) != nil {
					return
				}
			}
		}()
	}
}

// helper starts this test binary as a helper process of role with args;
// its stdout is returned as lines.
func helper(t *testing.T, ctx context.Context, role string, args ...string) (*exec.Cmd, <-chan string, *syncbuf.Buffer) {
	t.Helper()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+strings.Join(append([]string{role}, args...), "\x1f"))
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	lines := make(chan string, 1000)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return cmd, lines, &stderr
}

// waitLine returns the first line with prefix, failing the test if the
// process ends or ctx expires first; out collects every line read.
func waitLine(t *testing.T, ctx context.Context, lines <-chan string, prefix string, out *strings.Builder) string {
	t.Helper()
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the process ended before printing %q:\n%s", prefix, out)
			}
			out.WriteString(l + "\n")
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-ctx.Done():
			t.Fatalf("no %q line:\n%s", prefix, out)
		}
	}
}

// A monitor killed mid-upload (SIGKILL: no CLOSE, its socket gone) is
// what the agent, a real process, says went away: once four
// retransmission timeouts brought no answer and the monitor's host
// reported its port closed, it exits 1 at once, not at -duration nor at
// its idle timeout, naming the monitor's address, what happened and what
// to check — not "path dead" forever, nor "raise -duration".
func TestAgentSaysKilledMonitorWentAway(t *testing.T) {
	t.Parallel() // mostly waiting for timeouts: side by side
	// -duration 60s and the idle timeout (30 s) are far beyond the
	// deadline: an agent that waits for either fails the test by it.
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	files := testcerts.Write(t, "agent-1")
	mon, monLines, _ := helper(t, ctx, "monitor", files.ServerCert, files.ServerKey, files.CA)
	defer func() { _ = mon.Process.Kill(); _ = mon.Wait() }()
	var monOut strings.Builder
	addr := strings.TrimPrefix(waitLine(t, ctx, monLines, "listening ", &monOut), "listening ")

	agent, agentLines, stderr := helper(t, ctx, "agent", agentArgs(files, addr, "-upload-bytes", "100GB", "-duration", "60s", "-stats", "100ms")...)
	var out strings.Builder
	waitLine(t, ctx, agentLines, "agent: connected", &out)
	// The upload runs: the monitor acknowledges some of it.
	for acked := false; !acked; {
		l := waitLine(t, ctx, agentLines, " ", &out)
		acked = strings.Contains(l, " MB acked") && !strings.Contains(l, "   0.00 MB acked")
	}
	require.NoError(t, mon.Process.Signal(syscall.SIGKILL))
	_ = mon.Wait()
	killed := time.Now()
	for l := range agentLines {
		out.WriteString(l + "\n")
	}
	err := agent.Wait()
	t.Logf("the agent exited %v after the monitor was killed", time.Since(killed).Round(100*time.Millisecond))
	require.NoError(t, ctx.Err(), "the agent outlived the test's deadline:\n%s", out.String())
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the agent must fail:\n%s", out.String())
	require.Equal(t, 1, exit.ExitCode(), "stderr: %s", stderr.String())

	msg := stderr.String()
	for _, want := range []string{
		"agent: monitor went away: ",
		"brought no answer from " + addr,
		"nothing listens on that port (ICMP port unreachable): the monitor is not running",
		"check that the monitor at -server " + addr + " is running",
		"upload incomplete: ",
	} {
		require.Contains(t, msg, want)
	}
	require.NotContains(t, msg, "-duration", "it is not -duration that ended it")
	require.NotContains(t, msg, "idle timeout")
	require.Contains(t, out.String(), "agent: path dead")
	require.Contains(t, out.String(), "agent: monitor went away: ")
	require.NotContains(t, out.String(), "the monitor is told it is aborted", "there is no monitor to tell")
}

// silentConn is a monitor's socket that can go silent: from then on it
// reads nothing and sends nothing, as a frozen or cut-off monitor, and the
// kernel sends no ICMP error since the port stays open.
type silentConn struct {
	*net.UDPConn
	silent atomic.Bool
}

func (c *silentConn) ReadFrom(p []byte) (int, net.Addr, error) {
	for {
		n, addr, err := c.UDPConn.ReadFrom(p)
		if err != nil || !c.silent.Load() {
			return n, addr, err
		}
	}
}

func (c *silentConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	if c.silent.Load() {
		return len(p), nil
	}
	return c.UDPConn.WriteTo(p, addr)
}

// silentMonitor is a monitor on loopback that goes silent (silentConn)
// once the agent's first update arrived; it returns the agent's files and
// the monitor's address.
func silentMonitor(t *testing.T, ctx context.Context) (testcerts.Files, string) {
	t.Helper()
	files := testcerts.Write(t, "agent-1")
	creds := cli.Credentials{Cert: files.ServerCert, Key: files.ServerKey, CA: files.CA}
	cfg, err := creds.ServerTLS()
	require.NoError(t, err)
	udp, err := transport.ListenUDP("127.0.0.1:0", false)
	require.NoError(t, err)
	sock := &silentConn{UDPConn: udp}
	tr := &transport.Transport{Conn: sock}
	t.Cleanup(func() { tr.Close(); udp.Close() })
	ln, err := tr.Listen(transport.Config{TLS: cfg})
	require.NoError(t, err)
	go func() {
		conn, err := ln.Accept(ctx)
		if err != nil {
			return
		}
		_, _ = conn.ReadUpdate(ctx) // the agent is up and sending
		sock.silent.Store(true)
	}()
	return files, udp.LocalAddr().String()
}

// A monitor that stops answering while its host stays silent too (frozen,
// or the network cut: no ICMP error) is given -give-up after the path
// went dead; then the agent exits with the error that says the monitor
// went away, -give-up and what to check.
func TestAgentGivesUpOnSilentMonitor(t *testing.T) {
	t.Parallel() // mostly waiting for timeouts: side by side
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	files, addr := silentMonitor(t, ctx)
	var out syncbuf.Buffer
	err := run(ctx, agentArgs(files, addr, "-duration", "60s", "-give-up", "1s", "-stats", "200ms"), &out)
	require.NoError(t, ctx.Err(), "the agent outlived the test's deadline:\n%s", out.String())
	require.ErrorContains(t, err, "monitor went away: no answer from "+addr+": the path went dead", out.String())
	require.ErrorContains(t, err, "-give-up 1s): the monitor stopped, or the network between is down; check that the monitor at -server "+addr+" is running")
	require.NotContains(t, err.Error(), "ICMP", "its host said nothing")
	require.False(t, errors.As(err, new(*cli.UsageError)), "exit 1, not 2")
	require.Contains(t, out.String(), "agent: path dead")
	require.Contains(t, out.String(), "| PATH DEAD", "the status line says it too")
	require.Less(t, strings.Index(out.String(), "agent: path dead"), strings.Index(out.String(), "agent: monitor went away"))
}

// -duration running out while the monitor does not answer (before
// -give-up) says that, not "raise -duration".
func TestAgentStoppedWhileMonitorSilent(t *testing.T) {
	t.Parallel() // mostly waiting for timeouts: side by side
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	files, addr := silentMonitor(t, ctx)
	var out syncbuf.Buffer
	// Path dead takes four timeouts (about 3 s here); -duration 10s ends
	// the run well after that and long before -give-up.
	err := run(ctx, agentArgs(files, addr, "-upload-bytes", "10GB", "-duration", "10s", "-give-up", "5m", "-stats", "0"), &out)
	require.NoError(t, ctx.Err(), out.String())
	require.ErrorContains(t, err, "when the agent stopped at -duration 10s, while the monitor did not answer (path dead; -give-up 5m0s had not run out): check that the monitor at -server "+addr, out.String())
	require.NotContains(t, err.Error(), "raise it")
	require.Contains(t, out.String(), "the monitor, which does not answer (path dead), is told it is aborted in case it hears")
}

// Each way the transport ends the connection gets its own words: what
// happened to the monitor, and what to do.
func TestWhyEnded(t *testing.T) {
	const server = "monitor.example:4433"
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("x: %w", transport.ErrStatelessReset), "monitor restarted: connection reset (the monitor at -server monitor.example:4433 lost this connection"},
		{transport.ErrIdleTimeout, "monitor went away: nothing heard from monitor.example:4433 for the idle timeout (30s): the monitor stopped, or the network between is down; check that the monitor at -server monitor.example:4433 is running"},
		{transport.ErrPeerClosed, "the monitor at monitor.example:4433 closed the connection (it was stopped, or it closed this agent's"},
		{fmt.Errorf("%w: %w", transport.ErrPeerClosed, transport.ErrProtocol), "connection ended: "},
		{fmt.Errorf("%w: %w", transport.ErrPeerClosed, transport.ErrStreamAborted), "connection ended: "},
	} {
		err := whyEnded(server, tc.err)
		require.ErrorContains(t, err, tc.want, "%v", tc.err)
		require.ErrorIs(t, err, tc.err, "the transport's error stays matchable")
	}
}

// -give-up must not be negative.
func TestGiveUpFlag(t *testing.T) {
	o, err := parseFlags([]string{"-server", "x:1"})
	require.NoError(t, err)
	require.Equal(t, 10*time.Second, o.giveUp)
	_, err = parseFlags([]string{"-server", "x:1", "-give-up", "-1s"})
	require.ErrorContains(t, err, "-give-up -1s: must not be negative")
}
