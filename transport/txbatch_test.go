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

// A path MTU probe travels alone: a smaller datagram after it does not
// join it as a GSO segment (a run's segment size must fit the route's
// MTU, and the probe's may not), nor does it join the run before it.
func TestTxBatchProbeTravelsAlone(t *testing.T) {
	in, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer in.Close()
	out, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer out.Close()
	sock, err := newSocket(out, 0)
	require.NoError(t, err)
	sock.gso.Store(true) // the grouping is what is tested; send falls back if the kernel refuses
	peer := in.LocalAddr().(*net.UDPAddr)
	tx := newTxBatch(sock, 1452)
	tx.add(bytes.Repeat([]byte{1}, 1200), 0, peer)
	tx.add(bytes.Repeat([]byte{2}, 1200), 0, peer)
	tx.addAlone(bytes.Repeat([]byte{3}, 1400), 0, peer)
	tx.add(bytes.Repeat([]byte{4}, 1200), 0, peer)
	require.Equal(t, 3, tx.n, "run, probe, run")
	require.Equal(t, []int{2, 1, 1}, tx.segs[:3])
	require.NoError(t, tx.send())
	buf := make([]byte, 2000)
	for _, want := range []int{1200, 1200, 1400, 1200} {
		require.NoError(t, in.SetReadDeadline(time.Now().Add(5*time.Second)))
		n, err := in.Read(buf)
		require.NoError(t, err)
		require.Equal(t, want, n)
	}
}

// A datagram the kernel refuses as too large (EMSGSIZE: a probe above the
// link's MTU with Don't Fragment) is dropped alone: the rest of the batch
// still goes and no error reaches the driver.
func TestWriteBatchSkipsOversizeDatagram(t *testing.T) {
	in, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer in.Close()
	out, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer out.Close()
	sock, err := newSocket(out, 0)
	require.NoError(t, err)
	require.NoError(t, sock.setDontFragment())
	peer := in.LocalAddr().(*net.UDPAddr)
	tx := newTxBatch(sock, 1452)
	tx.add(bytes.Repeat([]byte{1}, 100), 0, peer)
	tx.addAlone(make([]byte, 70000), 0, peer) // beyond any UDP datagram: EMSGSIZE everywhere
	tx.add(bytes.Repeat([]byte{2}, 200), 0, peer)
	require.NoError(t, tx.send())
	buf := make([]byte, 2000)
	for _, want := range []int{100, 200} {
		require.NoError(t, in.SetReadDeadline(time.Now().Add(5*time.Second)))
		n, err := in.Read(buf)
		require.NoError(t, err)
		require.Equal(t, want, n)
	}
}
