//go:build linux

package transport

import (
	"encoding/binary"
	"net/netip"
	"sync"
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

// Receive offload (UDP_GRO, Linux ≥ 5.0): the kernel may hand several
// datagrams of one flow to the socket as one buffer plus their common size
// in a control message, instead of one recvmmsg slot each. On loopback a
// GSO send then reaches us unsegmented, which saves the per-datagram work
// on both sides of the kernel (the receiver was the bottleneck of the
// loopback benchmark). Each GRO slot must hold 64 KiB.
const (
	groBufSize = 1<<16 - 1 // the largest UDP payload
	groBatch   = 8         // slots per recvmmsg with GRO: 512 KiB of buffers
	cmsgSpace  = 64        // room for the UDP_GRO control message (and more)
)

// rxBatch receives datagrams with one recvmmsg(2) call. It is our own rather
// than x/net's ReadBatch because that one allocates a *net.UDPAddr for every
// datagram; here the headers, iovecs and address buffers are allocated once
// and the source address is decoded into a netip.AddrPort value, so the
// receive path does not allocate. With UDP_GRO one slot may hold several
// datagrams; read splits them.
//
// The buffers themselves (512 KiB with GRO) are a Listener's for good, but
// a client Conn's socket holds them only from the moment its socket is
// readable until its next read: while it waits they are back in rxPool.
// A process with thousands of mostly idle clients (a load generator, a
// gateway) then needs buffers for the few that are reading at once, not
// for all of them.
type rxBatch struct {
	max    int  // the largest datagram accepted: larger ones are dropped
	gro    bool // UDP_GRO is on
	pooled bool // the buffers go back to rxPool between reads
	size   int  // each buffer's size
	held   *rxBuffers
	hdrs   []mmsghdr
	iovs   []unix.Iovec
	names  []unix.RawSockaddrAny
	ctrl   [][cmsgSpace]byte
	rc     syscall.RawConn
	recvF  func(fd uintptr) bool // b.recv, bound once: a method value made per call escapes
	err    error
	got    int
}

// rxBuffers are the buffers one recvmmsg fills, and the datagrams split
// from them.
type rxBuffers struct {
	bufs [][]byte
	dg   []datagram // the datagrams of the last read
}

// rxPool holds client sockets' buffers between reads.
var rxPool sync.Pool

// newRxBatch reads s, dropping datagrams over maxDatagram bytes. pooled
// says the buffers are taken from rxPool for each read (a client's socket)
// rather than kept (a Listener's, which is seldom idle).
func newRxBatch(s *socket, maxDatagram int, pooled bool) (*rxBatch, error) {
	rc, err := s.udp.SyscallConn()
	if err != nil {
		return nil, err
	}
	gro := false
	_ = rc.Control(func(fd uintptr) {
		gro = unix.SetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_GRO, 1) == nil
	})
	n, size := batchSize, maxDatagram+1 // +1: an oversize datagram shows as a full buffer
	if gro {
		n, size = groBatch, groBufSize
	}
	b := &rxBatch{
		max:    maxDatagram,
		gro:    gro,
		pooled: pooled,
		size:   size,
		hdrs:   make([]mmsghdr, n),
		iovs:   make([]unix.Iovec, n),
		names:  make([]unix.RawSockaddrAny, n),
		ctrl:   make([][cmsgSpace]byte, n),
		rc:     rc,
	}
	b.recvF = b.recv
	for i := range b.hdrs {
		b.iovs[i].SetLen(size)
		b.hdrs[i].Hdr.Iov = &b.iovs[i]
		b.hdrs[i].Hdr.SetIovlen(1)
		b.hdrs[i].Hdr.Name = (*byte)(unsafe.Pointer(&b.names[i]))
		if gro {
			b.hdrs[i].Hdr.Control = &b.ctrl[i][0]
		}
	}
	if !pooled {
		b.acquire()
	}
	return b, nil
}

// acquire gives the batch buffers, from rxPool if it has some of the
// right shape.
func (b *rxBatch) acquire() {
	if b.held != nil {
		return
	}
	r, _ := rxPool.Get().(*rxBuffers)
	if r == nil || len(r.bufs) != len(b.hdrs) || len(r.bufs[0]) != b.size {
		r = &rxBuffers{bufs: make([][]byte, len(b.hdrs)), dg: make([]datagram, 0, 512)} // 8 GRO slots of up to 54 full-size datagrams
		for i := range r.bufs {
			r.bufs[i] = make([]byte, b.size)
		}
	}
	for i := range r.bufs {
		b.iovs[i].Base = &r.bufs[i][0]
	}
	b.held = r
}

// release returns a pooled batch's buffers to rxPool.
func (b *rxBatch) release() {
	if !b.pooled || b.held == nil {
		return
	}
	clear(b.held.dg) // the datagrams alias the buffers only
	b.held.dg = b.held.dg[:0]
	rxPool.Put(b.held)
	b.held = nil
}

// read blocks until at least one datagram arrives and returns the
// datagrams received, valid until the next read. Oversize and truncated
// ones are dropped.
func (b *rxBatch) read() ([]datagram, error) {
	b.release() // the caller is done with the last read's datagrams
	for i := range b.hdrs {
		b.hdrs[i].Hdr.Namelen = uint32(unsafe.Sizeof(b.names[i]))
		b.hdrs[i].Hdr.Flags = 0
		if b.gro {
			b.hdrs[i].Hdr.SetControllen(cmsgSpace)
		}
	}
	b.err, b.got = nil, 0
	if err := b.rc.Read(b.recvF); err != nil {
		b.release()
		return nil, err
	}
	if b.err != nil {
		b.release()
		return nil, b.err
	}
	r := b.held
	r.dg = r.dg[:0]
	for i := range b.got {
		h := &b.hdrs[i]
		addr := sockaddrToAddrPort(&b.names[i])
		n := int(h.Len)
		if h.Hdr.Flags&unix.MSG_TRUNC != 0 || n == 0 {
			// Larger than any datagram we accept, or empty: handed on
			// empty, so the receiver counts it as malformed rather than
			// it vanishing uncounted.
			r.dg = append(r.dg, datagram{b: r.bufs[i][:0], addr: addr})
			continue
		}
		seg := n
		if b.gro {
			if s := groSize(b.ctrl[i][:h.Hdr.Controllen]); s > 0 {
				seg = s
			}
		}
		for off := 0; off < n; off += seg {
			d := r.bufs[i][off:min(off+seg, n)]
			if len(d) > b.max {
				d = d[:0] // larger than any datagram we accept: counted as malformed
			}
			r.dg = append(r.dg, datagram{b: d, addr: addr})
		}
	}
	return r.dg, nil
}

// groSize returns the segment size of a UDP_GRO control message in the
// control data c, or 0 if there is none. It walks the cmsghdr chain by hand:
// unix.ParseSocketControlMessage allocates.
func groSize(c []byte) int {
	hdr := int(unsafe.Sizeof(unix.Cmsghdr{}))
	for len(c) >= hdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&c[0]))
		l := int(h.Len)
		if l < hdr || l > len(c) {
			return 0
		}
		if h.Level == unix.SOL_UDP && h.Type == unix.UDP_GRO && l >= hdr+4 {
			return int(*(*int32)(unsafe.Pointer(&c[unix.CmsgLen(0)])))
		}
		c = c[min(unix.CmsgSpace(l-hdr), len(c)):]
	}
	return 0
}

// recv is the raw-conn callback: false asks the runtime poller to wait.
func (b *rxBatch) recv(fd uintptr) bool {
	b.acquire() // the socket is (probably) readable: buffers are needed now
	n, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&b.hdrs[0])), uintptr(len(b.hdrs)), unix.MSG_DONTWAIT, 0, 0)
	switch {
	case errno == unix.EAGAIN || errno == unix.EWOULDBLOCK:
		b.release() // the wait may be long
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
