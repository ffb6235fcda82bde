package quichook_test

import (
	"crypto/sha256"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/transport/quichook"
)

// A peer without the hook gets plain QUIC: the hooked end's hellos go
// unanswered (quic-go drops a 6-byte datagram without the fixed bit), so
// it never shims, and the transfer is byte-exact either way round.
func TestPeerWithoutHookFallsBackToPlainQUIC(t *testing.T) {
	leakCheck(t)
	data := randomBytes(1<<20, 4)
	for _, tc := range []struct {
		name           string
		cliHook, srvHk bool
	}{{"hooked client, plain server", true, false}, {"plain client, hooked server", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			srv, cli := newEndpoint(t, tc.srvHk, quichook.Config{}), newEndpoint(t, tc.cliHook, quichook.Config{})
			got := upload(t, cli, srv, nil, data, 20*time.Second)
			require.Equal(t, sha256.Sum256(data), sha256.Sum256(got), "byte-exact")
			h := cli.hook
			if h == nil {
				h = srv.hook
			}
			st := h.Stats()
			require.Zero(t, st.ShimSent, "nothing shimmed to a peer without the hook")
			require.Zero(t, st.ShimReceived)
			require.Greater(t, st.PlainSent, int64(0))
			require.Greater(t, st.PlainReceived, int64(0))
			require.Zero(t, st.HellosReceived, "a peer without the hook never answers")
			require.Len(t, st.Peers, 1)
			require.False(t, st.Peers[0].Hooked)
			if tc.cliHook {
				require.Positive(t, st.HellosSent, "the hooked client asked")
				require.LessOrEqual(t, st.HellosSent, int64(8), "and stopped asking")
			}
		})
	}
}

// Garbage with the shim's first bytes is dropped and counted; the QUIC
// connection over the same socket carries on.
func TestMalformedShimDatagramsDroppedAndCounted(t *testing.T) {
	leakCheck(t)
	srv, cli := newEndpoint(t, true, quichook.Config{}), newEndpoint(t, true, quichook.Config{})
	attacker, err := net.DialUDP("udp", nil, srv.pc.LocalAddr().(*net.UDPAddr))
	require.NoError(t, err)
	defer attacker.Close()
	bad := [][]byte{
		{0x01},                        // data header cut short
		{0x02, 1, 2, 3},               // data+echo cut short
		{0x03, 0, 0, 0},               // feedback cut short
		make([]byte, 17),              // type 0: unknown
		{0x04, 9, 'f', 'r', 'h', 'k'}, // hello of another version
		{0x3f, 1, 2},                  // unknown type
		append([]byte{0x01}, make([]byte, 16)...), // data with no QUIC payload
	}
	for _, b := range bad {
		_, err := attacker.Write(b)
		require.NoError(t, err)
	}
	data := randomBytes(1<<20, 5)
	got := upload(t, cli, srv, nil, data, 20*time.Second)
	require.Equal(t, sha256.Sum256(data), sha256.Sum256(got))
	require.Eventually(t, func() bool { return srv.hook.Stats().Malformed >= int64(len(bad)) }, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, int64(len(bad)), srv.hook.Stats().Malformed)
}

// Close stops every goroutine the hook started, also with writers
// blocked on a full queue.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	leakCheck(t)
	h, err := quichook.Listen("127.0.0.1:0", quichook.Config{QueuePackets: 1, QueueWait: time.Hour})
	require.NoError(t, err)
	peer, err := quichook.Listen("127.0.0.1:0", quichook.Config{})
	require.NoError(t, err)
	defer peer.Close()
	// Make the peer hooked: a hello from it.
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := peer.ReadFrom(buf); err != nil {
				return
			}
		}
	}()
	_, err = peer.WriteTo([]byte{0xc0, 1, 2, 3}, h.LocalAddr())
	require.NoError(t, err)
	buf := make([]byte, 2048)
	require.NoError(t, h.SetReadDeadline(time.Now().Add(2*time.Second)))
	_, _, err = h.ReadFrom(buf) // the plain datagram after the hello
	require.NoError(t, err)
	require.True(t, h.Stats().Peers[0].Hooked)
	// Fill the window and the queue; the next writers block.
	done := make(chan error, 64)
	for range 64 {
		go func() {
			_, err := h.WriteTo(make([]byte, 1400), peer.LocalAddr())
			done <- err
		}()
	}
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, h.Close())
	for range 64 {
		<-done
	}
}

// At MaxPeers a new peer takes the place of one idle for long enough; a
// busy one is never forgotten, and then the newcomer gets plain QUIC.
func TestPeersBoundedAndIdleOnesEvicted(t *testing.T) {
	leakCheck(t)
	clk := clock.NewManual(time.Now())
	h, err := quichook.Listen("127.0.0.1:0", quichook.Config{MaxPeers: 1, Clock: clk})
	require.NoError(t, err)
	defer h.Close()
	a, b := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 10}
	_, err = h.WriteTo([]byte{0xc0, 1}, a)
	require.NoError(t, err)
	_, err = h.WriteTo([]byte{0xc0, 2}, b)
	require.NoError(t, err)
	st := h.Stats()
	require.Len(t, st.Peers, 1)
	require.Equal(t, int64(1), st.PeersRefused, "a is not idle yet")
	clk.Advance(31 * time.Second)
	_, err = h.WriteTo([]byte{0xc0, 3}, b)
	require.NoError(t, err)
	st = h.Stats()
	require.Len(t, st.Peers, 1)
	require.Equal(t, int64(1), st.PeersEvicted)
	require.Equal(t, uint16(10), st.Peers[0].Addr.Port())
	require.Equal(t, int64(3), st.PlainSent, "every datagram still went out")
}
