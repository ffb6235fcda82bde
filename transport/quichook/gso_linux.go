//go:build linux

package quichook

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Linux's UDP generic segmentation offload (UDP_SEGMENT, Linux 4.18): one
// sendmsg carries a run of equal-sized datagrams, which the kernel splits.
// quic-go does the same on its own sockets; on the hook's socket it cannot
// (it sees a plain net.PacketConn), so the hook does it for the runs its
// pacer releases at once, and a syscall per datagram does not cap the
// throughput.
const gsoSupported = true

// gsoOOB appends the control message that sets the segment size.
func gsoOOB(b []byte, seg int) []byte {
	n := len(b)
	b = append(b, make([]byte, unix.CmsgSpace(2))...)
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[n]))
	h.Level, h.Type = unix.SOL_UDP, unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	binary.NativeEndian.PutUint16(b[n+unix.CmsgLen(0):], uint16(seg))
	return b
}

// gsoSizeOf returns the segment size a UDP_SEGMENT control message in oob
// sets (quic-go's own segmentation offload), or 0.
func gsoSizeOf(oob []byte) int {
	for len(oob) > 0 {
		h, body, rest, err := unix.ParseOneSocketControlMessage(oob)
		if err != nil {
			return 0
		}
		if h.Level == unix.SOL_UDP && h.Type == unix.UDP_SEGMENT && len(body) >= 2 {
			return int(binary.NativeEndian.Uint16(body))
		}
		oob = rest
	}
	return 0
}
