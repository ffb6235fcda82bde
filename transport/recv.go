package transport

import (
	"net"
	"net/netip"
)

// datagram is one received datagram: its bytes (aliasing the reader's
// buffers until the next read) and its source.
type datagram struct {
	b    []byte
	addr netip.AddrPort
}

// reader reads a socket: read blocks until at least one datagram arrives
// and returns those received, valid until the next read. An oversize
// datagram is handed on empty, so the receiver counts it as malformed
// rather than it vanishing uncounted.
type reader interface {
	read() ([]datagram, error)
}

// newReader reads s, dropping datagrams over maxDatagram bytes: in batches
// from a UDP socket (rxBatch; pooled says its buffers go back to a pool
// between reads, as a client's mostly idle socket wants), one datagram per
// call from any other packet connection.
func newReader(s *socket, maxDatagram int, pooled bool) (reader, error) {
	if s.udp == nil {
		return &pcReader{pc: s.pc, max: maxDatagram, buf: make([]byte, maxDatagram+1), dg: make([]datagram, 0, 1)}, nil
	}
	return newRxBatch(s, maxDatagram, pooled)
}

// pcReader reads a net.PacketConn that is not a *net.UDPConn. Its source
// addresses must be *net.UDPAddr (or anything netip.ParseAddrPort reads
// from String): fresh routes by IP address and port.
type pcReader struct {
	pc  net.PacketConn
	max int
	buf []byte
	dg  []datagram
}

func (r *pcReader) read() ([]datagram, error) {
	n, from, err := r.pc.ReadFrom(r.buf)
	if err != nil {
		return nil, err
	}
	if n > r.max {
		n = 0 // larger than any datagram we accept
	}
	var addr netip.AddrPort
	switch a := from.(type) {
	case *net.UDPAddr:
		addr = a.AddrPort()
	default:
		addr, _ = netip.ParseAddrPort(from.String()) // invalid: dropped as malformed
	}
	addr = netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
	r.dg = append(r.dg[:0], datagram{b: r.buf[:n], addr: addr})
	return r.dg, nil
}
