package transport

import (
	"bytes"
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A client moves to a new local port in the middle of an upload: the
// server follows (one migration), the stream arrives whole, and the
// client's LocalAddr names the new socket.
func TestMigrateClientToNewPort(t *testing.T) {
	l, cli, srv := pair(t, Config{}, Config{})
	defer l.Close()
	data := randomBytes(4<<20, 7)
	done := make(chan error, 1)
	go func() {
		_, err := cli.Write(data)
		if err == nil {
			err = cli.CloseWrite()
		}
		done <- err
	}()
	got := make([]byte, 0, len(data))
	buf := make([]byte, 64<<10)
	for len(got) < 1<<20 {
		n, err := srv.Read(buf)
		require.NoError(t, err)
		got = append(got, buf[:n]...)
	}
	oldLocal, oldRemote := cli.LocalAddr().String(), srv.RemoteAddr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, cli.Migrate(ctx))
	require.NotEqual(t, oldLocal, cli.LocalAddr().String())
	rest, err := io.ReadAll(srv)
	require.NoError(t, err)
	require.NoError(t, <-done)
	require.True(t, bytes.Equal(data, append(got, rest...)), "byte-exact")
	require.Equal(t, cli.LocalAddr().String(), srv.RemoteAddr().String(), "the server follows")
	require.NotEqual(t, oldRemote, srv.RemoteAddr().String())
	st := srv.Stats()
	require.Equal(t, int64(1), st.Migrations)
	// A datagram that leaves the old socket as the first leaves the new
	// one can reach the server after it: the server then starts to
	// validate the old address again and abandons that when the new
	// address's next datagram comes. One such abandoned validation, no
	// more (1 run in 40 under -race, before and after ACK frequency).
	require.LessOrEqual(t, st.MigrationsReverted, int64(1))
	require.NoError(t, cli.Close())
}

// Migrate refuses what cannot move: an Insecure connection (the server
// would drop its packets from the new port), a server's connection.
func TestMigrateRefused(t *testing.T) {
	l, cli, srv := pair(t, Config{Insecure: true}, Config{Insecure: true})
	defer l.Close()
	defer cli.Close()
	ctx := context.Background()
	require.ErrorContains(t, cli.Migrate(ctx), "Insecure")
	require.ErrorContains(t, srv.Migrate(ctx), "package Dial")
	// The connection is untouched.
	require.NoError(t, cli.SendUpdate([]byte("x")))
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := srv.ReadUpdate(rctx)
	require.NoError(t, err)
}

// A Migrate that gives up (ctx ended before the new port heard back: here
// its socket sends into a void) leaves the connection on its old socket,
// both ways.
func TestMigrateGivesUpAndStays(t *testing.T) {
	l, cli, srv := pair(t, Config{}, Config{})
	defer l.Close()
	defer cli.Close()
	void, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer void.Close()
	migratePeer = func(*net.UDPAddr) *net.UDPAddr { return void.LocalAddr().(*net.UDPAddr) }
	defer func() { migratePeer = func(p *net.UDPAddr) *net.UDPAddr { return p } }()
	oldLocal := cli.LocalAddr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, cli.Migrate(ctx), context.DeadlineExceeded)
	require.Equal(t, oldLocal, cli.LocalAddr().String())
	rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer rcancel()
	require.NoError(t, cli.SendUpdate([]byte("up")))
	u, err := srv.ReadUpdate(rctx)
	require.NoError(t, err)
	require.Equal(t, oldLocal, srv.RemoteAddr().String(), "the server stayed on the old port")
	require.NoError(t, srv.SendUpdate([]byte("down")))
	require.Eventually(t, func() bool {
		u, err = cli.ReadUpdate(rctx)
		return err == nil && string(u.Payload) == "down"
	}, 10*time.Second, time.Millisecond)
}

// Close while a Migrate is under way ends both, leaving no goroutine or
// socket behind (goleak checks the package).
func TestMigrateDuringClose(t *testing.T) {
	l, cli, _ := pair(t, Config{}, Config{})
	defer l.Close()
	errc := make(chan error, 1)
	go func() { errc <- cli.Migrate(context.Background()) }()
	require.NoError(t, cli.Close())
	select {
	case <-errc: // moved before the close, or ended by it
	case <-time.After(10 * time.Second):
		t.Fatal("Migrate did not end with the connection")
	}
}
