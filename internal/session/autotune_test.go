package session

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock"
)

// Growing the ring re-lays its bytes out modulo the new size: data received
// out of order, with holes, duplicates and the read position anywhere in
// the ring, must come out exact, and the limit the receiver may advertise
// must never go down.
func TestRecvStreamGrowKeepsOutOfOrderData(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		r := newRecvStream(64, 4096, 0)
		src := make([]byte, 20_000)
		for i := range src {
			src[i] = byte(rng.Uint32())
		}
		var got bytes.Buffer
		buf := make([]byte, 1+rng.IntN(50))
		lastMax := r.maxData()
		for got.Len() < len(src) {
			window := int(r.maxData() - r.readOff)
			lo := r.readOff + int64(rng.IntN(window))
			hi := min(lo+int64(1+rng.IntN(40)), int64(len(src)), r.maxData())
			if lo < hi {
				require.True(t, r.onData(lo, src[lo:hi], hi == int64(len(src))))
			}
			if rng.IntN(40) == 0 && len(r.ring) < r.maxRing {
				r.grow(min(len(r.ring)*(2+rng.IntN(2)), r.maxRing)) // also non-power-of-two sizes
			}
			if rng.IntN(3) == 0 {
				n := r.read(buf)
				got.Write(buf[:n])
			}
			if r.maxData() < lastMax || len(r.ring) > r.maxRing {
				t.Fatalf("seed %d: limit %d after %d, ring %d of at most %d", seed, r.maxData(), lastMax, len(r.ring), r.maxRing)
			}
			lastMax = r.maxData()
		}
		require.Equal(t, src, got.Bytes(), "seed %d", seed)
		require.True(t, r.eof())
		require.Greater(t, len(r.ring), 64, "seed %d: never grew", seed)
	}
}

// A reader that empties windows faster than four RTTs each doubles the
// ring up to its maximum; one that takes longer keeps it.
func TestRecvStreamAutoTune(t *testing.T) {
	const rtt = 10 * time.Millisecond
	run := func(perWindow time.Duration) *recvStream {
		r := newRecvStream(1<<10, 16<<10, 0)
		now := clock.Mono(0)
		buf := make([]byte, 256)
		for range 200 {
			// One window arrives and is read, in perWindow, in quarters:
			// an ACK (a window update) after each.
			for range 4 {
				n := int64(len(r.ring) / 4)
				require.True(t, r.onData(r.readOff, make([]byte, n), false))
				for r.readable() > 0 {
					r.read(buf)
				}
				now = now.Add(perWindow / 4)
				prev := r.maxData()
				r.autoTune(now, rtt)
				require.GreaterOrEqual(t, r.maxData(), prev)
			}
		}
		return &r
	}
	require.Equal(t, 16<<10, len(run(rtt).ring), "fast reader: grows to the maximum")
	require.Equal(t, 1<<10, len(run(10*rtt).ring), "slow reader: stays")
	r := newRecvStream(1<<10, 16<<10, 0)
	r.readOff = 1 << 10
	r.autoTune(clock.Mono(time.Microsecond), 0)
	require.Equal(t, 1<<10, len(r.ring), "no RTT estimate, no growth")
}

// The send buffer's limit doubles while the buffer is what limits the
// sender and a buffer's worth is acknowledged in less than bufferRTTs
// minimum RTTs; it stops at maxLimit, and the backing array stays within
// twice the limit.
func TestSendStreamAutoTune(t *testing.T) {
	const minRTT = time.Millisecond
	run := func(rate float64) *sendStream { // rate: bytes per minRTT
		s := sendStream{limit: 4 << 10, maxLimit: 256 << 10}
		now := clock.Mono(0)
		p := make([]byte, 1000)
		for range 2000 {
			for s.write(p) > 0 {
			}
			for {
				if _, _, _, _, ok := s.chunk(1000, 1<<62); !ok {
					break
				}
			}
			require.True(t, s.limit == s.maxLimit || s.limitedByBuffer(true, 1<<62))
			require.False(t, s.limitedByBuffer(false, 1<<62), "the congestion window limits")
			require.False(t, s.limitedByBuffer(true, s.next), "flow control limits")
			s.autoTune(now, minRTT, minRTT, 0)
			// One minRTT later, rate bytes are acknowledged.
			now = now.Add(minRTT)
			n := min(int64(rate), s.next-s.base)
			s.onAcked(s.base, int(n), false)
			require.LessOrEqual(t, cap(s.arr), 2*s.limit)
			require.LessOrEqual(t, s.limit, s.maxLimit)
		}
		return &s
	}
	// The buffer must hold bufferRTTs × rate × minRTT bytes: 4 × 8 KiB.
	s := run(8 << 10)
	require.GreaterOrEqual(t, s.limit, bufferRTTs*8<<10)
	require.Less(t, s.limit, 2*bufferRTTs*8<<10, "grew past what the path needs")
	require.Equal(t, 256<<10, run(1<<20).limit, "a fast path: up to maxLimit, no further")
	fixed := sendStream{limit: 4 << 10} // maxLimit 0: fixed
	fixed.write(make([]byte, 8<<10))
	fixed.chunk(8<<10, 1<<62)
	require.False(t, fixed.limitedByBuffer(true, 1<<62))
}

// The window rule: a buffer that stops the sender while the congestion
// window would let more through grows until the window limits (and not
// much further), even where another flow's queue stretched the round trip so
// far past the minimum that the rate rule never fires (10 minimum RTTs
// per buffer's worth here, against bufferRTTs).
func TestSendStreamFollowsWindow(t *testing.T) {
	const minRTT = 2 * time.Millisecond
	const rtt = 10 * minRTT // the standing queue of someone else
	run := func(cwnd int64) *sendStream {
		s := sendStream{limit: 4 << 10, maxLimit: 1 << 20}
		now := clock.Mono(0)
		p := make([]byte, 1000)
		for range 500 {
			for s.write(p) > 0 {
			}
			for s.next-s.base < cwnd { // the congestion window
				if _, _, _, _, ok := s.chunk(1000, 1<<62); !ok {
					break
				}
			}
			if s.limitedByBuffer(s.next-s.base < cwnd, 1<<62) {
				s.autoTune(now, minRTT, rtt, cwnd)
			}
			// One RTT later everything in flight is acknowledged.
			now = now.Add(rtt)
			s.onAcked(s.base, int(s.next-s.base), false)
		}
		return &s
	}
	s := run(100 << 10)
	require.GreaterOrEqual(t, int64(s.limit), int64(100<<10), "the buffer holds the window")
	require.Less(t, int64(s.limit), int64(4*100<<10), "and not much more")
	require.Equal(t, 4<<10, run(1<<10).limit, "a window the buffer holds: no growth (the rate rule cannot fire at 10 minimum RTTs)")
	require.Equal(t, 1<<20, run(1<<30).limit, "up to maxLimit, no further")
}

// Under windowRuleRTT the window rule stays out: a loopback sender's own
// queue stretches its round trip, and the window that accepts it asks for
// megabytes the path does not need. The rate rule alone decides there.
func TestSendStreamWindowRuleNotOnShortPaths(t *testing.T) {
	s := sendStream{limit: 64 << 10, maxLimit: 4 << 20, arr: make([]byte, 0, 128<<10)}
	s.buf = s.arr[:0]
	s.write(make([]byte, 64<<10))
	s.chunk(64<<10, 1<<62)
	require.True(t, s.limitedByBuffer(true, 1<<62))
	// 2 ms smoothed, 20 µs minimum: the rate rule sees 100 minimum RTTs
	// per buffer, the window asks for 4 MiB.
	s.autoTune(clock.Mono(time.Millisecond), 20*time.Microsecond, 2*time.Millisecond, 4<<20)
	require.Equal(t, 64<<10, s.limit)
	s.autoTune(clock.Mono(time.Millisecond), 20*time.Microsecond, windowRuleRTT, 4<<20)
	require.Equal(t, 128<<10, s.limit, "at windowRuleRTT it applies")
}

// MaxData on the wire never shrinks and never exceeds the receiver's ring,
// while the ring grows under a fast reader.
func TestSessionMaxDataGrowsNeverShrinks(t *testing.T) {
	p := OpenPair(t, Config{}, Link{Delay: 5 * time.Millisecond})
	data := make([]byte, 3<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	got := make([]byte, 0, len(data))
	rd := make([]byte, 64<<10)
	w := 0
	var lastPeerMax, lastAdvertised int64
	for i := 0; i < 100_000 && !p.Srv.in.eof(); i++ {
		if w < len(data) {
			w += p.Cli.out.write(data[w:])
			p.Cli.out.finSet = w == len(data)
		}
		p.Run(100 * time.Microsecond)
		n, _ := p.Srv.Read(rd)
		got = append(got, rd[:n]...)
		require.GreaterOrEqual(t, p.Cli.peerMax, lastPeerMax, "peer's MaxData went down")
		require.GreaterOrEqual(t, p.Srv.in.advertised, lastAdvertised, "advertised MaxData went down")
		require.LessOrEqual(t, p.Srv.in.advertised, p.Srv.in.readOff+int64(len(p.Srv.in.ring)), "advertised beyond the ring")
		lastPeerMax, lastAdvertised = p.Cli.peerMax, p.Srv.in.advertised
	}
	require.True(t, p.Srv.in.eof(), "FIN delivered")
	require.Equal(t, data, got)
	require.Greater(t, len(p.Srv.in.ring), initialRecvWindow, "the ring grew")
	require.LessOrEqual(t, len(p.Srv.in.ring), p.Srv.cfg.ReceiveWindow)
}
