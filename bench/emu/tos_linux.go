//go:build linux

package emu

import (
	"encoding/binary"
	"net"
	"syscall"
	"unsafe"
)

// On Linux the relay reads the TOS byte (IPv4) or traffic class (IPv6) of
// every arriving datagram from the IP_TOS / IPV6_TCLASS control message
// the kernel attaches once IP_RECVTOS / IPV6_RECVTCLASS is set, and marks
// the datagram it sends with the same byte by passing an IP_TOS /
// IPV6_TCLASS control message to sendmsg (per packet; the kernel reads
// IP_TOS in ip_cmsg_send). golang.org/x/net/ipv4 has no TOS control
// message, so this file builds and parses the cmsg itself.

// tosSupported reports whether this platform reads and re-marks TOS.
const tosSupported = true

// oobSize is the control-message buffer for one received datagram: room
// for a TOS and a traffic-class message with their headers.
var oobSize = 2 * syscall.CmsgSpace(4)

// cmsgHdrLen is the aligned size of a control-message header.
var cmsgHdrLen = syscall.CmsgLen(0)

// cmsgAlign rounds n up to the kernel's cmsg alignment (a pointer's size).
func cmsgAlign(n int) int {
	const a = int(unsafe.Sizeof(uintptr(0)))
	return (n + a - 1) &^ (a - 1)
}

// enableRecvTOS asks the kernel to report each datagram's TOS byte. v4
// sockets get IP_RECVTOS; v6 sockets IPV6_RECVTCLASS and, for v4-mapped
// traffic on a dual-stack socket, IP_RECVTOS too (best effort).
func enableRecvTOS(c *net.UDPConn, v4 bool) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		if v4 {
			serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_RECVTOS, 1)
			return
		}
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IPV6, syscall.IPV6_RECVTCLASS, 1)
		_ = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_RECVTOS, 1)
	})
	if err != nil {
		return err
	}
	return serr
}

// parseTOS returns the TOS byte carried by the control messages in oob,
// or 0 if there is none. Malformed input yields 0, never a panic.
func parseTOS(oob []byte) uint8 {
	// The header is read field by field (Len is a size_t: 8 bytes on
	// 64-bit, 4 on 32-bit; then int32 level and type), so the buffer need
	// not be aligned.
	const lenSize = int(unsafe.Sizeof(syscall.Cmsghdr{}.Len))
	for len(oob) >= cmsgHdrLen && cmsgHdrLen >= lenSize+8 {
		var l uint64
		if lenSize == 8 {
			l = binary.NativeEndian.Uint64(oob)
		} else {
			l = uint64(binary.NativeEndian.Uint32(oob))
		}
		level := int32(binary.NativeEndian.Uint32(oob[lenSize:]))
		typ := int32(binary.NativeEndian.Uint32(oob[lenSize+4:]))
		if l < uint64(cmsgHdrLen) || l > uint64(len(oob)) {
			return 0
		}
		data := oob[cmsgHdrLen:l]
		switch {
		case level == syscall.IPPROTO_IP && typ == syscall.IP_TOS && len(data) >= 1:
			return data[0] // a single byte (ip_cmsg_recv_tos)
		case level == syscall.IPPROTO_IPV6 && typ == syscall.IPV6_TCLASS && len(data) >= 4:
			return uint8(binary.NativeEndian.Uint32(data)) // an int
		}
		next := cmsgAlign(int(l))
		if next >= len(oob) {
			return 0
		}
		oob = oob[next:]
	}
	return 0
}

// tosOOB writes into buf (at least oobSize bytes) the control message that
// marks one sent datagram with tos and returns it. v4 chooses IP_TOS
// (IPv4 and v4-mapped destinations) over IPV6_TCLASS.
func tosOOB(buf []byte, tos uint8, v4 bool) []byte {
	n := syscall.CmsgSpace(4)
	if len(buf) < n {
		return nil
	}
	clear(buf[:n])
	h := (*syscall.Cmsghdr)(unsafe.Pointer(&buf[0]))
	h.Level, h.Type = syscall.IPPROTO_IPV6, syscall.IPV6_TCLASS
	if v4 {
		h.Level, h.Type = syscall.IPPROTO_IP, syscall.IP_TOS
	}
	h.SetLen(syscall.CmsgLen(4))
	binary.NativeEndian.PutUint32(buf[cmsgHdrLen:], uint32(tos))
	return buf[:n]
}
