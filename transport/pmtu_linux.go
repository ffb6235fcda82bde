//go:build linux

package transport

import "golang.org/x/sys/unix"

// setDontFragment makes the socket send every datagram with the IPv4
// Don't Fragment bit (IPv6 never fragments on the path) and without the
// kernel's own path MTU cache: IP_PMTUDISC_PROBE, RFC 8899 §3's
// requirement that a packetization layer doing its own discovery can
// forbid fragmentation. Without it Linux fragments a probe larger than
// the first link's MTU and the probe "succeeds" in fragments, or a
// router fragments it on the way; with it a datagram larger than the
// link's MTU fails at once with EMSGSIZE (see socket.writeBatch) and a
// larger one on the path is dropped, both read as "size not supported".
func (s *socket) setDontFragment() error {
	if s.udp == nil {
		return nil
	}
	rc, err := s.udp.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		if s.v6 {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_MTU_DISCOVER, unix.IPV6_PMTUDISC_PROBE)
		}
		if (!s.v6 || s.dual) && serr == nil {
			if err := unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_PROBE); err != nil && !s.dual {
				serr = err
			}
		}
	}); err != nil {
		return err
	}
	return serr
}
