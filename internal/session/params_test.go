package session

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/internal/wire"
)

// The transport parameters keep their six-byte version prefix, and peers
// from before the parameter list keep working: a client that sends the
// six bytes alone gets the six bytes alone back (it would fail on
// anything longer), and a server's six bytes alone give a client no
// token and no error.
func TestTransportParamsCompatibility(t *testing.T) {
	require.Equal(t, []byte{'f', 'r', 'e', 's', 'h', wire.Version}, transportParams, "the version prefix is unchanged")
	tok := ResetToken(&resetKey, 1)

	old, err := parseParams(transportParams, true)
	require.NoError(t, err, "a v1 client's parameters")
	require.Equal(t, transportParams, serverParams(old, &tok), "a v1 client gets exactly what a v1 server sent")

	cli := clientParams()
	require.True(t, bytes.HasPrefix(cli, transportParams))
	p, err := parseParams(cli, true)
	require.NoError(t, err)
	require.True(t, p.resetCapable)
	srv := serverParams(p, &tok)
	require.True(t, bytes.HasPrefix(srv, transportParams))
	got, err := parseParams(srv, false)
	require.NoError(t, err)
	require.True(t, got.hasToken)
	require.Equal(t, tok, got.resetToken)
	require.Equal(t, transportParams, serverParams(p, nil), "no token, nothing after the version")

	got, err = parseParams(transportParams, false)
	require.NoError(t, err, "a v1 server's parameters")
	require.False(t, got.hasToken, "a v1 server gives no token: no reset, the connection works")

	// Parameters this version does not know are skipped (RFC 9000 §7.4.2).
	unknown := appendParam(appendParam(bytes.Clone(srv), 0x7f00, []byte("later")), 0x0003, nil)
	got, err = parseParams(unknown, false)
	require.NoError(t, err)
	require.Equal(t, tok, got.resetToken)
}

// Malformed parameter lists fail the handshake, with a reason.
func TestTransportParamsMalformed(t *testing.T) {
	tok := make([]byte, wire.StatelessResetTokenLen)
	withToken := appendParam(bytes.Clone(transportParams), paramResetToken, tok)
	for _, tc := range []struct {
		name       string
		b          []byte
		fromClient bool
		want       string
	}{
		{"empty", nil, false, "another protocol version"},
		{"version 1", []byte{'f', 'r', 'e', 's', 'h', 1}, false, "another protocol version"},
		{"another protocol", []byte("quic\x00\x01"), true, "another protocol version"},
		{"three bytes of a parameter", append(bytes.Clone(transportParams), 0, 1, 0), false, "too few"},
		{"value cut short", withToken[:len(withToken)-1], false, "promises 16"},
		{"token twice", appendParam(bytes.Clone(withToken), paramResetToken, tok), false, "twice"},
		{"token of 15 bytes", appendParam(bytes.Clone(transportParams), paramResetToken, tok[:15]), false, "of 15 bytes"},
		{"token from a client", withToken, true, "from a client"},
		{"announcement from a server", clientParams(), false, "from a server"},
		{"announcement with a value", appendParam(bytes.Clone(transportParams), paramResetCapable, []byte{1}), true, "with a value"},
		{"announcement twice", appendParam(clientParams(), paramResetCapable, nil), true, "twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseParams(tc.b, tc.fromClient)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// FuzzTransportParams: no input panics, and an accepted list re-encodes
// to a prefix-equal list that parses the same (unknown parameters
// dropped).
func FuzzTransportParams(f *testing.F) {
	tok := ResetToken(&resetKey, 1)
	f.Add(transportParams, false)
	f.Add(clientParams(), true)
	f.Add(serverParams(peerParams{resetCapable: true}, &tok), false)
	f.Add(appendParam(bytes.Clone(transportParams), 0x7f00, []byte("x")), false)
	f.Add(binary.BigEndian.AppendUint16(bytes.Clone(transportParams), 2), false)
	f.Fuzz(func(t *testing.T, b []byte, fromClient bool) {
		p, err := parseParams(b, fromClient)
		if err != nil {
			return
		}
		require.True(t, bytes.HasPrefix(b, transportParams))
		require.False(t, p.hasToken && fromClient, "a client's token accepted")
		require.False(t, p.resetCapable && !fromClient, "a server's announcement accepted")
		var enc []byte
		if fromClient {
			enc = serverParams(peerParams{}, nil) // the prefix
			if p.resetCapable {
				enc = clientParams()
			}
		} else {
			enc = serverParams(peerParams{resetCapable: p.hasToken}, &p.resetToken)
		}
		again, err := parseParams(enc, fromClient)
		require.NoError(t, err)
		require.Equal(t, p, again)
	})
}

// A client from before the parameter list (it sends the six version bytes
// alone and fails on anything else) completes its handshake with a server
// that has a token: the server sends it the six bytes alone, and the
// connection works, without a reset.
func TestTransportParamsV1ClientHandshakes(t *testing.T) {
	defer func(f func() []byte) { clientParams = f }(clientParams)
	clientParams = func() []byte { return bytes.Clone(transportParams) }
	tok := ResetToken(&resetKey, pairConnID)
	srv := secure(t)
	srv.StatelessResetToken = &tok
	cli := secure(t)
	p := NewPair(t, cli, srv, Link{Delay: time.Millisecond})
	p.Open()
	require.Equal(t, transportParams, p.Srv.localParams(), "exactly what a v1 server sent, all a v1 client accepts")
	require.False(t, p.Cli.rst.hasToken)
	_, err := p.Cli.Write([]byte("v1"))
	require.NoError(t, err)
	buf := make([]byte, 8)
	var n int
	require.True(t, p.DriveUntil(func() bool { n, _ = p.Srv.Read(buf); return n > 0 }, time.Second))
	require.Equal(t, "v1", string(buf[:n]))
}
