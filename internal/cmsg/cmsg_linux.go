//go:build linux

package cmsg

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"
)

// PerPacketTOS: Linux takes IP_TOS / IPV6_TCLASS as ancillary data on
// sendmsg, so one socket can send each datagram with its own class.
const PerPacketTOS = true

// GSO: Linux (4.18 on) cuts one sendmsg into equal-sized datagrams given
// a UDP_SEGMENT control message (generic segmentation offload).
const GSO = true

// TOS builds the control message that sets one datagram's TOS byte (IPv4)
// or traffic class (IPv6) to tos (the DSCP shifted left by 2).
func TOS(v6 bool, tos int) []byte {
	b := make([]byte, unix.CmsgSpace(4))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	if v6 {
		h.Level, h.Type = unix.IPPROTO_IPV6, unix.IPV6_TCLASS
	} else {
		h.Level, h.Type = unix.IPPROTO_IP, unix.IP_TOS
	}
	h.SetLen(unix.CmsgLen(4))
	binary.NativeEndian.PutUint32(b[unix.CmsgLen(0):], uint32(tos))
	return b
}

// AppendSegmentSize appends the UDP_SEGMENT control message that makes
// the kernel cut a message into datagrams of size bytes (the last may be
// shorter).
func AppendSegmentSize(oob []byte, size int) []byte {
	var zeros [32]byte
	start := len(oob)
	oob = append(oob, zeros[:unix.CmsgSpace(2)]...)
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[start]))
	h.Level, h.Type = unix.SOL_UDP, unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	binary.NativeEndian.PutUint16(oob[start+unix.CmsgLen(0):], uint16(size))
	return oob
}

// SegmentSize returns the segment size a UDP_SEGMENT control message in
// oob sets, or 0 if oob has none (or is malformed).
func SegmentSize(oob []byte) int {
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
