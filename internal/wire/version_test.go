package wire

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func versionNegotiations() []VersionNegotiation {
	return []VersionNegotiation{
		{ConnID: 0x0123456789abcdef, Timestamp: 1_700_000_000_000_000, Versions: []uint8{Version}},
		{ConnID: 1, Versions: []uint8{}},
		{ConnID: ^uint64(0), Timestamp: -1, Versions: make([]uint8, MaxVersions)},
	}
}

func TestVersionNegotiationRoundTrip(t *testing.T) {
	for _, tc := range versionNegotiations() {
		b := AppendVersionNegotiation(nil, &tc)
		var v VersionNegotiation
		require.NoError(t, ParseVersionNegotiation(b, &v))
		require.Equal(t, tc, v)
		// Every version's receiver tells it from its own packets.
		_, _, err := ParseHeader(b)
		require.ErrorIs(t, err, ErrVersion)
		ver, id, ok := PeekVersion(b)
		require.True(t, ok)
		require.Equal(t, uint8(0), ver)
		require.Equal(t, tc.ConnID, id)
	}
}

func TestVersionNegotiationRejects(t *testing.T) {
	good := AppendVersionNegotiation(nil, &VersionNegotiation{ConnID: 7, Versions: []uint8{2, 3}})
	long := AppendVersionNegotiation(nil, &VersionNegotiation{ConnID: 7})
	long[HeaderLen] = MaxVersions + 1
	for _, tc := range []rejectCase{
		{"short", good[:HeaderLen], ErrShort},
		{"a version 2 packet", set(good, 0, Version), ErrVersion},
		{"another type", set(good, 1, byte(TypePing)), ErrType},
		{"flags", set(good, 2, 1), ErrReserved},
		{"epoch", set(good, 3, 1), ErrReserved},
		{"packet number", set(good, 19, 1), ErrPacketNum},
		{"count too large", append(long, make([]byte, MaxVersions+1)...), ErrTooMany},
		{"count longer than the list", good[:len(good)-1], ErrLength},
		{"trailing byte", append(good, 0), ErrLength},
	} {
		var v VersionNegotiation
		require.Equal(t, tc.want, ParseVersionNegotiation(tc.dg, &v), tc.name)
	}
}

func TestPeekVersionShort(t *testing.T) {
	_, _, ok := PeekVersion(make([]byte, 11))
	require.False(t, ok)
	v, id, ok := PeekVersion([]byte{1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9})
	require.True(t, ok)
	require.Equal(t, uint8(1), v)
	require.Equal(t, uint64(9), id)
}
