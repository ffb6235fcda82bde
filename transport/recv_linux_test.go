//go:build linux

package transport

import (
	"bytes"
	"encoding/binary"
	"net"
	"os"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/fresh-udp/fresh/internal/cmsg"
)

// A GSO send of three datagrams on loopback reaches a UDP_GRO socket as one
// buffer; read must hand back the three datagrams, in order and intact, and
// drop one larger than the endpoint accepts.
func TestRxBatchSplitsGRO(t *testing.T) {
	rconn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer rconn.Close()
	rx, err := newRxBatch(&socket{pc: rconn, udp: rconn}, 1200, false)
	require.NoError(t, err)
	if !rx.gro {
		t.Skip("kernel without UDP_GRO")
	}
	sconn, err := net.DialUDP("udp4", nil, rconn.LocalAddr().(*net.UDPAddr))
	require.NoError(t, err)
	defer sconn.Close()

	// 1000 + 1000 + 400 bytes in one UDP_SEGMENT message.
	var payload []byte
	for i, n := range []int{1000, 1000, 400} {
		payload = append(payload, bytes.Repeat([]byte{byte('a' + i)}, n)...)
	}
	_, _, err = sconn.WriteMsgUDP(payload, cmsg.AppendSegmentSize(nil, 1000), nil)
	require.NoError(t, err)
	dgs, err := rx.read()
	require.NoError(t, err)
	require.Len(t, dgs, 3)
	for i, want := range []int{1000, 1000, 400} {
		require.Len(t, dgs[i].b, want)
		require.Equal(t, bytes.Repeat([]byte{byte('a' + i)}, want), dgs[i].b)
		require.Equal(t, sconn.LocalAddr().(*net.UDPAddr).AddrPort(), dgs[i].addr)
	}

	// Segments larger than MaxDatagram are not truncated: they come out
	// empty, for the receiver to count as malformed.
	_, _, err = sconn.WriteMsgUDP(bytes.Repeat([]byte{'x'}, 2*1300), cmsg.AppendSegmentSize(nil, 1300), nil)
	require.NoError(t, err)
	_, err = sconn.Write([]byte("small"))
	require.NoError(t, err)
	var got [][]byte
	for len(got) < 3 {
		dgs, err = rx.read()
		require.NoError(t, err)
		for _, d := range dgs {
			got = append(got, d.b)
		}
	}
	require.Equal(t, [][]byte{{}, {}, []byte("small")}, got)
}

func TestGROSize(t *testing.T) {
	ctl := func(level, typ int32, v int32) []byte {
		b := make([]byte, unix.CmsgSpace(4))
		h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
		h.Level, h.Type = level, typ
		h.SetLen(unix.CmsgLen(4))
		binary.NativeEndian.PutUint32(b[unix.CmsgLen(0):], uint32(v))
		return b
	}
	require.Equal(t, 1200, groSize(ctl(unix.SOL_UDP, unix.UDP_GRO, 1200)))
	require.Equal(t, 0, groSize(ctl(unix.SOL_IP, unix.IP_TOS, 1200)), "another cmsg")
	require.Equal(t, 1400, groSize(append(ctl(unix.SOL_IP, unix.IP_TOS, 7), ctl(unix.SOL_UDP, unix.UDP_GRO, 1400)...)), "second in the chain")
	require.Equal(t, 0, groSize(nil))
	bad := ctl(unix.SOL_UDP, unix.UDP_GRO, 1200)
	(*unix.Cmsghdr)(unsafe.Pointer(&bad[0])).Len = 1 << 20
	require.Equal(t, 0, groSize(bad), "length past the buffer")
}

// FuzzGROSize walks arbitrary control data as the receive path does: no
// panic, and a size only from a well-formed UDP_GRO message.
func FuzzGROSize(f *testing.F) {
	b := make([]byte, unix.CmsgSpace(4))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = unix.SOL_UDP, unix.UDP_GRO
	h.SetLen(unix.CmsgLen(4))
	binary.NativeEndian.PutUint32(b[unix.CmsgLen(0):], 1200)
	f.Add(b)
	f.Add(append(append([]byte(nil), b...), b...))
	f.Add([]byte{})
	f.Add(b[:unix.CmsgLen(0)])
	f.Fuzz(func(t *testing.T, c []byte) {
		// The kernel hands over 8-byte aligned control data; so does
		// newRxBatch. Copy into an aligned buffer as it would be.
		buf := make([]uint64, (len(c)+7)/8)
		al := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(buf))), len(buf)*8)[:len(c)]
		copy(al, c)
		_ = groSize(al)
	})
}

// A client's batch (pooled) has buffers only while it reads: none before
// the first read, none after a read that found nothing and waited, and the
// datagrams it returns are intact.
func TestRxBatchPooledHoldsBuffersOnlyWhileReading(t *testing.T) {
	rconn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer rconn.Close()
	rx, err := newRxBatch(&socket{pc: rconn, udp: rconn}, 1200, true)
	require.NoError(t, err)
	require.Nil(t, rx.held, "no buffers before the first read")
	kept, err := newRxBatch(&socket{pc: rconn, udp: rconn}, 1200, false)
	require.NoError(t, err)
	require.NotNil(t, kept.held, "a listener's batch keeps its buffers")

	sconn, err := net.DialUDP("udp4", nil, rconn.LocalAddr().(*net.UDPAddr))
	require.NoError(t, err)
	defer sconn.Close()
	_, err = sconn.Write([]byte("ping"))
	require.NoError(t, err)
	dgs, err := rx.read()
	require.NoError(t, err)
	require.Len(t, dgs, 1)
	require.Equal(t, []byte("ping"), dgs[0].b)
	require.NotNil(t, rx.held, "the datagrams alias the buffers until the next read")

	require.NoError(t, rconn.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
	_, err = rx.read()
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	require.Nil(t, rx.held, "a read that waited gave its buffers back")
}
