package session

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/internal/wire"
)

// The transport parameters keep their six-byte version prefix; a server
// with a token sends it after the prefix, and one without sends the prefix
// alone, which gives the client no token and no error.
func TestTransportParamsRoundTrip(t *testing.T) {
	require.Equal(t, []byte{'f', 'r', 'e', 's', 'h', wire.Version}, transportParams, "the version prefix")
	tok := ResetToken(&resetKey, 1)

	_, err := parseParams(clientParams(), true)
	require.NoError(t, err)
	srv := serverParams(&tok)
	require.True(t, bytes.HasPrefix(srv, transportParams))
	got, err := parseParams(srv, false)
	require.NoError(t, err)
	require.True(t, got.hasToken)
	require.Equal(t, tok, got.resetToken)
	require.Equal(t, transportParams, serverParams(nil), "no token, nothing after the version")
	got, err = parseParams(transportParams, false)
	require.NoError(t, err)
	require.False(t, got.hasToken)

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
	f.Add(serverParams(&tok), false)
	f.Add(appendParam(bytes.Clone(transportParams), 0x7f00, []byte("x")), false)
	f.Add(binary.BigEndian.AppendUint16(bytes.Clone(transportParams), 2), false)
	f.Fuzz(func(t *testing.T, b []byte, fromClient bool) {
		p, err := parseParams(b, fromClient)
		if err != nil {
			return
		}
		require.True(t, bytes.HasPrefix(b, transportParams))
		require.False(t, p.hasToken && fromClient, "a client's token accepted")
		enc := clientParams()
		if p.hasToken {
			enc = serverParams(&p.resetToken)
		}
		again, err := parseParams(enc, fromClient)
		require.NoError(t, err)
		require.Equal(t, p, again)
	})
}
