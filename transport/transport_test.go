package transport_test

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/transport"
)

// plainPacketConn hides the *net.UDPConn behind the bare net.PacketConn
// interface, as a user's own socket type (a NAT traversal library's, a
// tunnel's) would: the Transport must fall back to one datagram per call.
type plainPacketConn struct{ net.PacketConn }

func udp(t *testing.T) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// exchange moves a stream and an update from a to b and checks both.
func exchange(t *testing.T, a, b *transport.Conn, msg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := a.Write([]byte(msg))
	require.NoError(t, err)
	buf := make([]byte, len(msg))
	_, err = io.ReadFull(b, buf)
	require.NoError(t, err)
	require.Equal(t, msg, string(buf))
	require.NoError(t, a.SendUpdate([]byte(msg)))
	u, err := b.ReadUpdate(ctx)
	require.NoError(t, err)
	require.Equal(t, msg, string(u.Payload))
}

// A Transport over any net.PacketConn carries connections both ways, and
// its Close ends them but leaves the caller's socket open.
func TestTransportOverAnyPacketConn(t *testing.T) {
	srvSock, cliSock := udp(t), udp(t)
	srvTr := &transport.Transport{Conn: plainPacketConn{srvSock}}
	cliTr := &transport.Transport{Conn: plainPacketConn{cliSock}}
	defer cliTr.Close()
	l, err := srvTr.Listen(transport.WithTestTLS(transport.Config{}))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, err := cliTr.Dial(ctx, srvSock.LocalAddr(), transport.WithTestTLS(transport.Config{}))
	require.NoError(t, err)
	srv, err := l.Accept(ctx)
	require.NoError(t, err)
	exchange(t, cli, srv, "over a plain net.PacketConn")
	exchange(t, srv, cli, "and back")

	require.NoError(t, srvTr.Close())
	select {
	case <-srv.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Transport.Close left its accepted connection open")
	}
	_, err = l.Accept(ctx)
	require.Error(t, err, "the Listener is closed with its Transport")
	_, err = srvTr.Listen(transport.WithTestTLS(transport.Config{}))
	require.ErrorIs(t, err, transport.ErrTransportClosed)
	_, err = srvTr.Dial(ctx, cliSock.LocalAddr(), transport.WithTestTLS(transport.Config{}))
	require.ErrorIs(t, err, transport.ErrTransportClosed)
	// The socket was the caller's: still open.
	_, err = srvSock.WriteTo([]byte("x"), cliSock.LocalAddr())
	require.NoError(t, err, "Transport.Close must not close a Conn it was given")
}

// One Transport accepts and dials on one port: two devices, each with a
// Listener, dial each other from the port they listen on, and every
// connection works beside the others.
func TestTransportListensAndDialsOnOnePort(t *testing.T) {
	a, b := &transport.Transport{Conn: udp(t)}, &transport.Transport{Conn: udp(t)}
	defer a.Close()
	defer b.Close()
	la, err := a.Listen(transport.WithTestTLS(transport.Config{}))
	require.NoError(t, err)
	lb, err := b.Listen(transport.WithTestTLS(transport.Config{}))
	require.NoError(t, err)
	require.Equal(t, a.Conn.LocalAddr(), la.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	ab, err := a.Dial(ctx, lb.Addr(), transport.WithTestTLS(transport.Config{}))
	require.NoError(t, err)
	atB, err := lb.Accept(ctx)
	require.NoError(t, err)
	ba, err := b.Dial(ctx, la.Addr(), transport.WithTestTLS(transport.Config{}))
	require.NoError(t, err)
	atA, err := la.Accept(ctx)
	require.NoError(t, err)
	require.Equal(t, la.Addr().String(), atB.RemoteAddr().String(), "a dialed from its listening port")
	require.Equal(t, lb.Addr().String(), atA.RemoteAddr().String(), "b dialed from its listening port")

	exchange(t, ab, atB, "a to b")
	exchange(t, ba, atA, "b to a")
	exchange(t, atB, ab, "b back to a")
	exchange(t, atA, ba, "a back to b")

	// Closing one connection leaves the others on the same sockets alone.
	require.NoError(t, ab.Close())
	exchange(t, ba, atA, "still b to a")
	_, err = a.Listen(transport.WithTestTLS(transport.Config{}))
	require.Error(t, err, "a Transport has at most one Listener")
}

// A Transport without a socket, or with a negative limit, is refused by
// its first Listen or Dial with ErrInvalidConfig naming the field.
func TestTransportValidation(t *testing.T) {
	_, err := (&transport.Transport{}).Listen(transport.WithTestTLS(transport.Config{}))
	require.ErrorIs(t, err, transport.ErrInvalidConfig)
	require.ErrorContains(t, err, "Transport.Conn")
	_, err = (&transport.Transport{Conn: udp(t), MaxConnections: -1}).Listen(transport.WithTestTLS(transport.Config{}))
	require.ErrorIs(t, err, transport.ErrInvalidConfig)
	require.ErrorContains(t, err, "Transport.MaxConnections")
	_, err = (&transport.Transport{Conn: udp(t), HandshakeRate: -1}).Dial(context.Background(), &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}, transport.WithTestTLS(transport.Config{}))
	require.ErrorIs(t, err, transport.ErrInvalidConfig)
	require.ErrorContains(t, err, "Transport.HandshakeRate")
}
