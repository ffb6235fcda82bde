//go:build linux

package transport

import (
	"encoding/binary"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mmsghdr is struct mmsghdr of recvmmsg(2): a msghdr and the length
// received (Go pads it as C does, to the msghdr's alignment).
type mmsghdr struct {
	Hdr unix.Msghdr
	Len uint32
}

// rxBatch receives datagrams with one recvmmsg(2) call. It is our own rather
// than x/net's ReadBatch because that one allocates a *net.UDPAddr for every
// datagram; here the headers, iovecs and address buffers are allocated once
// and the source address is decoded into a netip.AddrPort value, so the
// receive path does not allocate.
type rxBatch struct {
	bufs  [][]byte
	n     []int
	addrs []netip.AddrPort
	hdrs  []mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrAny
	rc    syscall.RawConn
	recvF func(fd uintptr) bool // b.recv, bound once: a method value made per call escapes
	err   error
	got   int
}

func newRxBatch(s *socket, size int) (*rxBatch, error) {
	rc, err := s.conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	b := &rxBatch{
		bufs:  make([][]byte, batchSize),
		n:     make([]int, batchSize),
		addrs: make([]netip.AddrPort, batchSize),
		hdrs:  make([]mmsghdr, batchSize),
		iovs:  make([]unix.Iovec, batchSize),
		names: make([]unix.RawSockaddrAny, batchSize),
		rc:    rc,
	}
	b.recvF = b.recv
	for i := range b.bufs {
		b.bufs[i] = make([]byte, size)
		b.iovs[i].Base = &b.bufs[i][0]
		b.iovs[i].SetLen(size)
		b.hdrs[i].Hdr.Iov = &b.iovs[i]
		b.hdrs[i].Hdr.SetIovlen(1)
		b.hdrs[i].Hdr.Name = (*byte)(unsafe.Pointer(&b.names[i]))
	}
	return b, nil
}

// read blocks until at least one datagram arrives and returns how many.
func (b *rxBatch) read() (int, error) {
	for i := range b.hdrs {
		b.hdrs[i].Hdr.Namelen = uint32(unsafe.Sizeof(b.names[i]))
		b.hdrs[i].Hdr.Flags = 0
	}
	b.err, b.got = nil, 0
	if err := b.rc.Read(b.recvF); err != nil {
		return 0, err
	}
	if b.err != nil {
		return 0, b.err
	}
	for i := range b.got {
		b.n[i] = int(b.hdrs[i].Len)
		b.addrs[i] = sockaddrToAddrPort(&b.names[i])
	}
	return b.got, nil
}

// recv is the raw-conn callback: false asks the runtime poller to wait.
func (b *rxBatch) recv(fd uintptr) bool {
	n, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&b.hdrs[0])), uintptr(len(b.hdrs)), unix.MSG_DONTWAIT, 0, 0)
	switch {
	case errno == unix.EAGAIN || errno == unix.EWOULDBLOCK:
		return false
	case errno == unix.EINTR:
		return false
	case errno != 0:
		b.err = errno
		return true
	}
	b.got = int(n)
	return true
}

func sockaddrToAddrPort(sa *unix.RawSockaddrAny) netip.AddrPort {
	switch sa.Addr.Family {
	case unix.AF_INET:
		p := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&p.Port))[:])
		return netip.AddrPortFrom(netip.AddrFrom4(p.Addr), port)
	case unix.AF_INET6:
		p := (*unix.RawSockaddrInet6)(unsafe.Pointer(sa))
		port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&p.Port))[:])
		return netip.AddrPortFrom(netip.AddrFrom16(p.Addr).Unmap(), port)
	}
	return netip.AddrPort{}
}
