//go:build linux

package cmsg

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The messages parse back as the kernel reads them, and a segment size
// is found behind a TOS message as the hook finds quic-go's.
func TestControlMessagesRoundTrip(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		b := TOS(v6, 0xb8)
		ms, err := unix.ParseSocketControlMessage(b)
		require.NoError(t, err)
		require.Len(t, ms, 1)
		wantLevel, wantType := int32(unix.IPPROTO_IP), int32(unix.IP_TOS)
		if v6 {
			wantLevel, wantType = unix.IPPROTO_IPV6, unix.IPV6_TCLASS
		}
		require.Equal(t, wantLevel, ms[0].Header.Level)
		require.Equal(t, wantType, ms[0].Header.Type)
		require.Equal(t, uint32(0xb8), binary.NativeEndian.Uint32(ms[0].Data))
		require.Zero(t, SegmentSize(b), "no segment size in a TOS message")

		both := AppendSegmentSize(b, 1337)
		require.Equal(t, b, both[:len(b)], "appended, not rewritten")
		require.Equal(t, 1337, SegmentSize(both))
	}
	require.Zero(t, SegmentSize(nil))
	require.Zero(t, SegmentSize([]byte{1, 2, 3}), "malformed")
}
