//go:build linux

package transport_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

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
	l, err := transport.Listen("127.0.0.1:0", transport.Config{})
	require.NoError(t, err)
	defer l.Close()
	tap := newTOSTap(t, l.Addr().(*net.UDPAddr))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := transport.Dial(ctx, tap.front.LocalAddr().String(), transport.Config{StreamDSCP: int(transport.DSCPEF)})
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
		require.Equal(t, byte(transport.DSCPCS7<<2), tos, "updates carry CS7 (TOS 0xe0)")
	}
	require.NotEmpty(t, tap.byType[typeData])
	for _, tos := range tap.byType[typeData] {
		require.Equal(t, byte(transport.DSCPEF<<2), tos, "the stream carries its own DSCP (EF)")
	}
}
