//go:build linux

package transport

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Linux ≥ 4.18 segments UDP sends given a UDP_SEGMENT control message.
const gsoSupported = true

// appendSegmentControl appends the UDP_SEGMENT cmsg that makes the kernel
// cut a message into datagrams of size bytes.
func appendSegmentControl(oob []byte, size int) []byte {
	var zeros [32]byte
	start := len(oob)
	space := unix.CmsgSpace(2)
	oob = append(oob, zeros[:space]...)
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[start]))
	h.Level, h.Type = unix.SOL_UDP, unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	binary.NativeEndian.PutUint16(oob[start+unix.CmsgLen(0):], uint16(size))
	return oob
}
