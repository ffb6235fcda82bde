package main

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/examples/internal/testcerts"
	"github.com/fresh-udp/fresh/transport"
)

// With -0rtt the monitor takes a resuming agent's first reading in 0-RTT
// and says so on the "connected" line.
func TestMonitor0RTT(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	certs := testcerts.Write(t, "sensor-17")
	addr, out, stop := startMonitor(t, ctx, append(certs.ServerArgs("-"), "-0rtt")...)
	cfg := transport.Config{TLS: agentTLS(t, certs, true), Allow0RTT: true}
	cfg.TLS.ClientSessionCache = tls.NewLRUClientSessionCache(1)
	for range 2 {
		conn, err := transport.DialEarly(ctx, addr, cfg)
		require.NoError(t, err)
		require.NoError(t, conn.SendUpdate([]byte(`{"seq":0}`)))
		<-conn.HandshakeComplete()
		require.NoError(t, conn.Err())
		time.Sleep(200 * time.Millisecond) // the ticket follows the Accept
		require.NoError(t, conn.Close())
	}
	require.Eventually(t, func() bool { return strings.Count(out.String(), "disconnected") == 2 },
		5*time.Second, 20*time.Millisecond, out.String())
	require.NoError(t, stop())
	s := out.String()
	require.Equal(t, 1, strings.Count(s, "connected (session resumed, first reading in 0-RTT) (identity"), s)

	_, err := parseFlags([]string{"-insecure", "-0rtt"})
	require.ErrorContains(t, err, "-0rtt and -insecure")
}
