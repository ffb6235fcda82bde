package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fresh-udp/fresh/examples/internal/syncbuf"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/examples/internal/cli"
	"github.com/fresh-udp/fresh/examples/internal/testcerts"
	"github.com/fresh-udp/fresh/transport"
)

// startMonitor runs the monitor with args until the test ends and returns
// the address it listens on, its output, and a stop function returning
// run's error.
func startMonitor(t *testing.T, ctx context.Context, args ...string) (addr string, out *syncbuf.Buffer, stop func() error) {
	t.Helper()
	pr, pw := io.Pipe()
	out = &syncbuf.Buffer{}
	runErr := make(chan error, 1)
	mctx, cancel := context.WithCancel(ctx)
	go func() {
		runErr <- run(mctx, append([]string{"-listen", "127.0.0.1:0", "-stats", "0"}, args...), io.MultiWriter(out, pw))
		pw.Close()
	}()
	// The first line says where it listens.
	first, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err, out.String())
	go io.Copy(io.Discard, pr)
	addr, _, _ = strings.Cut(strings.TrimPrefix(first, "monitor: listening on "), " ")
	var stopped error
	once := sync.OnceFunc(func() { cancel(); stopped = <-runErr })
	t.Cleanup(once)
	return addr, out, func() error { once(); return stopped }
}

// agentTLS is the client side's TLS config from the files, as the agent
// builds it from its flags.
func agentTLS(t *testing.T, f testcerts.Files, withCert bool) *tls.Config {
	t.Helper()
	c := cli.Credentials{CA: f.CA}
	if withCert {
		c.Cert, c.Key = f.ClientCert, f.ClientKey
	}
	cfg, err := c.ClientTLS()
	require.NoError(t, err)
	return cfg
}

// TestMonitorReceives connects an agent-like client with its certificate
// (mutual TLS), sends updates and an upload, and checks the monitor's file
// and report, which names the agent by its certificate.
func TestMonitorReceives(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dir := t.TempDir()
	outFile := filepath.Join(dir, "upload.bin")
	certs := testcerts.Write(t, "sensor-17")
	addr, out, stop := startMonitor(t, ctx, append(certs.ServerArgs("-"), "-out", outFile)...)
	require.Contains(t, out.String(), "agents must present a certificate signed by")

	conn, err := transport.Dial(ctx, addr, transport.Config{TLS: agentTLS(t, certs, true)})
	require.NoError(t, err)
	payload := strings.Repeat("fresh ", 10000)
	for i := range 30 {
		require.NoError(t, conn.SendUpdate([]byte(`{"seq":`+string(rune('0'+i%10))+`}`)))
		time.Sleep(40 * time.Millisecond)
	}
	_, err = conn.Write([]byte(payload))
	require.NoError(t, err)
	require.NoError(t, conn.CloseWrite())
	require.NoError(t, conn.WaitCommitted(ctx, int64(len(payload))), "the monitor commits the stored upload")
	require.NoError(t, conn.Close())

	require.Eventually(t, func() bool { return strings.Contains(out.String(), "disconnected") },
		5*time.Second, 20*time.Millisecond, out.String())
	require.NoError(t, stop())
	stored := filepath.Join(dir, "upload.sensor-17.1.bin")
	got, err := os.ReadFile(stored)
	require.NoError(t, err)
	require.Equal(t, payload, string(got))
	s := out.String()
	require.Contains(t, s, "its upload goes to "+stored)
	require.Contains(t, s, "upload complete: 60000 bytes stored and committed")
	require.Contains(t, s, "updates ")
	require.Contains(t, s, `{"seq":`)
	require.Contains(t, s, `sensor-17@127.0.0.1:`, "the agent is named by its certificate")
	require.Contains(t, s, `connected (identity "sensor-17", certificate verified against -ca)`)
}

// An agent that aborts its upload (cut short) is reported as aborted, with
// the bytes it got, and never as complete.
func TestMonitorReportsAbortedUpload(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	certs := testcerts.Write(t, "sensor-18")
	addr, out, stop := startMonitor(t, ctx, append(certs.ServerArgs("-"), "-out", filepath.Join(t.TempDir(), "upload.bin"))...)
	conn, err := transport.Dial(ctx, addr, transport.Config{TLS: agentTLS(t, certs, true)})
	require.NoError(t, err)
	_, err = conn.Write([]byte(strings.Repeat("part ", 1000)))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return conn.Stats().StreamBytesAcked == 5000 }, 5*time.Second, time.Millisecond)
	require.NoError(t, conn.Abort())

	require.Eventually(t, func() bool { return strings.Contains(out.String(), "disconnected") },
		5*time.Second, 20*time.Millisecond, out.String())
	require.NoError(t, stop())
	s := out.String()
	require.Contains(t, s, "upload aborted by the agent after 5000 bytes")
	require.NotContains(t, s, "upload complete")
}

// With -ca an agent without a certificate, or with one another CA signed,
// is turned away at the handshake and takes nothing from the monitor (not
// -out's file either: the listener hands only handshaken connections to
// Accept); with -insecure on both ends the monitor works in
// plaintext, and refuses a TLS agent.
func TestMonitorAuthenticatesAgents(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	certs, other := testcerts.Write(t, "agent-1"), testcerts.Write(t, "intruder")
	outFile := filepath.Join(t.TempDir(), "upload.bin")
	addr, out, stop := startMonitor(t, ctx, append(certs.ServerArgs("-"), "-out", outFile)...)

	_, err := transport.Dial(ctx, addr, transport.Config{TLS: agentTLS(t, certs, false)})
	require.ErrorContains(t, err, "certificate required")
	// Verifies the monitor with the right CA but presents another CA's
	// certificate.
	intruder := agentTLS(t, other, true)
	intruder.RootCAs = agentTLS(t, certs, false).RootCAs
	_, err = transport.Dial(ctx, addr, transport.Config{TLS: intruder})
	require.ErrorContains(t, err, "unknown certificate authority")
	// A failed handshake never reaches Accept: the monitor hears nothing
	// of either.
	time.Sleep(100 * time.Millisecond)
	require.NotContains(t, out.String(), "intruder")
	require.NotContains(t, out.String(), "connected (")

	// The rightful agent is still the first: number 1, not 3.
	conn, err := transport.Dial(ctx, addr, transport.Config{TLS: agentTLS(t, certs, true)})
	require.NoError(t, err)
	_, err = conn.Write([]byte("hello"))
	require.NoError(t, err)
	require.NoError(t, conn.Close())
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "disconnected") },
		5*time.Second, 20*time.Millisecond, out.String())
	require.NoError(t, stop())
	got, err := os.ReadFile(filepath.Join(filepath.Dir(outFile), "upload.agent-1.1.bin"))
	require.NoError(t, err)
	require.Equal(t, "hello", string(got))
	require.Contains(t, out.String(), "upload complete: 5 bytes stored", "a client that closes without waiting for the commit still had its upload stored")

	addr, out, stop = startMonitor(t, ctx, "-insecure")
	require.Contains(t, out.String(), "INSECURE")
	conn, err = transport.Dial(ctx, addr, transport.Config{Insecure: true})
	require.NoError(t, err)
	require.NoError(t, conn.SendUpdate([]byte("plain")))
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "plain") },
		5*time.Second, 20*time.Millisecond, out.String())
	require.NoError(t, conn.Close())
	_, err = transport.Dial(ctx, addr, transport.Config{TLS: agentTLS(t, certs, true)})
	require.ErrorIs(t, err, transport.ErrHandshake)
	require.NoError(t, stop())
}

// Credentials are checked before the monitor listens: none at all is a
// usage error (exit 2) that says how to make them, a missing file or a
// key of another certificate names the flag and the file.
func TestMonitorCredentialFlags(t *testing.T) {
	certs, other := testcerts.Write(t, "agent-1"), testcerts.Write(t, "agent-2")
	for _, tc := range []struct {
		args  []string
		want  []string
		usage bool
	}{
		{nil, []string{"no TLS credentials", "-cert", "-key", "go run ./examples/certgen -dir certs", "-insecure"}, true},
		{[]string{"-cert", certs.ServerCert}, []string{"needs -key"}, true},
		{[]string{"-insecure", "-ca", certs.CA}, []string{"-insecure and -ca exclude each other"}, true},
		{[]string{"-cert", "/no/such.pem", "-key", certs.ServerKey}, []string{"-cert", "/no/such.pem", "no such file"}, false},
		{[]string{"-cert", certs.ServerCert, "-key", certs.ServerKey, "-ca", "/no/ca.pem"}, []string{"-ca", "/no/ca.pem"}, false},
		{[]string{"-cert", certs.ServerCert, "-key", other.ServerKey}, []string{"do not belong together", certs.ServerCert, other.ServerKey}, false},
		{[]string{"-cert", certs.ServerKey, "-key", certs.ServerCert}, []string{"not a PEM certificate"}, false},
		{[]string{"-cert", certs.ServerCert, "-key", certs.ServerKey, "-ca", certs.ServerKey}, []string{"-ca", "no PEM certificate"}, false},
	} {
		var out syncbuf.Buffer
		err := run(context.Background(), append([]string{"-listen", "127.0.0.1:0"}, tc.args...), &out)
		for _, w := range tc.want {
			require.ErrorContains(t, err, w, "%q", tc.args)
		}
		require.Equal(t, tc.usage, errors.As(err, new(*cli.UsageError)), "%q: exit 2 for a usage error: %v", tc.args, err)
		require.NotContains(t, out.String(), "listening", "it never listened")
	}
}

// An -out the monitor cannot create fails at start-up, before it listens,
// as do a directory for -out and -force without -out.
func TestMonitorOutMustBeWritable(t *testing.T) {
	var out syncbuf.Buffer
	err := run(context.Background(), []string{"-listen", "127.0.0.1:0", "-insecure", "-out", filepath.Join(t.TempDir(), "no", "such", "dir", "file")}, &out)
	require.ErrorContains(t, err, "-out")
	require.ErrorContains(t, err, "no such file or directory")
	dir := t.TempDir()
	err = run(context.Background(), []string{"-listen", "127.0.0.1:0", "-insecure", "-out", dir}, &out)
	require.ErrorContains(t, err, "-out "+dir+": is a directory; give a file name, such as "+filepath.Join(dir, "upload.bin"))
	err = run(context.Background(), []string{"-listen", "127.0.0.1:0", "-insecure", "-force"}, &out)
	require.ErrorContains(t, err, "-force without -out")
	require.True(t, errors.As(err, new(*cli.UsageError)))
	require.NotContains(t, out.String(), "listening", "it never listened")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "the start-up check leaves nothing behind")

	err = run(context.Background(), []string{"-insecure", "-stats", "-1s"}, &out)
	require.ErrorContains(t, err, "-stats -1s: must not be negative")
}

// An upload file that exists is not overwritten: the agent is turned away
// with the reason, which names -force; with -force it is overwritten.
func TestMonitorRefusesToOverwrite(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	certs := testcerts.Write(t, "agent-1")
	outFile := filepath.Join(t.TempDir(), "upload.bin")
	existing := filepath.Join(filepath.Dir(outFile), "upload.agent-1.1.bin")
	require.NoError(t, os.WriteFile(existing, []byte("an earlier run's upload"), 0o644))

	addr, out, stop := startMonitor(t, ctx, append(certs.ServerArgs("-"), "-out", outFile)...)
	// The refusal may come before Dial returns, or just after.
	conn, err := transport.Dial(ctx, addr, transport.Config{TLS: agentTLS(t, certs, true)})
	if err == nil {
		<-conn.Done()
		err = conn.Err()
		conn.Close() // its Transport and socket
	}
	var ae *transport.ApplicationError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, cli.CodeStorageFailed, ae.Code)
	require.Contains(t, ae.Reason, existing+" exists (from an earlier run?): give -force to overwrite it, or another -out")
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "refused: -out: "+existing+" exists") },
		5*time.Second, 20*time.Millisecond, out.String())
	require.NoError(t, stop())
	got, err := os.ReadFile(existing)
	require.NoError(t, err)
	require.Equal(t, "an earlier run's upload", string(got), "not overwritten")

	addr, out, stop = startMonitor(t, ctx, append(certs.ServerArgs("-"), "-out", outFile, "-force")...)
	conn, err = transport.Dial(ctx, addr, transport.Config{TLS: agentTLS(t, certs, true)})
	require.NoError(t, err)
	_, err = conn.Write([]byte("new"))
	require.NoError(t, err)
	require.NoError(t, conn.CloseWrite())
	require.NoError(t, conn.WaitCommitted(ctx, 3), out.String())
	require.NoError(t, conn.Close())
	require.NoError(t, stop())
	got, err = os.ReadFile(existing)
	require.NoError(t, err)
	require.Equal(t, "new", string(got), "-force overwrites")
}

// faultySink stores like a file until its disk "fills" (writes beyond
// capacity fail with ENOSPC) or its syncs start failing (after syncOK
// successful ones); synced is what a crash would keep: the bytes written
// before the last successful Sync.
type faultySink struct {
	mu       sync.Mutex
	capacity int64
	syncOK   int
	written  int64
	synced   int64
	syncs    int
}

func (f *faultySink) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := int(min(int64(len(p)), f.capacity-f.written))
	f.written += int64(n)
	if n < len(p) {
		return n, &os.PathError{Op: "write", Path: "upload.bin", Err: syscall.ENOSPC}
	}
	return n, nil
}

func (f *faultySink) Sync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.syncs >= f.syncOK {
		return &os.PathError{Op: "sync", Path: "upload.bin", Err: syscall.EIO}
	}
	f.syncs++
	f.synced = f.written
	return nil
}

func (f *faultySink) Close() error { return nil }

func (f *faultySink) stored() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.synced
}

// When storing fails, the monitor commits only what it stored and closes
// with the reason: the sender's Committed is exactly the bytes on "disk",
// its WaitCommitted fails with the monitor's ApplicationError, never nil —
// whether the disk fills mid-write or a sync fails after writes succeeded
// (where committing on write instead of after the sync would claim more).
func TestMonitorCommitsOnlyWhatIsStored(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sink   *faultySink
		reason string
	}{
		{"disk full", &faultySink{capacity: 3_000_000 + 12_345, syncOK: 1 << 30}, "no space left on device"},
		{"sync fails", &faultySink{capacity: 1 << 40, syncOK: 2}, "input/output error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(old func(string, bool) (sink, error)) { createSink = old }(createSink)
			createSink = func(string, bool) (sink, error) { return tc.sink, nil }
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			certs := testcerts.Write(t, "agent-1")
			addr, out, stop := startMonitor(t, ctx, append(certs.ServerArgs("-"), "-out", filepath.Join(t.TempDir(), "upload.bin"))...)

			conn, err := transport.Dial(ctx, addr, transport.Config{TLS: agentTLS(t, certs, true)})
			require.NoError(t, err)
			defer conn.Close()
			const total = 8 << 20
			go func() {
				if _, err := conn.Write(make([]byte, total)); err == nil {
					_ = conn.CloseWrite()
				}
			}()
			err = conn.WaitCommitted(ctx, total)
			require.Error(t, err, "the upload must not be committed")
			var ae *transport.ApplicationError
			require.ErrorAs(t, err, &ae, out.String())
			require.Equal(t, cli.CodeStorageFailed, ae.Code)
			require.Contains(t, ae.Reason, tc.reason)
			require.Positive(t, tc.sink.stored())
			require.Equal(t, tc.sink.stored(), conn.Committed(), "committed is exactly what was stored")
			require.Eventually(t, func() bool { return strings.Contains(out.String(), "upload failed after") },
				5*time.Second, 20*time.Millisecond, out.String())
			require.Contains(t, out.String(), fmt.Sprintf("upload failed after %d bytes stored", tc.sink.stored()))
			require.NoError(t, stop())
		})
	}
}

// An agent's certificate name and readings are its own choice: a name
// with a line break cannot write a forged line (a whole "upload complete"
// of another device), and a reading cannot pass for the upload's field
// that follows it on the line. The name prints Go-quoted, the reading in
// backquotes.
func TestMonitorOutputCannotBeForgedByAnAgent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const forged = "12:00:00 sensor-17@127.0.0.1:1 upload complete: 1000000 bytes stored and committed in 1s (8.00 Mbit/s)"
	name := "evil\n" + forged
	certs := testcerts.Write(t, name)
	addr, out, stop := startMonitor(t, ctx, certs.ServerArgs("-")...)
	conn, err := transport.Dial(ctx, addr, transport.Config{TLS: agentTLS(t, certs, true)})
	require.NoError(t, err)
	const reading = `{"t":1} | upload 999.00 Mbit/s`
	require.NoError(t, conn.SendUpdate([]byte(reading)))
	_, err = conn.Write(make([]byte, 5000))
	require.NoError(t, err)
	require.NoError(t, conn.CloseWrite())
	require.NoError(t, conn.WaitCommitted(ctx, 5000))
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "newest age") },
		10*time.Second, 20*time.Millisecond, "the once-a-second line with the reading:\n%s", out.String())
	require.NoError(t, conn.Close())
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "disconnected") },
		10*time.Second, 20*time.Millisecond, out.String())
	require.NoError(t, stop())

	s := out.String()
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for _, line := range lines {
		require.False(t, strings.HasPrefix(line, "12:00:00 sensor-17"), "a forged line: %q", line)
	}
	quoted := strconv.Quote(name) + "@127.0.0.1:"
	require.Contains(t, s, quoted)
	// Every line is the monitor's own, or starts (after the time) with the
	// quoted name; what follows the name is the monitor's text alone.
	complete := 0
	for _, line := range lines {
		if strings.HasPrefix(line, "monitor: ") {
			continue
		}
		i := strings.Index(line, quoted)
		require.True(t, i == 0 || i == 9, "a line that is not the monitor's or the agent's: %q", line)
		rest := strings.ReplaceAll(line[i+len(quoted):], strconv.Quote(name), "NAME") // the "identity" field quotes it too
		require.NotContains(t, rest, "sensor-17", "the forged text outside the name's quotes: %q", line)
		if strings.Contains(rest, " upload complete: ") {
			complete++
			require.Contains(t, rest, " upload complete: 5000 bytes stored and committed")
		}
	}
	require.Equal(t, 1, complete, "one upload, one line")
	require.Contains(t, s, ": `"+reading+"` | upload ", "the reading in backquotes, then the real upload field")
}

// A reading prints in backquotes when it is printable text without a
// backquote, cut to 120 characters; otherwise as hex.
func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		`{"seq":1}`:              "`{\"seq\":1}`",
		"café":                   "`café`",
		"a\nb":                   "3 bytes 610a62",
		"a`b":                    "3 bytes 616062",
		"x\u2028y":               "5 bytes 78e280a879",
		"\xff":                   "1 bytes ff",
		strings.Repeat("é", 130): "`" + strings.Repeat("é", 120) + "`…",
	} {
		require.Equal(t, want, printable([]byte(in)), "%q", in)
	}
}
