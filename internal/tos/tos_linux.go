//go:build linux

package tos

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"
)

// PerPacket: Linux takes IP_TOS / IPV6_TCLASS as ancillary data on
// sendmsg, so one socket can send each datagram with its own class.
const PerPacket = true

// ControlMessage builds the control message that sets one datagram's TOS
// byte (IPv4) or traffic class (IPv6).
func ControlMessage(v6 bool, tos int) []byte {
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
