//go:build linux

package transport

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Linux takes IP_TOS / IPV6_TCLASS as ancillary data on sendmsg, so one
// socket can mark updates CS7 and the stream best effort.
const perPacketTOSSupported = true

var errInvalidArgument = unix.EINVAL

// tosControlMessage builds the cmsg that sets the TOS byte of one datagram.
func tosControlMessage(v6 bool, tos int) []byte {
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
