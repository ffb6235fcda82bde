package transport_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/transport"
)

// A dialled Conn's socket is bound to the wildcard address; LocalAddr still
// names the address its datagrams leave from, the one the peer sees.
func TestLocalAddrIsNotTheWildcard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ln, err := transport.Listen("127.0.0.1:0", transport.WithTestTLS(transport.Config{}))
	require.NoError(t, err)
	defer ln.Close()
	c, err := transport.Dial(ctx, ln.Addr().String(), transport.WithTestTLS(transport.Config{}))
	require.NoError(t, err)
	defer c.Close()
	s, err := ln.Accept(ctx)
	require.NoError(t, err)
	defer s.Close()

	la := c.LocalAddr().(*net.UDPAddr)
	require.False(t, la.IP.IsUnspecified(), "LocalAddr %v", la)
	require.Equal(t, s.RemoteAddr().String(), la.String(), "the address the listener sees")
	require.Equal(t, ln.Addr().String(), s.LocalAddr().String(), "a listener's Conn: its bound address")
}
