package transport

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"sync"
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
	c, err := Dial(context.Background(), addr, testConfig(Config{HandshakeTimeout: hsTimeout}))
	elapsed := time.Since(start)
	require.Nil(t, c)
	require.Error(t, err)
	require.Less(t, elapsed, hsTimeout/2, "Dial waited for the handshake timeout: %v", err)
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	require.ErrorIs(t, err, ErrHandshake)
	require.Contains(t, err.Error(), "connection refused")
	require.Equal(t, 1, strings.Count(err.Error(), "transport:"), "one prefix: %q", err)
}

// A handshake that times out says so once, with what it heard (here:
// nothing), and still matches ErrHandshake and the context's error.
func TestDialTimeoutError(t *testing.T) {
	// A UDP socket that never answers: the Initial is read by nobody, and
	// no ICMP error comes back.
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer pc.Close()
	_, err = Dial(context.Background(), pc.LocalAddr().String(), testConfig(Config{HandshakeTimeout: 300 * time.Millisecond}))
	require.ErrorIs(t, err, ErrHandshake)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.False(t, errors.Is(err, syscall.ECONNREFUSED))
	require.Regexp(t, "^transport: dial "+regexp.QuoteMeta(pc.LocalAddr().String())+
		`: handshake failed: context deadline exceeded: no answer from the server in \d+ms: is it running at that address, and does the path carry UDP both ways\?$`, err.Error())
}

// lockedBuffer is a bytes.Buffer safe for the Conn's goroutines to log to.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Once the connection is open, an ICMP port unreachable (the server's
// socket is gone without a CLOSE) does not end it: ICMP is unauthenticated
// and may be transient, so it is left to the idle timeout, as TCP does. It
// is counted (Stats.PortUnreachable), so an application can say why.
func TestRefusedAfterHandshakeIsIgnored(t *testing.T) {
	var logs lockedBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	l, cli, _ := pair(t, Config{}, Config{Logger: logger})
	defer l.Close()
	defer cli.Close()
	require.Zero(t, cli.Stats().PortUnreachable, "the server is there")

	require.NoError(t, l.t.Conn.Close()) // the server vanishes, no CLOSE sent
	require.Eventually(t, func() bool {
		_ = cli.SendUpdate([]byte("anyone there?"))
		return cli.Stats().PortUnreachable > 0
	}, 5*time.Second, 10*time.Millisecond, "no ICMP error was counted")
	require.Contains(t, logs.String(), "peer port unreachable")
	require.NoError(t, cli.Err(), "the connection stays open")
	select {
	case <-cli.Done():
		t.Fatal("the connection ended")
	default:
	}
}

// PathChanged signals when the path goes dead (and nothing while it is
// healthy), so an application watches it without polling Stats; the
// ICMP errors counted since the peer was last heard say nothing listens
// there any more.
func TestPathChangedSignalsDeadPath(t *testing.T) {
	l, cli, _ := pair(t, Config{}, Config{})
	defer l.Close()
	defer cli.Close()
	for range 5 { // healthy traffic: no signal
		require.NoError(t, cli.SendUpdate([]byte("reading")))
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case <-cli.PathChanged():
		t.Fatal("PathChanged signalled on a healthy path")
	default:
	}
	require.False(t, cli.Stats().PathDead)

	require.NoError(t, l.t.Conn.Close()) // the server vanishes, no CLOSE sent
	gone := time.Now()
	tick := time.NewTicker(50 * time.Millisecond) // a sensor's readings go on
	defer tick.Stop()
	deadline := time.After(15 * time.Second)
	for changed := false; !changed; {
		select {
		case <-cli.PathChanged():
			changed = true
			t.Logf("PathChanged %v after the server vanished", time.Since(gone).Round(time.Millisecond))
		case <-tick.C:
			require.NoError(t, cli.SendUpdate([]byte("anyone there?")))
		case <-deadline:
			t.Fatal("no PathChanged signal for a dead path")
		}
	}
	s := cli.Stats()
	require.True(t, s.PathDead)
	require.Positive(t, s.PortUnreachableSinceHeard, "the probes drew ICMP port unreachables")
	require.Equal(t, s.PortUnreachable, s.PortUnreachableSinceHeard, "nothing was heard since the server vanished")
}
