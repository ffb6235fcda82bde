//go:build linux

package transport_test

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/fresh-udp/fresh/dscp"
	"github.com/fresh-udp/fresh/transport"
)

// tosTap is a UDP forwarder that records the TOS byte of every datagram
// the client sends (IP_RECVTOS), proving the marking on the wire.
type tosTap struct {
	front, back *net.UDPConn
	mu          sync.Mutex
	byType      map[byte][]byte // frame type → TOS bytes seen
	client      *net.UDPAddr
}

func newTOSTap(t *testing.T, target *net.UDPAddr) *tosTap {
	front, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	back, err := net.DialUDP("udp4", nil, target)
	require.NoError(t, err)
	rc, err := front.SyscallConn()
	require.NoError(t, err)
	var serr error
	require.NoError(t, rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVTOS, 1) }))
	require.NoError(t, serr)
	tap := &tosTap{front: front, back: back, byType: map[byte][]byte{}}
	go tap.forward()
	go tap.backward()
	t.Cleanup(func() { front.Close(); back.Close() })
	return tap
}

func (p *tosTap) forward() {
	b, oob := make([]byte, 2048), make([]byte, 128)
	for {
		n, oobn, _, from, err := p.front.ReadMsgUDP(b, oob)
		if err != nil {
			return
		}
		tos := byte(0xff)
		if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for _, m := range msgs {
				if m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_TOS && len(m.Data) > 0 {
					tos = m.Data[0]
				}
			}
		}
		p.mu.Lock()
		p.client = from
		if n > 1 {
			p.byType[b[1]] = append(p.byType[b[1]], tos)
		}
		p.mu.Unlock()
		_, _ = p.back.Write(b[:n])
	}
}

func (p *tosTap) backward() {
	b := make([]byte, 2048)
	for {
		n, err := p.back.Read(b)
		if err != nil {
			return
		}
		p.mu.Lock()
		c := p.client
		p.mu.Unlock()
		if c != nil {
			_, _ = p.front.WriteToUDP(b[:n], c)
		}
	}
}

func TestDSCPOnTheWire(t *testing.T) {
	l, err := transport.Listen("127.0.0.1:0", transport.WithTestTLS(transport.Config{}))
	require.NoError(t, err)
	defer l.Close()
	tap := newTOSTap(t, l.Addr().(*net.UDPAddr))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := transport.Dial(ctx, tap.front.LocalAddr().String(), transport.WithTestTLS(transport.Config{StreamDSCP: dscp.EF}))
	require.NoError(t, err)
	defer c.Close()
	s, err := l.Accept(ctx)
	require.NoError(t, err)
	require.NoError(t, c.SendUpdate([]byte("temp=21.5")))
	_, err = s.ReadUpdate(ctx)
	require.NoError(t, err)
	_, err = c.Write(make([]byte, 5000))
	require.NoError(t, err)
	buf := make([]byte, 5000)
	_, err = s.Read(buf)
	require.NoError(t, err)

	tap.mu.Lock()
	defer tap.mu.Unlock()
	const typeData, typeUpdate = 0x03, 0x04
	require.NotEmpty(t, tap.byType[typeUpdate])
	for _, tos := range tap.byType[typeUpdate] {
		require.Equal(t, dscp.CS7.Code()<<2, tos, "updates carry CS7 (TOS 0xe0)")
	}
	require.NotEmpty(t, tap.byType[typeData])
	for _, tos := range tap.byType[typeData] {
		require.Equal(t, dscp.EF.Code()<<2, tos, "the stream carries its own dscp.Codepoint (EF)")
	}
}

// tap2 is a two-way TOS tap for either family: it forwards between a client
// and target, recording per direction and frame type the TOS byte (IPv4
// IP_RECVTOS) or traffic class (IPv6 IPV6_RECVTCLASS) of every datagram.
type tap2 struct {
	front, back *net.UDPConn
	mu          sync.Mutex
	fwd, rev    map[byte][]byte
	client      *net.UDPAddr
}

func newTap2(t *testing.T, target *net.UDPAddr, v6 bool) *tap2 {
	network, lo := "udp4", net.IPv4(127, 0, 0, 1)
	if v6 {
		network, lo = "udp6", net.IPv6loopback
	}
	front, err := net.ListenUDP(network, &net.UDPAddr{IP: lo})
	require.NoError(t, err)
	back, err := net.DialUDP(network, nil, target)
	require.NoError(t, err)
	for _, c := range []*net.UDPConn{front, back} {
		rc, err := c.SyscallConn()
		require.NoError(t, err)
		var serr error
		require.NoError(t, rc.Control(func(fd uintptr) {
			if v6 {
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_RECVTCLASS, 1)
			} else {
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVTOS, 1)
			}
		}))
		require.NoError(t, serr)
	}
	p := &tap2{front: front, back: back, fwd: map[byte][]byte{}, rev: map[byte][]byte{}}
	go p.pump(front, true)
	go p.pump(back, false)
	t.Cleanup(func() { front.Close(); back.Close() })
	return p
}

func (p *tap2) pump(from *net.UDPConn, forward bool) {
	b, oob := make([]byte, 65536), make([]byte, 256)
	for {
		n, oobn, _, src, err := from.ReadMsgUDP(b, oob)
		if err != nil {
			return
		}
		tos := byte(0xff)
		if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for _, m := range msgs {
				if (m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_TOS && len(m.Data) > 0) ||
					(m.Header.Level == unix.IPPROTO_IPV6 && m.Header.Type == unix.IPV6_TCLASS && len(m.Data) >= 4) {
					tos = m.Data[0] // IP_TOS: one byte; IPV6_TCLASS: an int, low byte first
				}
			}
		}
		p.mu.Lock()
		if n > 1 {
			if forward {
				p.client = src
				p.fwd[b[1]] = append(p.fwd[b[1]], tos)
			} else {
				p.rev[b[1]] = append(p.rev[b[1]], tos)
			}
		}
		c := p.client
		p.mu.Unlock()
		if forward {
			_, _ = p.back.Write(b[:n])
		} else if c != nil {
			_, _ = p.front.WriteToUDP(b[:n], c)
		}
	}
}

// Both directions carry their marks for IPv4 and IPv6 peers of one
// dual-stack Listener: the client's and the server's updates CS7, the
// stream EF, with IP_TOS or IPV6_TCLASS as the peer's family needs.
func TestDSCPOnTheWireBothFamilies(t *testing.T) {
	if l6, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback}); err != nil {
		t.Skip("no IPv6 loopback here")
	} else {
		l6.Close()
	}
	cfg := transport.WithTestTLS(transport.Config{StreamDSCP: dscp.EF})
	l, err := transport.Listen(":0", cfg)
	require.NoError(t, err)
	defer l.Close()
	port := l.Addr().(*net.UDPAddr).Port
	for _, v6 := range []bool{false, true} {
		target := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}
		if v6 {
			target.IP = net.IPv6loopback
		}
		tap := newTap2(t, target, v6)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := transport.Dial(ctx, tap.front.LocalAddr().String(), cfg)
		require.NoError(t, err)
		s, err := l.Accept(ctx)
		require.NoError(t, err)
		for _, pair := range [][2]*transport.Conn{{c, s}, {s, c}} {
			from, to := pair[0], pair[1]
			require.NoError(t, from.SendUpdate([]byte("temp=21.5")))
			_, err = to.ReadUpdate(ctx)
			require.NoError(t, err)
			_, err = from.Write(make([]byte, 5000))
			require.NoError(t, err)
			_, err = io.ReadFull(to, make([]byte, 5000))
			require.NoError(t, err)
		}
		cancel()
		c.Close()
		s.Close()

		tap.mu.Lock()
		const typeData, typeUpdate = 0x03, 0x04
		for dir, seen := range map[string]map[byte][]byte{"client→server": tap.fwd, "server→client": tap.rev} {
			require.NotEmpty(t, seen[typeUpdate], "v6=%v %s updates", v6, dir)
			for _, tos := range seen[typeUpdate] {
				require.Equal(t, dscp.CS7.Code()<<2, tos, "v6=%v %s: updates carry CS7", v6, dir)
			}
			require.NotEmpty(t, seen[typeData], "v6=%v %s data", v6, dir)
			for _, tos := range seen[typeData] {
				require.Equal(t, dscp.EF.Code()<<2, tos, "v6=%v %s: the stream carries EF", v6, dir)
			}
		}
		tap.mu.Unlock()
	}
}
