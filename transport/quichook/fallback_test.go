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
		{0x04, 2, 'f', 'r', 'h', 'k'}, // hello without its cookie
		append(quichook.Hello(1, nil)[:6], 0x05, 0, 0, 0), // hello of a length no version has
		{0x3f, 1, 2}, // unknown type
		append([]byte{0x01}, make([]byte, 24)...), // data with no QUIC payload
	}
	for _, b := range bad {
		_, err := attacker.Write(b)
		require.NoError(t, err)
	}
	// A version-1 hook's hello is counted apart, and left unanswered.
	_, err = attacker.Write([]byte{0x04, 1, 'f', 'r', 'h', 'k'})
	require.NoError(t, err)
	data := randomBytes(1<<20, 5)
	got := upload(t, cli, srv, nil, data, 20*time.Second)
	require.Equal(t, sha256.Sum256(data), sha256.Sum256(got))
	require.Eventually(t, func() bool { return srv.hook.Stats().Malformed >= int64(len(bad)) }, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, int64(len(bad)), srv.hook.Stats().Malformed)
	require.Equal(t, int64(1), srv.hook.Stats().VersionMismatch)
}

// Close stops every goroutine the hook started, also with writers
// blocked on a full queue.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	leakCheck(t)
	h, err := quichook.ListenPacket("127.0.0.1:0", quichook.Config{QueuePackets: 1, QueueWait: time.Hour})
	require.NoError(t, err)
	peer, err := quichook.ListenPacket("127.0.0.1:0", quichook.Config{})
	require.NoError(t, err)
	defer peer.Close()
	// Make the peer hooked: a hello from it.
	readLoop(peer)
	_, err = peer.WriteTo([]byte{0xc0, 1, 2, 3}, h.LocalAddr())
	require.NoError(t, err)
	hDone := readLoop(h)
	defer func() { <-hDone }()
	// h answers the hello; its own hello (with its first datagram) echoes
	// the peer's cookie, and the peer's answer makes the peer hooked.
	require.Eventually(t, func() bool {
		_, err := h.WriteTo([]byte{0xc0, 1}, peer.LocalAddr())
		require.NoError(t, err)
		st := h.Stats()
		return len(st.Peers) == 1 && st.Peers[0].Hooked
	}, 2*time.Second, 10*time.Millisecond)
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

// Unvalidated entries (addresses quic-go wrote to, or that only sent a
// hello) make room for each other at MaxPeers; a validated peer makes room
// only for another validated one, and only once it has been idle long
// enough: until then the newcomer gets plain QUIC.
func TestPeersBoundedAndIdleOnesEvicted(t *testing.T) {
	leakCheck(t)
	clk := clock.NewManual(time.Now())
	h, err := quichook.ListenPacket("127.0.0.1:0", quichook.Config{MaxPeers: 1, Clock: clk})
	require.NoError(t, err)
	hDone := readLoop(h)
	defer func() { h.Close(); <-hDone }()
	a, b := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 10}
	_, err = h.WriteTo([]byte{0xc0, 1}, a)
	require.NoError(t, err)
	_, err = h.WriteTo([]byte{0xc0, 2}, b)
	require.NoError(t, err)
	st := h.Stats()
	require.Len(t, st.Peers, 1)
	require.Equal(t, uint16(10), st.Peers[0].Addr.Port(), "b took a's place")
	require.Equal(t, int64(1), st.UnvalidatedEvicted)
	require.Zero(t, st.PeersRefused)
	require.Equal(t, int64(2), st.PlainSent, "every datagram still went out")

	// Two peers that play the hook by hand: a hello, then a hello that
	// echoes the cookie the answer brought.
	validate := func(c *net.UDPConn) {
		_, err := c.WriteTo(quichook.Hello(1, nil), h.LocalAddr())
		require.NoError(t, err)
		buf := make([]byte, 64)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(2*time.Second)))
		n, _, err := c.ReadFrom(buf)
		require.NoError(t, err)
		cookie := quichook.HelloCookie(buf[:n])
		_, err = c.WriteTo(quichook.Hello(1, &cookie), h.LocalAddr())
		require.NoError(t, err)
	}
	hooked := func(c *net.UDPConn) bool {
		for _, p := range h.Stats().Peers {
			if p.Addr == c.LocalAddr().(*net.UDPAddr).AddrPort() {
				return p.Hooked
			}
		}
		return false
	}
	v, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer v.Close()
	w, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer w.Close()
	validate(v)
	require.Eventually(t, func() bool { return hooked(v) }, 2*time.Second, time.Millisecond)
	validate(w)
	require.Eventually(t, func() bool { return h.Stats().PeersRefused == 1 }, 2*time.Second, time.Millisecond,
		"v is not idle yet: w is refused")
	require.True(t, hooked(v))
	require.False(t, hooked(w))
	clk.Advance(31 * time.Second)
	validate(w)
	require.Eventually(t, func() bool { return hooked(w) }, 2*time.Second, time.Millisecond)
	require.False(t, hooked(v))
	require.Equal(t, int64(1), h.Stats().PeersEvicted)
}

// Shim data the hook cannot attribute — without its cookie for the source
// (spoofed, or from a hook that lost it), or from a peer it forgot — is
// not dropped: the header comes off and quic-go gets the payload, as it
// would without the hook. With the right cookie a forgotten peer is
// validated again at once, and asked for its own cookie.
func TestUnattributedShimDataReachesQUIC(t *testing.T) {
	leakCheck(t)
	h, err := quichook.ListenPacket("127.0.0.1:0", quichook.Config{MaxPeers: 1})
	require.NoError(t, err)
	got := make(chan []byte, 16)
	hDone := make(chan struct{})
	go func() {
		defer close(hDone)
		buf := make([]byte, 2048)
		for {
			n, _, err := h.ReadFrom(buf)
			if err != nil {
				return
			}
			got <- append([]byte(nil), buf[:n]...)
		}
	}()
	defer func() { h.Close(); <-hDone }()
	v, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer v.Close()
	other, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer other.Close()
	recv := func(c *net.UDPConn) []byte {
		buf := make([]byte, 2048)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(2*time.Second)))
		n, _, err := c.ReadFrom(buf)
		require.NoError(t, err)
		return buf[:n]
	}
	payload := []byte{0x40, 'q', 'u', 'i', 'c'}

	_, err = v.WriteTo(quichook.ForgeData(0, payload), h.LocalAddr())
	require.NoError(t, err)
	require.Equal(t, payload, <-got, "a guessed cookie: the payload still reaches quic-go")
	require.Equal(t, int64(1), h.Stats().Unauthenticated)

	// v learns its cookie, then is forgotten: another address's hello
	// takes the one unvalidated place.
	_, err = v.WriteTo(quichook.Hello(1, nil), h.LocalAddr())
	require.NoError(t, err)
	cookie := quichook.HelloCookie(recv(v))
	_, err = other.WriteTo(quichook.Hello(2, nil), h.LocalAddr())
	require.NoError(t, err)
	recv(other)
	require.Equal(t, int64(1), h.Stats().UnvalidatedEvicted)

	_, err = v.WriteTo(quichook.DataWithCookie(cookie, 0, payload), h.LocalAddr())
	require.NoError(t, err)
	require.Equal(t, payload, <-got, "the forgotten peer's data reaches quic-go")
	hello := recv(v)
	require.Equal(t, byte(0x04), hello[0], "and it is asked for its cookie")
	require.Equal(t, cookie, quichook.HelloCookie(hello))
	st := h.Stats()
	require.Equal(t, int64(1), st.ShimReceived, "recorded: the cookie validated it")
	require.Zero(t, st.Malformed)
}
