package quichook_test

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/transport/quichook"
)

// ackRecorder is a controller that records the samples the hook gives it
// and grants a window no test fills, unpaced. The hook calls it from its
// goroutines, the test reads it.
type ackRecorder struct {
	mu   sync.Mutex
	acks []cc.AckSample
}

func (r *ackRecorder) Name() string                                                         { return "recorder" }
func (r *ackRecorder) OnPacketSent(clock.Mono, cc.PacketNumber, cc.ByteCount, cc.ByteCount) {}
func (r *ackRecorder) OnLoss(clock.Mono, cc.LossEvent)                                      {}
func (r *ackRecorder) OnRetransmissionTimeout(clock.Mono)                                   {}
func (r *ackRecorder) Window() cc.ByteCount                                                 { return 1 << 30 }
func (r *ackRecorder) PacingRate() cc.Bandwidth                                             { return 0 }
func (r *ackRecorder) CanSend(inFlight cc.ByteCount) bool                                   { return true }
func (r *ackRecorder) Metrics() cc.Metrics                                                  { return cc.Metrics{} }

func (r *ackRecorder) OnAck(_ clock.Mono, a cc.AckSample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.acks = append(r.acks, a)
}

func (r *ackRecorder) samples() []cc.AckSample {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]cc.AckSample(nil), r.acks...)
}

// A peer that stamps impossible one-way delays on its feedback (below
// −u, above the datagram's round trip plus u, far below the smallest so
// far: the session's OWD guard) steers nothing: the hook's controller
// never sees those samples, only the acknowledgements, and Stats counts
// them, as transport's Stats.OWDDiscarded counts a fresh peer's. The
// peer is played by hand on a plain socket, the hook runs on a manual
// clock, so every round trip is exactly 40 ms (u = 21 ms).
func TestHookScreensImpossibleOWD(t *testing.T) {
	leakCheck(t)
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	rec := &ackRecorder{}
	h, err := quichook.ListenPacket("127.0.0.1:0", quichook.Config{
		Clock:         clk,
		NewController: func(cc.ByteCount) (cc.Controller, error) { return rec, nil },
	})
	require.NoError(t, err)
	readerDone := readLoop(h)
	defer func() { h.Close(); <-readerDone }()
	peer, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer peer.Close()
	to := peer.LocalAddr()
	buf := make([]byte, 2048)
	// read returns the next datagram the hook sent the peer.
	read := func() []byte {
		require.NoError(t, peer.SetReadDeadline(time.Now().Add(10*time.Second)))
		n, _, err := peer.ReadFrom(buf)
		require.NoError(t, err)
		return buf[:n]
	}
	quicish := append([]byte{0x40}, make([]byte, 1199)...) // a short-header QUIC datagram

	// The hello exchange: the hook's hello rides before its first
	// datagram; the answer echoes its cookie, so the hook shims from then
	// on.
	_, err = h.WriteTo(quicish, to)
	require.NoError(t, err)
	hookCookie := quichook.HelloCookie(read())
	require.NotZero(t, hookCookie, "a hello first")
	const peerCookie = 0x5eed
	_, err = peer.WriteTo(quichook.Hello(peerCookie, &hookCookie), h.LocalAddr())
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		st := h.Stats()
		return len(st.Peers) == 1 && st.Peers[0].Hooked
	}, 10*time.Second, time.Millisecond)

	// exchange has the hook send one datagram, lets 40 ms pass and
	// acknowledges it with sample owd, synced; it reports whether the
	// controller got the sample.
	exchange := func(owd time.Duration) bool {
		fed := h.Stats().FeedbackReceived
		_, err := h.WriteTo(quicish, to)
		require.NoError(t, err)
		var seq uint64
		for {
			cookie, s, ok := quichook.ParseShimData(read())
			if ok {
				require.Equal(t, uint64(peerCookie), cookie)
				seq = s
				break
			}
		}
		clk.Advance(40 * time.Millisecond)
		n := len(rec.samples())
		_, err = peer.WriteTo(quichook.Feedback(hookCookie, seq, int32(owd.Microseconds()), true), h.LocalAddr())
		require.NoError(t, err)
		require.Eventually(t, func() bool { return h.Stats().FeedbackReceived > fed }, 10*time.Second, time.Millisecond)
		acks := rec.samples()
		require.Len(t, acks, n+1, "the acknowledgement reaches the controller")
		a := acks[n]
		require.Equal(t, cc.PacketNumber(seq), a.PacketNumber)
		require.Equal(t, 40*time.Millisecond, a.RTT)
		require.True(t, a.ClockSynced)
		return a.OWDValid
	}
	require.True(t, exchange(35*time.Millisecond), "an asymmetric path: 35 of 40 ms forward")
	require.False(t, exchange(-30*time.Millisecond), "below −u: arrived before it was sent")
	require.False(t, exchange(70*time.Millisecond), "above 40 ms + u: longer than its round trip")
	require.False(t, exchange(-15*time.Millisecond), "above −u, but below 35 − 2u = −7 ms")
	require.True(t, exchange(-5*time.Millisecond), "within 2u of the smallest")

	st := h.Stats()
	require.Equal(t, int64(3), st.OWDDiscarded)
	require.Len(t, st.Peers, 1)
	require.Equal(t, int64(3), st.Peers[0].OWDDiscarded)
	require.Zero(t, st.Malformed)
	for _, a := range rec.samples() {
		if a.OWDValid {
			require.Contains(t, []time.Duration{35 * time.Millisecond, -5 * time.Millisecond}, a.OWD,
				"only the possible samples reached the controller")
		}
	}
}
