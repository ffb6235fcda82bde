package session

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSendStreamRetransmitsOnlyWhatIsMissing(t *testing.T) {
	s := sendStream{limit: 100}
	require.Equal(t, 100, s.write(make([]byte, 150)), "bounded by limit")
	off, d, _, retx, ok := s.chunk(40, 1000)
	require.True(t, ok)
	require.False(t, retx)
	require.Equal(t, int64(0), off)
	require.Len(t, d, 40)
	s.chunk(40, 1000) // 40..80
	s.chunk(40, 1000) // 80..100
	_, _, _, _, ok = s.chunk(40, 1000)
	require.False(t, ok, "nothing left")

	s.onAcked(40, 40, false) // middle arrived
	require.Equal(t, int64(0), s.base, "hole at 0 keeps the buffer")
	s.onLost(0, 80, false) // the packet of 0..80 lost (40..80 acked meanwhile)
	off, d, _, retx, ok = s.chunk(100, 1000)
	require.True(t, ok)
	require.True(t, retx)
	require.Equal(t, int64(0), off)
	require.Len(t, d, 40, "only the unacknowledged part is resent")
	_, _, _, _, ok = s.chunk(100, 1000)
	require.False(t, ok)

	s.onAcked(0, 40, false)
	s.onAcked(80, 20, false)
	require.Equal(t, int64(100), s.base)
	require.Zero(t, s.unacked())
	require.Equal(t, 100, s.space())
}

func TestSendStreamFlowControlAndFIN(t *testing.T) {
	s := sendStream{limit: 100}
	s.write(make([]byte, 60))
	_, d, _, _, _ := s.chunk(100, 50)
	require.Len(t, d, 50, "peer allows 50")
	require.True(t, s.blocked(50))
	s.finSet = true
	_, d, fin, _, ok := s.chunk(100, 60)
	require.True(t, ok)
	require.True(t, fin)
	require.Len(t, d, 10)
	s.onLost(50, 10, true)
	_, _, fin, retx, _ := s.chunk(100, 60)
	require.True(t, fin, "FIN resent with the lost tail")
	require.True(t, retx)
	s.onAcked(0, 60, true)
	require.True(t, s.done())
	require.Zero(t, s.write([]byte{1}), "no writes after FIN")
}

func TestRecvStreamReassemblesWithinWindow(t *testing.T) {
	const window = 64
	r := newRecvStream(window, window, 0)
	src := make([]byte, 1000)
	for i := range src {
		src[i] = byte(i)
	}
	var got bytes.Buffer
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 17)
	for got.Len() < len(src) {
		// Deliver random pieces inside the window, in any order, with dups.
		lo := r.readOff + int64(rng.IntN(window))
		hi := min(lo+int64(1+rng.IntN(20)), int64(len(src)), r.maxData())
		if lo < hi {
			require.True(t, r.onData(lo, src[lo:hi], hi == int64(len(src))))
		}
		n := r.read(buf)
		got.Write(buf[:n])
	}
	require.Equal(t, src, got.Bytes())
	require.True(t, r.eof())
	require.False(t, r.onData(r.maxData()-1, []byte{1, 2}, false), "beyond the window")
}

func TestRecvStreamRejectsConflictingFIN(t *testing.T) {
	r := newRecvStream(100, 100, 0)
	require.True(t, r.onData(0, []byte("abc"), true))
	require.False(t, r.onData(3, []byte("d"), false), "data after FIN")
	require.False(t, r.onData(0, []byte("ab"), true), "FIN moved")
	require.True(t, r.onData(0, []byte("abc"), true), "the same FIN again is fine")
}
