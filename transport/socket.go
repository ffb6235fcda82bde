package transport

import (
	"errors"
	"fmt"
	"net"
	"sync/atomic"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// batchSize is how many datagrams one recvmmsg/sendmmsg call moves.
const batchSize = 32

// socket wraps a UDP socket with batched I/O (recvmmsg/sendmmsg through
// golang.org/x/net on Linux; one datagram per call elsewhere, which x/net
// does by itself) and per-datagram DSCP marking.
type socket struct {
	conn *net.UDPConn
	v6   bool
	pc4  *ipv4.PacketConn
	pc6  *ipv6.PacketConn
	// oob[dscp] is the control message that marks one datagram with that
	// DSCP (IP_TOS / IPV6_TCLASS ancillary data on Linux); nil where the
	// platform cannot mark per datagram (then the socket's default TOS is
	// used for everything: the stream's DSCP).
	oob      map[uint8][]byte
	perPktOK atomic.Bool
	// gso: send runs of equal-sized datagrams as one segmented message
	// (Linux UDP_SEGMENT); cleared the first time the kernel refuses it.
	gso atomic.Bool
}

func newSocket(conn *net.UDPConn, defaultDSCP uint8, dscps ...uint8) (*socket, error) {
	s := &socket{conn: conn, oob: map[uint8][]byte{}}
	la, _ := conn.LocalAddr().(*net.UDPAddr)
	s.v6 = la != nil && la.IP.To4() == nil && !la.IP.IsUnspecified()
	tos := int(defaultDSCP) << 2
	if s.v6 {
		s.pc6 = ipv6.NewPacketConn(conn)
		if err := s.pc6.SetTrafficClass(tos); err != nil && tos != 0 {
			return nil, fmt.Errorf("transport: set IPv6 traffic class: %w", err)
		}
	} else {
		s.pc4 = ipv4.NewPacketConn(conn)
		if err := s.pc4.SetTOS(tos); err != nil && tos != 0 {
			return nil, fmt.Errorf("transport: set IPv4 TOS: %w", err)
		}
	}
	s.perPktOK.Store(perPacketTOSSupported)
	s.gso.Store(gsoSupported)
	for _, d := range append(dscps, defaultDSCP) {
		if perPacketTOSSupported {
			s.oob[d] = tosControlMessage(s.v6, int(d)<<2)
		}
	}
	// Big socket buffers: a fast sender fills the default 208 KiB quickly.
	_ = conn.SetReadBuffer(4 << 20)
	_ = conn.SetWriteBuffer(4 << 20)
	return s, nil
}

// readBatch reads up to len(ms) datagrams.
func (s *socket) readBatch(ms []ipv4.Message) (int, error) {
	if s.v6 {
		return s.pc6.ReadBatch(ms, 0)
	}
	return s.pc4.ReadBatch(ms, 0)
}

// writeBatch writes every message, retrying the rest after a partial batch.
func (s *socket) writeBatch(ms []ipv4.Message) error {
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
			return err
		}
		ms = ms[n:]
	}
	return nil
}

// oobFor returns the control message for dscp (nil if not per-packet).
func (s *socket) oobFor(dscp uint8) []byte {
	if !s.perPktOK.Load() {
		return nil
	}
	return s.oob[dscp]
}

func isInvalid(err error) bool {
	var se *net.OpError
	return errors.As(err, &se) && errors.Is(se.Err, errInvalidArgument)
}
