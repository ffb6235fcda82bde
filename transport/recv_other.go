//go:build !linux

package transport

// rxBatch elsewhere reads one datagram per call (ReadFromUDPAddrPort does
// not allocate either).
type rxBatch struct {
	s   *socket
	max int
	buf []byte
	dg  []datagram
}

// newRxBatch reads s, dropping datagrams over maxDatagram bytes. pooled
// is for Linux's batches; one datagram's buffer is kept here.
func newRxBatch(s *socket, maxDatagram int, pooled bool) (*rxBatch, error) {
	return &rxBatch{s: s, max: maxDatagram, buf: make([]byte, maxDatagram+1), dg: make([]datagram, 0, 1)}, nil
}

// read returns the next datagram (empty if it was oversize).
func (b *rxBatch) read() ([]datagram, error) {
	n, addr, err := b.s.udp.ReadFromUDPAddrPort(b.buf)
	if err != nil {
		return nil, err
	}
	if n > b.max {
		n = 0 // larger than any datagram we accept: handed on empty, counted as malformed
	}
	b.dg = append(b.dg[:0], datagram{b: b.buf[:n], addr: addr})
	return b.dg, nil
}
