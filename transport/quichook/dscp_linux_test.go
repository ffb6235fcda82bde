//go:build linux

package quichook_test

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/fresh-udp/fresh/dscp"
	"github.com/fresh-udp/fresh/transport/quichook"
)

// readTOS reads one datagram from c and returns its first byte and the
// TOS byte the kernel reports with it (IP_RECVTOS).
func readTOS(t *testing.T, c *net.UDPConn) (first byte, tos int) {
	t.Helper()
	b, tos := readWithTOS(t, c)
	return b[0], tos
}

// readWithTOS is readTOS returning the whole datagram.
func readWithTOS(t *testing.T, c *net.UDPConn) ([]byte, int) {
	t.Helper()
	b, oob := make([]byte, 2048), make([]byte, 256)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	n, oobn, _, _, err := c.ReadMsgUDP(b, oob)
	require.NoError(t, err)
	require.Positive(t, n)
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	require.NoError(t, err)
	for _, m := range msgs {
		if m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_TOS && len(m.Data) > 0 {
			return b[:n], int(m.Data[0])
		}
	}
	t.Fatal("no TOS control message")
	return nil, 0
}

// Each datagram carries its class: quic-go's datagrams Config.DSCP, the
// hook's own answers Config.AckDSCP.
func TestDSCPPerDatagram(t *testing.T) {
	leakCheck(t)
	h, err := quichook.ListenPacket("127.0.0.1:0", quichook.Config{DSCP: dscp.AF41, AckDSCP: dscp.CS7})
	require.NoError(t, err)
	defer h.Close()
	go func() {
		b := make([]byte, 2048)
		for {
			if _, _, err := h.ReadFrom(b); err != nil {
				return
			}
		}
	}()
	peer, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer peer.Close()
	raw, err := peer.SyscallConn()
	require.NoError(t, err)
	require.NoError(t, raw.Control(func(fd uintptr) {
		require.NoError(t, unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVTOS, 1))
	}))
	// A hello; the answer is the hook's own datagram, and carries its
	// cookie, which a hello echoing it proves the peer received: the
	// peer is hooked.
	_, err = peer.WriteToUDP(quichook.Hello(1, nil), h.LocalAddr().(*net.UDPAddr))
	require.NoError(t, err)
	ack, tos := readWithTOS(t, peer)
	require.Equal(t, byte(0x05), ack[0], "the hello's answer")
	require.Equal(t, int(dscp.CS7.Code())<<2, tos&^3)
	cookie := quichook.HelloCookie(ack)
	_, err = peer.WriteToUDP(quichook.Hello(1, &cookie), h.LocalAddr().(*net.UDPAddr))
	require.NoError(t, err)
	first, tos := readTOS(t, peer)
	require.Equal(t, byte(0x05), first, "answered again")
	require.Equal(t, int(dscp.CS7.Code())<<2, tos&^3)
	require.Eventually(t, func() bool { return len(h.Stats().Peers) == 1 && h.Stats().Peers[0].Hooked }, 5*time.Second, time.Millisecond)
	// quic-go's datagram, shimmed.
	_, err = h.WriteTo([]byte{0x40, 1, 2, 3}, peer.LocalAddr())
	require.NoError(t, err)
	first, tos = readTOS(t, peer)
	require.Equal(t, byte(0x01), first, "a shimmed data datagram")
	require.Equal(t, int(dscp.AF41.Code())<<2, tos&^3)
}
