package session

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/internal/wire"
)

// The client addresses the server by the ID the Accept gave; the server
// answers to both its own ID and the client's (a late handshake packet),
// and sends with the client's.
func TestServerChosenIDs(t *testing.T) {
	cli, err := New(Config{}, 5, true, 0)
	require.NoError(t, err)
	srv, err := New(Config{ServerConnID: 77}, 5, false, 0)
	require.NoError(t, err)
	buf := make([]byte, 0, 2048)
	d, _, ok := cli.Poll(0, 0, buf)
	require.True(t, ok)
	h, _, err := wire.ParseHeader(d)
	require.NoError(t, err)
	require.Equal(t, uint64(5), h.ConnID, "the Initial carries the client's ID")
	require.True(t, srv.Handle(0, 0, d))
	d, _, ok = srv.Poll(0, 0, buf)
	require.True(t, ok)
	h, _, err = wire.ParseHeader(d)
	require.NoError(t, err)
	require.Equal(t, wire.TypeAccept, h.Type)
	require.Equal(t, uint64(5), h.ConnID, "the server sends with the client's ID")
	require.True(t, cli.Handle(0, 0, d))
	require.Equal(t, uint64(77), cli.ServerConnID())

	cli.SendUpdate(0, 0, []byte("x"))
	d, _, ok = cli.Poll(1, 1, buf)
	require.True(t, ok)
	h, _, err = wire.ParseHeader(d)
	require.NoError(t, err)
	require.Equal(t, uint64(77), h.ConnID, "after the Accept the client sends with the server's ID")
	require.True(t, srv.Handle(1, 1, d))
	old := wire.AppendHeader(nil, wire.Header{Type: wire.TypePing, ConnID: 5, PN: 9})
	require.True(t, srv.Handle(1, 1, old), "the client's own ID still reaches the server")
	require.False(t, cli.Handle(1, 1, wire.AppendHeader(nil, wire.Header{Type: wire.TypePing, ConnID: 77, PN: 9})),
		"the client answers to its own ID only")
}
