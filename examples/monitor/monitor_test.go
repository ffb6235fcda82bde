package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/transport"
)

// syncBuffer is an io.Writer whose lines a test can wait for.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestMonitorReceives connects an agent-like client, sends updates and an
// upload, and checks the monitor's file and report.
func TestMonitorReceives(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dir := t.TempDir()
	outFile := filepath.Join(dir, "upload.bin")

	pr, pw := io.Pipe()
	var out syncBuffer
	runErr := make(chan error, 1)
	mctx, stop := context.WithCancel(ctx)
	go func() {
		runErr <- run(mctx, []string{"-listen", "127.0.0.1:0", "-out", outFile, "-stats", "0"}, io.MultiWriter(pw, &out))
		pw.Close()
	}()
	// The first line says where it listens.
	first, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	go io.Copy(io.Discard, pr)
	addr := strings.TrimSpace(strings.TrimPrefix(first, "monitor: listening on "))

	conn, err := transport.Dial(ctx, addr, transport.Config{})
	require.NoError(t, err)
	payload := strings.Repeat("fresh ", 10000)
	for i := range 30 {
		require.NoError(t, conn.SendUpdate([]byte(`{"seq":`+string(rune('0'+i%10))+`}`)))
		time.Sleep(40 * time.Millisecond)
	}
	_, err = conn.Write([]byte(payload))
	require.NoError(t, err)
	require.NoError(t, conn.Close())

	require.Eventually(t, func() bool { return strings.Contains(out.String(), "disconnected") },
		5*time.Second, 20*time.Millisecond, out.String())
	stop()
	require.NoError(t, <-runErr)
	got, err := os.ReadFile(outFile)
	require.NoError(t, err)
	require.Equal(t, payload, string(got))
	s := out.String()
	require.Contains(t, s, "upload complete: 60000 bytes")
	require.Contains(t, s, "updates ")
	require.Contains(t, s, `{"seq":`)
}

// An -out the monitor cannot create fails at start-up, before it listens.
func TestMonitorOutMustBeWritable(t *testing.T) {
	var out syncBuffer
	err := run(context.Background(), []string{"-listen", "127.0.0.1:0", "-out", filepath.Join(t.TempDir(), "no", "such", "dir", "file")}, &out)
	require.ErrorContains(t, err, "-out")
	require.ErrorContains(t, err, "no such file or directory")
	require.NotContains(t, out.String(), "listening", "it never listened")

	err = run(context.Background(), []string{"-stats", "-1s"}, &out)
	require.ErrorContains(t, err, "-stats -1s: must not be negative")
}

// When writing the upload fails (here /dev/full: no space left), the monitor
// closes the connection: the sender's upload fails instead of being
// acknowledged and discarded until it "succeeds".
func TestMonitorClosesWhenTheUploadCannotBeKept(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pr, pw := io.Pipe()
	var out syncBuffer
	runErr := make(chan error, 1)
	mctx, stop := context.WithCancel(ctx)
	go func() {
		runErr <- run(mctx, []string{"-listen", "127.0.0.1:0", "-out", "/dev/full", "-stats", "0"}, io.MultiWriter(pw, &out))
		pw.Close()
	}()
	first, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	go io.Copy(io.Discard, pr)
	addr := strings.TrimSpace(strings.TrimPrefix(first, "monitor: listening on "))

	conn, err := transport.Dial(ctx, addr, transport.Config{Linger: -1})
	require.NoError(t, err)
	defer conn.Close()
	// Far more than the receive window (4 MiB): without the close, Write
	// would block on flow control until the deadline.
	require.NoError(t, conn.SetWriteDeadline(time.Now().Add(15*time.Second)))
	chunk := make([]byte, 64<<10)
	var werr error
	for range 1 << 10 {
		if _, werr = conn.Write(chunk); werr != nil {
			break
		}
	}
	require.Error(t, werr, "the upload must fail")
	require.NotErrorIs(t, werr, os.ErrDeadlineExceeded, "it failed because the monitor closed, not by timing out")
	<-conn.Done()
	require.ErrorIs(t, conn.Err(), transport.ErrPeerClosed)
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "upload failed after") },
		5*time.Second, 20*time.Millisecond, out.String())
	require.Contains(t, out.String(), "no space left on device")
	stop()
	require.NoError(t, <-runErr)
}
