//go:build !linux

package transport

import "net/netip"

// rxBatch elsewhere reads one datagram per call (ReadFromUDPAddrPort does
// not allocate either).
type rxBatch struct {
	s     *socket
	bufs  [][]byte
	n     []int
	addrs []netip.AddrPort
}

func newRxBatch(s *socket, size int) (*rxBatch, error) {
	return &rxBatch{s: s, bufs: [][]byte{make([]byte, size)}, n: make([]int, 1), addrs: make([]netip.AddrPort, 1)}, nil
}

func (b *rxBatch) read() (int, error) {
	n, addr, err := b.s.conn.ReadFromUDPAddrPort(b.bufs[0])
	if err != nil {
		return 0, err
	}
	b.n[0], b.addrs[0] = n, addr
	return 1, nil
}
