package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/transport"
)

// TestAgentUploadsAndUpdates runs the agent for 1.5 s against a bare
// listener standing in for the monitor: the whole upload arrives, and
// readings arrive as updates.
func TestAgentUploadsAndUpdates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ln, err := transport.Listen("127.0.0.1:0", transport.Config{})
	require.NoError(t, err)
	defer ln.Close()

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
		<-conn.Done() // the agent closes after -duration
		ucancel()
		<-done
		gotc <- g
	}()

	var out bytes.Buffer
	err = run(ctx, []string{"-server", ln.Addr().String(), "-upload-bytes", "300000", "-duration", "1500ms", "-rate-hz", "100"}, &out)
	require.NoError(t, err, out.String())
	g := <-gotc
	require.Equal(t, int64(300000), g.n, "the whole upload arrived")
	require.Positive(t, g.updates)
	require.True(t, strings.HasPrefix(g.last, `{"seq":`), "a JSON reading: %q", g.last)
	require.Contains(t, out.String(), "agent: done")
}

func TestParseDSCP(t *testing.T) {
	for in, want := range map[string]uint8{
		"CS7": 56, "cs6": 48, "EF": 46, "BE": 0, "CS1": 8, "AF41": 34, "AF11": 10, "0": 0, "63": 63, " 46 ": 46,
	} {
		got, err := parseDSCP(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"CS8", "AF44", "64", "-1", "voice", ""} {
		_, err := parseDSCP(in)
		require.Error(t, err, "%q", in)
	}
	// BE must reach transport as −1: 0 means "default" (CS7) there.
	o, err := parseFlags([]string{"-server", "x:1", "-dscp", "BE"})
	require.NoError(t, err)
	require.Equal(t, -1, o.dscp)
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
	err = run(context.Background(), []string{"-server", addr, "-duration", "300ms"}, &out)
	require.ErrorContains(t, err, "no answer from "+addr+" within -duration 300ms")

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	require.NoError(t, run(ctx, []string{"-server", addr}, &out))

	// Nothing listening at all (a port just closed) is reported at once.
	closed, err := net.ListenPacket("udp4", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, closed.Close())
	err = run(context.Background(), []string{"-server", closed.LocalAddr().String(), "-duration", "5s"}, &out)
	require.ErrorContains(t, err, "connection refused")
}
