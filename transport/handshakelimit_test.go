package transport

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// MaxHandshakes counts handshakes in progress only: a completed handshake
// gives its place back (here five Dials in turn through a limit of two),
// and so does one that expired; while the places are taken by clients that
// never finish, an Initial is refused and counted. (Every client here is
// one source, 127.0.0.1, given all of MaxHandshakes: the per-source part
// is TestHalfOpenFloodFromOneSource's.)
func TestMaxHandshakesCountsHandshakesInProgress(t *testing.T) {
	tr := &Transport{MaxHandshakes: 2, MaxHandshakesPerSource: 2}
	l := listenWith(t, tr, Config{HandshakeTimeout: 2 * time.Second})
	go func() {
		for {
			if _, err := l.Accept(context.Background()); err != nil {
				return
			}
		}
	}()
	for range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := Dial(ctx, l.Addr().String(), testConfig(Config{Linger: -1}))
		cancel()
		require.NoError(t, err)
		defer c.Close()
	}
	require.Zero(t, l.Stats().InitialsHandshakeLimit)

	udp, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer udp.Close()
	halfOpen(t, udp, l.Addr().(*net.UDPAddr), testConfig(Config{}).sessionConfigOrPanic(), 3)
	require.Eventually(t, func() bool { return l.Stats().InitialsHandshakeLimit > 0 }, 5*time.Second, time.Millisecond,
		"the third half-open handshake is refused")
	require.Equal(t, 5+2, l.Stats().Connections)

	// Once the two expire (HandshakeTimeout), a Dial gets through again.
	require.Eventually(t, func() bool { return l.Stats().HandshakeTimeouts == 2 }, 10*time.Second, time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, l.Addr().String(), testConfig(Config{Linger: -1}))
	require.NoError(t, err)
	c.Close()
}
