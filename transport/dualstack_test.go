package transport_test

import (
	"context"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/transport"
)

// A Listener on a wildcard address serves IPv4 and IPv6 clients on one
// socket, both ways (stream and updates), as net.ListenUDP("udp") does.
func TestWildcardListenerServesIPv4AndIPv6(t *testing.T) {
	if l6, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback}); err != nil {
		t.Skip("no IPv6 loopback here")
	} else {
		l6.Close()
	}
	for _, wildcard := range []string{":0", "0.0.0.0:0", "[::]:0"} {
		l, err := transport.Listen(wildcard, transport.WithTestTLS(transport.Config{}))
		require.NoError(t, err)
		port := strconv.Itoa(l.Addr().(*net.UDPAddr).Port)
		for _, host := range []string{"127.0.0.1", "::1"} {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			c, err := transport.Dial(ctx, net.JoinHostPort(host, port), transport.WithTestTLS(transport.Config{}))
			require.NoError(t, err, "listen %s, dial %s", wildcard, host)
			s, err := l.Accept(ctx)
			require.NoError(t, err)

			// Client → server and server → client, stream and updates.
			require.NoError(t, c.SendUpdate([]byte("up")))
			u, err := s.ReadUpdate(ctx)
			require.NoError(t, err)
			require.Equal(t, "up", string(u.Payload))
			require.NoError(t, s.SendUpdate([]byte("down")))
			u, err = c.ReadUpdate(ctx)
			require.NoError(t, err)
			require.Equal(t, "down", string(u.Payload))
			go func() { _, _ = s.Write(make([]byte, 100_000)); _ = s.Close() }()
			got, err := io.ReadAll(c)
			require.NoError(t, err)
			require.Len(t, got, 100_000)
			require.NoError(t, c.Close())
			cancel()
		}
		require.NoError(t, l.Close())
	}
}
