package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"syscall"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"

	"github.com/fresh-udp/fresh/internal/cmsg"
)

// batchSize is how many datagrams one recvmmsg/sendmmsg call moves.
const batchSize = 32

// socket wraps a Transport's packet connection. A *net.UDPConn gets
// batched I/O (recvmmsg/sendmmsg through golang.org/x/net on Linux; one
// datagram per call elsewhere, which x/net does by itself), segmentation
// offload and per-datagram DSCP marking; any other net.PacketConn is read
// and written one datagram at a time, unmarked (udp is nil).
type socket struct {
	pc   net.PacketConn
	udp  *net.UDPConn // pc, when it is one
	v6   bool         // an AF_INET6 socket
	dual bool         // AF_INET6 on a wildcard address: IPv4 peers (v4-mapped) too
	// connected: a socket connected to its one peer (Dial's); its
	// datagrams go without a destination address (BSD kernels refuse one
	// with EISCONN on a connected socket).
	connected bool
	pc4       *ipv4.PacketConn
	pc6       *ipv6.PacketConn
	// oob4[dscp] and oob6[dscp] are the control messages that mark one
	// datagram with that DSCP (IP_TOS for an IPv4 peer, IPV6_TCLASS for an
	// IPv6 one, as Linux ancillary data; a dual-stack socket needs the one
	// of the peer's family: the kernel ignores IPV6_TCLASS on a datagram to
	// an IPv4 peer and refuses IP_TOS on one to an IPv6 peer), for every
	// code point, since the connections sharing a socket may mark
	// differently; nil where the platform cannot mark per datagram (then
	// the socket's default TOS is used for everything).
	oob4, oob6 [64][]byte
	perPktOK   atomic.Bool
	// gso: send runs of equal-sized datagrams as one segmented message
	// (Linux UDP_SEGMENT); cleared the first time the kernel refuses it.
	gso atomic.Bool
}

// newSocket wraps pc. A UDP socket's family comes from its local address:
// an IPv6 one is an AF_INET6 socket, taken to be dual-stack if its address
// is the wildcard (as net.ListenUDP("udp", ":port") opens it; on an
// IPv6-only socket the guess is harmless, as no IPv4 peer can reach it).
// defaultDSCP is the TOS every datagram without its own mark carries.
func newSocket(pc net.PacketConn, defaultDSCP uint8) (*socket, error) {
	s := &socket{pc: pc}
	conn, ok := pc.(*net.UDPConn)
	if !ok {
		return s, nil
	}
	s.udp = conn
	la, _ := conn.LocalAddr().(*net.UDPAddr)
	s.v6 = la != nil && la.IP.To4() == nil
	s.dual = s.v6 && la.IP.IsUnspecified()
	s.connected = conn.RemoteAddr() != nil
	tos := int(defaultDSCP) << 2
	if s.v6 {
		s.pc6 = ipv6.NewPacketConn(conn)
		if err := s.pc6.SetTrafficClass(tos); err != nil && tos != 0 {
			return nil, fmt.Errorf("transport: set IPv6 traffic class: %w", err)
		}
	}
	if !s.v6 || s.dual {
		// On a dual-stack socket IP_TOS marks what goes to IPv4 peers.
		pc4 := ipv4.NewPacketConn(conn)
		if err := pc4.SetTOS(tos); err != nil && tos != 0 && !s.dual {
			return nil, fmt.Errorf("transport: set IPv4 TOS: %w", err)
		}
		if !s.v6 {
			s.pc4 = pc4
		}
	}
	s.perPktOK.Store(cmsg.PerPacketTOS)
	s.gso.Store(cmsg.GSO)
	if cmsg.PerPacketTOS {
		for d := range s.oob4 {
			s.oob4[d] = cmsg.TOS(false, d<<2)
			s.oob6[d] = cmsg.TOS(true, d<<2)
		}
	}
	// Big socket buffers: a fast sender fills the default 208 KiB quickly.
	_ = conn.SetReadBuffer(4 << 20)
	_ = conn.SetWriteBuffer(4 << 20)
	return s, nil
}

// writeTo sends one datagram outside a batch (a Retry).
func (s *socket) writeTo(b []byte, to netip.AddrPort) error {
	if s.udp != nil {
		_, err := s.udp.WriteToUDPAddrPort(b, to)
		return err
	}
	_, err := s.pc.WriteTo(b, net.UDPAddrFromAddrPort(to))
	return err
}

// writeBatch writes every message, retrying the rest after a partial batch.
func (s *socket) writeBatch(ms []ipv4.Message) error {
	if s.udp == nil {
		for _, m := range ms {
			if _, err := s.pc.WriteTo(m.Buffers[0], m.Addr); err != nil {
				return err
			}
		}
		return nil
	}
	for len(ms) > 0 {
		var n int
		var err error
		if s.v6 {
			n, err = s.pc6.WriteBatch(ms, 0)
		} else {
			n, err = s.pc4.WriteBatch(ms, 0)
		}
		if err != nil {
			if s.perPktOK.Load() && isInvalid(err) {
				// The kernel refused the TOS control message: fall back to
				// the socket's TOS for everything from now on.
				s.perPktOK.Store(false)
				for i := range ms {
					ms[i].OOB = nil
				}
				continue
			}
			if isMessageSize(err) {
				// One datagram larger than the link's MTU (a path MTU
				// probe, with Don't Fragment): it is lost, as it would
				// be on the path; the rest of the batch still goes.
				ms = ms[1:]
				continue
			}
			return err
		}
		ms = ms[n:]
	}
	return nil
}

// dest is the destination address for a datagram to peer: nil on a
// connected socket. It is an untyped nil: a nil *net.UDPAddr in a net.Addr
// would not be taken for "no address".
func (s *socket) dest(peer *net.UDPAddr) net.Addr {
	if s.connected {
		return nil
	}
	return peer
}

// oobFor returns the control message for dscp on a datagram to peer (nil
// if not per-packet).
func (s *socket) oobFor(dscp uint8, peer *net.UDPAddr) []byte {
	if s.udp == nil || !s.perPktOK.Load() {
		return nil
	}
	if s.v6 && !(s.dual && peer.IP.To4() != nil) {
		return s.oob6[dscp&63]
	}
	return s.oob4[dscp&63]
}

// isMessageSize recognises EMSGSIZE: a datagram larger than the route's
// MTU with fragmentation forbidden.
func isMessageSize(err error) bool { return errors.Is(err, syscall.EMSGSIZE) }

func isInvalid(err error) bool {
	var se *net.OpError
	return errors.As(err, &se) && errors.Is(se.Err, errInvalidArgument)
}

// listenUDP opens a listener's socket, with SO_REUSEPORT if reusePort
// (ListenUDP): the option must be set before the socket is bound,
// which net.ListenUDP gives no hook for.
func listenUDP(network string, laddr *net.UDPAddr, reusePort bool) (*net.UDPConn, error) {
	if !reusePort {
		return net.ListenUDP(network, laddr)
	}
	lc := net.ListenConfig{Control: setReusePort}
	pc, err := lc.ListenPacket(context.Background(), network, laddr.String())
	if err != nil {
		return nil, err
	}
	return pc.(*net.UDPConn), nil
}
