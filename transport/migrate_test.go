package transport

import (
	"bytes"
	"context"
	"io"
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
	require.Zero(t, st.MigrationsReverted)
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

// A Migrate that gives up (ctx ended before the new port heard back)
// leaves the connection on its old socket, both ways, even if the server
// had already moved to the new port: the client's next packet from the
// old one brings it back.
func TestMigrateGivesUpAndStays(t *testing.T) {
	l, cli, srv := pair(t, Config{}, Config{})
	defer l.Close()
	defer cli.Close()
	oldLocal := cli.LocalAddr().String()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, cli.Migrate(ctx), context.Canceled)
	require.Equal(t, oldLocal, cli.LocalAddr().String())
	rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer rcancel()
	for i := range 3 { // a few rounds: the first may go to a port the server moved to
		require.NoError(t, cli.SendUpdate([]byte{byte(i)}))
		require.NoError(t, srv.SendUpdate([]byte{byte(i)}))
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, cli.SendUpdate([]byte("up")))
	u, err := srv.ReadUpdate(rctx)
	require.NoError(t, err)
	require.Equal(t, oldLocal, srv.RemoteAddr().String(), "the server is back on the old port")
	require.NoError(t, srv.SendUpdate([]byte("down")))
	require.Eventually(t, func() bool {
		u, err = cli.ReadUpdate(rctx)
		return err == nil && string(u.Payload) == "down"
	}, 10*time.Second, time.Millisecond)
}
