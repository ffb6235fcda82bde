package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fresh-udp/fresh/examples/internal/syncbuf"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/dscp"
	"github.com/fresh-udp/fresh/examples/internal/cli"
	"github.com/fresh-udp/fresh/examples/internal/testcerts"
	"github.com/fresh-udp/fresh/internal/ntptest"
	"github.com/fresh-udp/fresh/transport"
)

// listen is a monitor's listener on loopback with the certificates of
// files, requiring the agent's certificate (mutual TLS) as the monitor
// does with -ca.
func listen(t *testing.T, files testcerts.Files) *transport.Listener {
	t.Helper()
	creds := cli.Credentials{Cert: files.ServerCert, Key: files.ServerKey, CA: files.CA}
	cfg, err := creds.ServerTLS()
	require.NoError(t, err)
	ln, err := transport.Listen("127.0.0.1:0", transport.Config{TLS: cfg})
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	return ln
}

// agentArgs are the agent's flags to reach a listener with files' certificates.
func agentArgs(files testcerts.Files, addr string, more ...string) []string {
	return append(append([]string{"-server", addr}, files.ClientArgs("-")...), more...)
}

// fakeMonitor listens on loopback and hands the first connection to
// handle in a goroutine; it returns the address and the flags to give the
// agent.
func fakeMonitor(t *testing.T, ctx context.Context, handle func(*transport.Conn)) (args func(more ...string) []string) {
	t.Helper()
	files := testcerts.Write(t, "agent-1")
	ln := listen(t, files)
	go func() {
		if conn, err := ln.Accept(ctx); err == nil {
			handle(conn)
		}
	}()
	addr := ln.Addr().String()
	return func(more ...string) []string { return agentArgs(files, addr, more...) }
}

// drain reads an upload to the end.
func drain(conn *transport.Conn) { _, _ = io.Copy(io.Discard, conn) }

// TestAgentUploadsAndUpdates runs the agent for 1.5 s against a bare
// listener standing in for the monitor: the whole upload arrives, and
// readings arrive as updates.
func TestAgentUploadsAndUpdates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	files := testcerts.Write(t, "agent-1")
	ln := listen(t, files)

	type got struct {
		n       int64
		updates int
		last    string
	}
	gotc := make(chan got, 1)
	go func() {
		conn, err := ln.Accept(ctx)
		if err != nil {
			gotc <- got{}
			return
		}
		var g got
		uctx, ucancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				u, err := conn.ReadUpdate(uctx)
				if err != nil {
					return
				}
				g.updates++
				g.last = string(u.Payload)
			}
		}()
		g.n, _ = io.Copy(io.Discard, conn)
		_ = conn.Commit(g.n) // "stored"
		<-conn.Done()        // the agent closes after -duration
		ucancel()
		<-done
		gotc <- g
	}()

	var out bytes.Buffer
	err := run(ctx, agentArgs(files, ln.Addr().String(), "-upload-bytes", "300000", "-duration", "1500ms", "-rate-hz", "100"), &out)
	require.NoError(t, err, out.String())
	g := <-gotc
	require.Equal(t, int64(300000), g.n, "the whole upload arrived")
	require.Positive(t, g.updates)
	require.True(t, strings.HasPrefix(g.last, `{"seq":`), "a JSON reading: %q", g.last)
	require.Contains(t, out.String(), "agent: upload complete: 300000 bytes committed by the monitor")
	require.Contains(t, out.String(), "agent: done")
	require.Contains(t, out.String(), "300000 committed")
	require.Contains(t, out.String(), `(TLS, monitor verified as "localhost")`)
}

// An upload every byte of which was acknowledged, but that the monitor
// never committed (it did not store it), is not complete: the agent says
// so and exits non-zero, never "upload complete".
func TestAgentNeedsTheCommit(t *testing.T) {
	defer func(d time.Duration) { commitWait = d }(commitWait)
	commitWait = 200 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	args := fakeMonitor(t, ctx, drain) // reads everything, commits nothing
	var out bytes.Buffer
	err := run(ctx, args("-upload-bytes", "100000", "-duration", "500ms", "-stats", "0"), &out)
	require.ErrorContains(t, err, "upload incomplete: 0 of 100000 bytes committed by the monitor (100000 acknowledged)", out.String())
	require.NotContains(t, out.String(), "upload complete")
	require.Contains(t, out.String(), "waiting for the monitor to commit it")
}

// A monitor whose storage fails commits what it stored and closes with the
// reason: the agent exits non-zero saying how many bytes the monitor
// stored — its committed count, exactly — and why it stopped.
func TestAgentReportsStorageFailure(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const stored = 60_000
	args := fakeMonitor(t, ctx, func(conn *transport.Conn) {
		_, _ = io.ReadFull(conn, make([]byte, 100_000))
		_ = conn.Commit(stored) // the rest did not fit on the disk
		_ = conn.CloseWithError(cli.CodeStorageFailed, "write upload.agent-1.1.bin: no space left on device")
	})
	var out bytes.Buffer
	err := run(ctx, args("-upload-bytes", "1GB", "-duration", "15s", "-stats", "0"), &out)
	require.EqualError(t, err, "upload failed: monitor could not store it after 60000 bytes: write upload.agent-1.1.bin: no space left on device", out.String())
	require.Contains(t, out.String(), "60000 committed")
	require.NotContains(t, out.String(), "upload complete")
}

// -dscp takes every class name (CS7 by default, best effort when asked)
// and reaches transport as a typed DSCP: BE is best effort, not "default".
func TestDSCPFlag(t *testing.T) {
	o, err := parseFlags([]string{"-server", "x:1"})
	require.NoError(t, err)
	require.Equal(t, dscp.CS7, o.dscp, "updates are CS7 by default")
	for in, want := range map[string]dscp.Codepoint{"BE": dscp.BestEffort, "af12": dscp.AF12, "EF": dscp.EF, "46": dscp.EF} {
		o, err := parseFlags([]string{"-server", "x:1", "-dscp", in})
		require.NoError(t, err, in)
		require.Equal(t, want, o.dscp, in)
	}
	_, err = parseFlags([]string{"-server", "x:1", "-dscp", "AF44"})
	require.ErrorContains(t, err, "-dscp")
}

// Wrong flags fail before anything is dialled, naming the flag.
func TestBadFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-duration", "-1s"}, "-duration -1s: must not be negative"},
		{[]string{"-stats", "-1s"}, "-stats -1s: must not be negative"},
		{[]string{"-upload-bytes", "lots"}, "-upload-bytes"},
		{[]string{"-upload-bytes", "-5"}, "negative"},
		{[]string{"-send-buffer", "1.5"}, "-send-buffer"},
		{[]string{"-rate-hz", "0"}, "-rate-hz 0"},
		{[]string{"-upload", dir}, "is a directory"},
		{[]string{"-upload", dir + "/missing"}, "-upload"},
		{[]string{"-upload", "x", "-upload-bytes", "1"}, "exclude each other"},
	} {
		// 127.0.0.1:9 never answers: reaching Dial would take the whole
		// handshake timeout instead of failing.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		err := run(ctx, append([]string{"-server", "127.0.0.1:9", "-insecure"}, tc.args...), io.Discard)
		cancel()
		require.ErrorContains(t, err, tc.want, "%v", tc.args)
		require.NotErrorIs(t, err, context.DeadlineExceeded, "%v: failed before dialling", tc.args)
	}
	_, err := parseFlags([]string{})
	require.ErrorContains(t, err, "-server HOST:PORT is required")
}

// Sizes take units, the same parser as everywhere in the examples.
func TestUploadBytesUnits(t *testing.T) {
	for in, want := range map[string]int64{"1e9": 1e9, "1GB": 1e9, "10MiB": 10 << 20, "64K": 64 << 10, "300000": 300000} {
		o, err := parseFlags([]string{"-server", "x:1", "-upload-bytes", in})
		require.NoError(t, err, in)
		require.Equal(t, want, int64(o.uploadBytes), in)
	}
}

// An upload that -duration cuts short is an error that says so, not exit 0,
// and the monitor is told: its Read ends with ErrStreamAborted, not io.EOF,
// so it cannot take the prefix it got for the whole upload.
func TestAgentReportsIncompleteUpload(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	readErr := make(chan error, 1)
	args := fakeMonitor(t, ctx, func(conn *transport.Conn) {
		_, err := io.Copy(io.Discard, conn)
		readErr <- err
	})
	var out bytes.Buffer
	// 10 GB cannot cross loopback in 300 ms.
	err := run(ctx, args("-upload-bytes", "10GB", "-duration", "300ms", "-stats", "0"), &out)
	require.ErrorContains(t, err, "upload incomplete", out.String())
	require.ErrorContains(t, err, "of 10000000000 bytes committed by the monitor")
	require.ErrorContains(t, err, "-duration 300ms")
	require.Contains(t, out.String(), "the monitor is told it is aborted")
	select {
	case err := <-readErr:
		require.ErrorIs(t, err, transport.ErrStreamAborted, "the monitor's Read")
	case <-ctx.Done():
		t.Fatal("the monitor's Read did not end")
	}
}

// A monitor that never answers within -duration is an error, not a silent
// exit 0; the user's own interrupt before the answer is not.
func TestAgentReportsNoAnswer(t *testing.T) {
	var out bytes.Buffer
	// A UDP socket that reads nothing: no answer, and no ICMP refusal
	// either (a closed port would fail Dial at once: connection refused).
	silent, err := net.ListenPacket("udp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer silent.Close()
	addr := silent.LocalAddr().String()
	err = run(context.Background(), []string{"-server", addr, "-insecure", "-duration", "300ms"}, &out)
	require.ErrorContains(t, err, "no answer from "+addr+" within -duration 300ms")

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	require.NoError(t, run(ctx, []string{"-server", addr, "-insecure"}, &out))

	// Nothing listening at all (a port just closed) is reported at once.
	closed, err := net.ListenPacket("udp4", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, closed.Close())
	err = run(context.Background(), []string{"-server", closed.LocalAddr().String(), "-insecure", "-duration", "5s"}, &out)
	require.ErrorContains(t, err, "connection refused")
}

// With -ntp the agent says whether the clock synchronised, with the
// server's stratum (chronyd with "local stratum 8").
func TestAgentShowsNTPState(t *testing.T) {
	server := ntptest.StartChronyd(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	args := fakeMonitor(t, ctx, drain)
	var out bytes.Buffer
	err := run(ctx, args("-ntp", server, "-duration", "300ms", "-stats", "0"), &out)
	require.NoError(t, err, out.String())
	require.Contains(t, out.String(), "agent: clock: ntp synced (offset ")
	require.Contains(t, out.String(), "stratum 8)", "chronyd's local stratum 8")
}

// A monitor that hangs up mid-upload (as one that cannot store it does, or
// one stopped with Ctrl-C) fails the agent, which says the monitor closed
// the connection and how much of the upload got through.
func TestAgentReportsMonitorHangUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	args := fakeMonitor(t, ctx, func(conn *transport.Conn) {
		_, _ = io.ReadFull(conn, make([]byte, 1000))
		conn.Close()
	})
	var out bytes.Buffer
	err := run(ctx, args("-upload-bytes", "1GB", "-duration", "15s", "-stats", "0"), &out)
	require.ErrorIs(t, err, transport.ErrPeerClosed, out.String())
	require.ErrorContains(t, err, "the monitor at 127.0.0.1:")
	require.ErrorContains(t, err, " closed the connection (it was stopped, or it closed this agent's")
	require.ErrorContains(t, err, "upload incomplete")
	require.ErrorContains(t, err, "of 1000000000 bytes committed by the monitor")
}

// TLS mistakes fail with what to change: flags that contradict each other
// or lack their partner before anything is dialled (exit 2), a file that
// is not there naming the flag and the path; and each way the handshake
// can fail names the flag that fixes it.
func TestAgentCredentials(t *testing.T) {
	files, other := testcerts.Write(t, "agent-1"), testcerts.Write(t, "agent-2")
	for _, tc := range []struct {
		args  []string
		want  []string
		usage bool
	}{
		{[]string{"-cert", files.ClientCert}, []string{"-cert", "needs -key"}, true},
		{[]string{"-key", files.ClientKey}, []string{"-key", "needs -cert"}, true},
		{[]string{"-insecure", "-ca", files.CA, "-server-name", "x"}, []string{"-insecure and -ca, -server-name exclude each other"}, true},
		{[]string{"-ca", "/no/ca.pem"}, []string{"-ca", "/no/ca.pem", "no such file"}, false},
		{[]string{"-cert", files.ClientCert, "-key", other.ClientKey}, []string{"do not belong together"}, false},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		err := run(ctx, append([]string{"-server", "127.0.0.1:9"}, tc.args...), io.Discard)
		cancel()
		for _, w := range tc.want {
			require.ErrorContains(t, err, w, "%q", tc.args)
		}
		require.Equal(t, tc.usage, errors.As(err, new(*cli.UsageError)), "%q: %v", tc.args, err)
		require.NotErrorIs(t, err, context.DeadlineExceeded, "%v: failed before dialling", tc.args)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ln := listen(t, files)
	go func() {
		for {
			if _, err := ln.Accept(ctx); err != nil {
				return
			}
		}
	}()
	addr := ln.Addr().String()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no -ca: the system roots do not know the CA", []string{"-cert", files.ClientCert, "-key", files.ClientKey},
			"the monitor's certificate is not signed by a CA this host trusts: give -ca with the CA that signed it"},
		{"another CA", []string{"-ca", other.CA, "-cert", files.ClientCert, "-key", files.ClientKey},
			"not signed by -ca " + other.CA},
		{"a name the certificate is not for", append(files.ClientArgs("-"), "-server-name", "monitor.example"),
			`not valid for "monitor.example": give -server-name`},
		{"no client certificate", []string{"-ca", files.CA}, "the monitor requires a client certificate (mutual TLS): give -cert and -key"},
		{"a client certificate of another CA", []string{"-ca", files.CA, "-cert", other.ClientCert, "-key", other.ClientKey},
			"the monitor rejected -cert " + other.ClientCert},
		{"plaintext against TLS", []string{"-insecure"}, "give -insecure on both ends, or on neither"},
	} {
		err := run(ctx, append([]string{"-server", addr, "-duration", "5s"}, tc.args...), io.Discard)
		require.ErrorContains(t, err, tc.want, tc.name)
		require.ErrorIs(t, err, transport.ErrHandshake, tc.name)
	}
	// -server-name naming what the certificate is for connects (dialled
	// by address, verified by name).
	err := run(ctx, agentArgs(files, addr, "-server-name", "localhost", "-duration", "300ms"), io.Discard)
	require.NoError(t, err)
}

// A monitor that crashes and comes back on its port with the same TLS key
// (so the same derived reset key, as examples/monitor does) resets the
// agent's connection at its next datagram: the agent says "monitor
// restarted: connection reset" and exits with an error at once, long
// before its idle timeout.
func TestAgentReportsMonitorRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	files := testcerts.Write(t, "agent-1")
	creds := cli.Credentials{Cert: files.ServerCert, Key: files.ServerKey, CA: files.CA}
	cfg, err := creds.ServerTLS()
	require.NoError(t, err)
	key, err := transport.ResetKeyFromTLS(cfg)
	require.NoError(t, err)
	life := func(addr string) (*net.UDPConn, *transport.Listener) {
		sock, err := transport.ListenUDP(addr, false)
		require.NoError(t, err)
		tr := &transport.Transport{Conn: sock, StatelessResetKey: key}
		t.Cleanup(func() { tr.Close(); sock.Close() })
		ln, err := tr.Listen(transport.Config{TLS: cfg})
		require.NoError(t, err)
		return sock, ln
	}
	sock, ln := life("127.0.0.1:0")
	addr := sock.LocalAddr().String()
	restarted := make(chan time.Time, 1)
	go func() {
		conn, err := ln.Accept(ctx)
		if err != nil {
			return
		}
		_, _ = conn.ReadUpdate(ctx) // the agent is up and sending
		sock.Close()                // crashed: no CLOSE sent
		life(addr)
		restarted <- time.Now()
	}()
	var out syncbuf.Buffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, agentArgs(files, addr, "-duration", "15s", "-stats", "0"), &out) }()
	var at time.Time
	select {
	case at = <-restarted:
	case <-ctx.Done():
		t.Fatal("the agent never connected")
	}
	var runErr error
	select {
	case runErr = <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("the agent did not stop within 5 s of the restart:\n%s", out.String())
	}
	t.Logf("the agent stopped %v after the monitor restarted", time.Since(at).Round(time.Millisecond))
	require.ErrorIs(t, runErr, transport.ErrStatelessReset)
	require.ErrorContains(t, runErr, "monitor restarted: connection reset")
	require.Contains(t, out.String(), "agent: monitor restarted: connection reset")
}

// -qlog DIR leaves the connection's qlog trace in DIR once the agent ends.
func TestAgentQlog(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	args := fakeMonitor(t, ctx, func(c *transport.Conn) { <-c.Done() })
	dir := filepath.Join(t.TempDir(), "qlog")
	require.NoError(t, run(ctx, args("-qlog", dir, "-duration", "300ms", "-stats", "0"), io.Discard))
	files, err := filepath.Glob(filepath.Join(dir, "*_client.sqlog"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	b, err := os.ReadFile(files[0])
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(b, []byte("\x1e{\"qlog_version\":\"0.3\"")), "a JSON-SEQ qlog: %.80q", b)
	require.Contains(t, string(b), `"name":"transport:packet_sent"`)
	require.True(t, bytes.HasSuffix(b, []byte("}}\n")), "complete: flushed when the connection ended")
}
