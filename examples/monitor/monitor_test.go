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
