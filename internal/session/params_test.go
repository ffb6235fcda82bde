package session

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/internal/wire"
)

// The transport parameters keep their six-byte version prefix; both ends
// send their version_information after it, a server with a token its
// token too. The prefix alone (a version 2 end built before
// version_information) gives no token, no version_information and no
// error.
func TestTransportParamsRoundTrip(t *testing.T) {
	require.Equal(t, []byte{'f', 'r', 'e', 's', 'h', wire.Version}, transportParams, "the version prefix")
	tok := ResetToken(&resetKey, 1)
	ours := ourVersions()
	require.Equal(t, uint8(wire.Version), ours.chosen)
	require.Equal(t, wire.Versions(), ours.list())

	got, err := parseParams(clientParams(time.Millisecond, true), true)
	require.NoError(t, err)
	require.True(t, got.hasVersions)
	require.Equal(t, ours, got.versions)
	srv := serverParams(&tok, time.Millisecond, true)
	require.True(t, bytes.HasPrefix(srv, transportParams))
	got, err = parseParams(srv, false)
	require.NoError(t, err)
	require.True(t, got.hasToken)
	require.Equal(t, tok, got.resetToken)
	require.Equal(t, ours, got.versions)
	got, err = parseParams(serverParams(nil, time.Millisecond, true), false)
	require.NoError(t, err)
	require.False(t, got.hasToken, "no token")
	require.True(t, got.hasVersions)
	got, err = parseParams(transportParams, false)
	require.NoError(t, err)
	require.False(t, got.hasToken || got.hasVersions || got.hasMinAckDelay)

	// min_ack_delay: the consent to AckFrequency, sent only with it.
	got, err = parseParams(clientParams(1500*time.Microsecond, true), true)
	require.NoError(t, err)
	require.True(t, got.hasMinAckDelay)
	require.Equal(t, 1500*time.Microsecond, got.minAckDelay)
	got, err = parseParams(serverParams(&tok, time.Millisecond, false), false)
	require.NoError(t, err)
	require.False(t, got.hasMinAckDelay, "no consent, no parameter")
	got, err = parseParams(clientParams(time.Millisecond, false), true)
	require.NoError(t, err)
	require.False(t, got.hasMinAckDelay, "no consent, no parameter")

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
		{"version_information twice", appendParam(clientParams(time.Millisecond, true), paramVersionInfo, []byte{2, 2}), true, "twice"},
		{"version_information empty", appendParam(bytes.Clone(transportParams), paramVersionInfo, nil), true, "names no version"},
		{"version_information without a list", appendParam(bytes.Clone(transportParams), paramVersionInfo, []byte{2}), false, "names no version"},
		{"version_information choosing what it does not list", appendParam(bytes.Clone(transportParams), paramVersionInfo, []byte{2, 1, 3}), false, "does not list"},
		{"version_information with version 0", appendParam(bytes.Clone(transportParams), paramVersionInfo, []byte{2, 2, 0}), false, "version 0"},
		{"min_ack_delay twice", appendMinAckDelay(clientParams(time.Millisecond, true), time.Millisecond), true, "twice"},
		{"min_ack_delay of 3 bytes", appendParam(bytes.Clone(transportParams), paramMinAckDelay, []byte{0, 0, 1}), false, "of 3 bytes"},
		{"min_ack_delay of 2^24 µs", appendMinAckDelay(bytes.Clone(transportParams), 1<<24*time.Microsecond), false, "2^24"},
		{"version_information of 33 versions", appendParam(bytes.Clone(transportParams), paramVersionInfo, bytes.Repeat([]byte{2}, 34)), false, "at most 32"},
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
	f.Add(clientParams(time.Millisecond, true), true)
	f.Add(serverParams(&tok, time.Millisecond, true), false)
	f.Add(appendParam(bytes.Clone(transportParams), 0x7f00, []byte("x")), false)
	f.Add(binary.BigEndian.AppendUint16(bytes.Clone(transportParams), 2), false)
	f.Add(appendParam(bytes.Clone(transportParams), paramVersionInfo, []byte{3, 2, 3}), true)
	f.Fuzz(func(t *testing.T, b []byte, fromClient bool) {
		p, err := parseParams(b, fromClient)
		if err != nil {
			return
		}
		require.True(t, bytes.HasPrefix(b, transportParams))
		require.False(t, p.hasToken && fromClient, "a client's token accepted")
		again, err := parseParams(p.append(), fromClient)
		require.NoError(t, err)
		require.Equal(t, p, again)
	})
}

// FuzzVersionInfo: no input panics; an accepted version_information
// chose a version it lists, lists 1 to 32 versions and no version 0, and
// re-encodes to the same bytes.
func FuzzVersionInfo(f *testing.F) {
	ours := ourVersions()
	f.Add(appendVersionInfo(nil, &ours))
	f.Add([]byte{3, 3, 2, 1})
	f.Add([]byte{2})
	f.Add([]byte{2, 0})
	f.Add([]byte{4, 3, 2})
	f.Add(bytes.Repeat([]byte{7}, 34))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := parseVersionInfo(b)
		if err != nil {
			return
		}
		require.NotZero(t, v.chosen)
		require.Contains(t, v.list(), v.chosen)
		require.NotContains(t, v.list(), uint8(0))
		require.GreaterOrEqual(t, len(v.list()), 1)
		require.LessOrEqual(t, len(v.list()), wire.MaxVersions)
		require.Equal(t, b, appendVersionInfo(nil, &v))
	})
}
