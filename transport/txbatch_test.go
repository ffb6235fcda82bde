package transport

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// One batch carries datagrams for several peers (a Listener's driver sends
// the replies of many connections at once): each reaches its own peer, and
// equal-sized datagrams for different peers are never merged into one GSO
// run (which would send one peer's datagram to the other).
func TestTxBatchSendsEachDatagramToItsPeer(t *testing.T) {
	recv := func() *net.UDPConn {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	a, b := recv(), recv()
	out, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer out.Close()
	sock, err := newSocket(out, 0)
	require.NoError(t, err)

	tx := newTxBatch(sock, 1200)
	pa, pb := a.LocalAddr().(*net.UDPAddr), b.LocalAddr().(*net.UDPAddr)
	dg := func(c byte) []byte { return bytes.Repeat([]byte{c}, 100) }
	tx.add(dg('a'), 0, pa)
	tx.add(dg('A'), 0, pa) // may join a's GSO run
	tx.add(dg('b'), 0, pb) // same size and DSCP, other peer: must not
	tx.add(dg('B'), 0, pb)
	require.NoError(t, tx.send())

	read := func(c *net.UDPConn, want ...byte) {
		buf := make([]byte, 2000)
		for _, w := range want {
			require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
			n, err := c.Read(buf)
			require.NoError(t, err)
			require.Equal(t, dg(w), buf[:n])
		}
	}
	read(a, 'a', 'A')
	read(b, 'b', 'B')
}
