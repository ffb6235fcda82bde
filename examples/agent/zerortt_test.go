package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/examples/internal/cli"
	"github.com/fresh-udp/fresh/examples/internal/testcerts"
	"github.com/fresh-udp/fresh/transport"
)

// With -0rtt FILE the agent keeps its session ticket and the monitor's
// token in FILE (mode 0600): the first run does a full handshake, the
// second, a new process as a device waking up would start, resumes
// without a Retry and sends its first reading in 0-RTT to a monitor that
// allows it.
func TestAgentResumesWith0RTT(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	files := testcerts.Write(t, "agent-1")
	creds := cli.Credentials{Cert: files.ServerCert, Key: files.ServerKey, CA: files.CA}
	tlsCfg, err := creds.ServerTLS()
	require.NoError(t, err)
	ln, err := transport.Listen("127.0.0.1:0", transport.Config{TLS: tlsCfg, Allow0RTT: true})
	require.NoError(t, err)
	defer ln.Close()
	early := make(chan bool, 4)
	go func() {
		for {
			conn, err := ln.Accept(ctx)
			if err != nil {
				return
			}
			go func() {
				u, err := conn.ReadUpdate(ctx)
				if err == nil {
					early <- u.Early
				}
				<-conn.Done()
			}()
		}
	}()

	tickets := filepath.Join(t.TempDir(), "ticket.json")
	var outs []string
	for range 2 {
		var out bytes.Buffer
		err := run(ctx, agentArgs(files, ln.Addr().String(), "-0rtt", tickets, "-duration", "500ms", "-rate-hz", "50"), &out)
		require.NoError(t, err, out.String())
		outs = append(outs, out.String())
	}
	require.NotContains(t, outs[0], "resumed")
	require.False(t, <-early, "no ticket yet: a full handshake")
	require.Contains(t, outs[1], "session resumed, first reading sent in 0-RTT", outs[1])
	require.True(t, <-early, "the second run's first reading came in 0-RTT")
	st := ln.Stats()
	require.Equal(t, int64(1), st.NewTokensAccepted, "the second run kept the monitor's token: no Retry")
	fi, err := os.Stat(tickets)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the ticket holds a resumption secret")

	_, err = parseFlags([]string{"-server", "x:1", "-insecure", "-0rtt", tickets})
	require.ErrorContains(t, err, "-0rtt and -insecure")
}
