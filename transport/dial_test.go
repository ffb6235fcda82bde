package transport

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// closedPort returns a loopback UDP address where nothing listens: a port
// the kernel just handed out and that was closed again.
func closedPort(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	require.NoError(t, err)
	addr := pc.LocalAddr().String()
	require.NoError(t, pc.Close())
	return addr
}

// Dialling a port where nothing listens fails as soon as the kernel
// reports the ICMP port unreachable, not after HandshakeTimeout.
func TestDialRefusedFailsFast(t *testing.T) {
	const hsTimeout = 5 * time.Second
	addr := closedPort(t)
	start := time.Now()
	c, err := Dial(context.Background(), addr, Config{HandshakeTimeout: hsTimeout})
	elapsed := time.Since(start)
	require.Nil(t, c)
	require.Error(t, err)
	require.Less(t, elapsed, hsTimeout/2, "Dial waited for the handshake timeout: %v", err)
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	require.ErrorIs(t, err, ErrHandshake)
	require.Contains(t, err.Error(), "connection refused")
	require.Equal(t, 1, strings.Count(err.Error(), "transport:"), "one prefix: %q", err)
}

// A handshake that times out says so once, and still matches ErrHandshake
// and the context's error.
func TestDialTimeoutError(t *testing.T) {
	// A UDP socket that never answers: the Initial is read by nobody, and
	// no ICMP error comes back.
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer pc.Close()
	_, err = Dial(context.Background(), pc.LocalAddr().String(), Config{HandshakeTimeout: 300 * time.Millisecond})
	require.ErrorIs(t, err, ErrHandshake)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.False(t, errors.Is(err, syscall.ECONNREFUSED))
	require.Equal(t, "transport: dial "+pc.LocalAddr().String()+": handshake failed: context deadline exceeded", err.Error())
}
