package quichook_test

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/transport/quichook"
)

// The retransmission timeout fires for datagrams written straight from
// the caller's write (not through the queue) after the peer falls silent.
// The sender goroutine is not kicked by every feedback datagram; a write
// that puts datagrams in flight must arm its timer itself, or a peer that
// vanishes right after acknowledging everything would leave the flight,
// and the controller's window, stuck.
func TestRTOFiresForDirectWritesAfterPeerFallsSilent(t *testing.T) {
	leakCheck(t)
	a, err := quichook.ListenPacket("127.0.0.1:0", quichook.Config{CC: "reno"})
	require.NoError(t, err)
	defer a.Close()
	b, err := quichook.ListenPacket("127.0.0.1:0", quichook.Config{CC: "reno"})
	require.NoError(t, err)
	defer b.Close()
	aDone, bDone := readLoop(a), readLoop(b)
	defer func() { a.Close(); <-aDone }()
	to := b.LocalAddr()
	// A short-header-looking QUIC datagram (fixed bit set): the hook
	// shims it once the peer answered a hello.
	quicish := append([]byte{0x40}, make([]byte, 1199)...)
	peer := func() quichook.PeerStats {
		st := a.Stats()
		require.Len(t, st.Peers, 1)
		return st.Peers[0]
	}
	require.Eventually(t, func() bool {
		_, err := a.WriteTo(quicish, to)
		require.NoError(t, err)
		p := peer()
		return p.Hooked && p.Acked > 0
	}, 5*time.Second, 20*time.Millisecond, "the peer answers and acknowledges")
	require.Eventually(t, func() bool { return peer().InFlight == 0 }, 5*time.Second, 5*time.Millisecond,
		"and acknowledges everything")
	require.NoError(t, b.Close())
	<-bDone
	time.Sleep(50 * time.Millisecond) // let the sender goroutine settle with nothing in flight
	_, err = a.WriteTo(quicish, to.(*net.UDPAddr))
	require.NoError(t, err)
	require.Positive(t, peer().InFlight, "written directly, in flight")
	require.Eventually(t, func() bool { return peer().RTOs > 0 }, 5*time.Second, 20*time.Millisecond,
		"no feedback for an RTO: the flight is declared gone")
	require.Zero(t, peer().InFlight)
}
