package session

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/internal/wire"
)

// The binary-searched set answers every question as a plain bitmap of the
// same bytes does, through random adds (overlapping, adjacent, bridging)
// and trims.
func TestRangesMatchesBitmap(t *testing.T) {
	const size = 512
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 200 {
		var s ranges
		var bits [size]bool
		floor := int64(0)
		for range 60 {
			lo := floor + rng.Int64N(size-floor)
			hi := min(lo+1+rng.Int64N(12), size)
			require.True(t, s.add(lo, hi))
			for x := lo; x < hi; x++ {
				bits[x] = true
			}
			if rng.IntN(10) == 0 {
				floor = min(floor+rng.Int64N(40), size-1)
				s.trimBelow(floor)
				for x := range floor {
					bits[x] = false
				}
			}
			// Disjoint, non-adjacent, ascending, and the same bytes.
			for i := 1; i < len(s.r); i++ {
				require.Less(t, s.r[i-1].hi, s.r[i].lo, "round %d: %v", round, s.r)
			}
			for x := range int64(size) {
				if bits[x] != s.contains(x, x+1) {
					t.Fatalf("round %d byte %d: held %v, set %v", round, x, bits[x], s.r)
				}
			}
			q := rng.Int64N(size)
			want := q
			for want < size && bits[want] {
				want++
			}
			require.Equal(t, want, s.prefix(q))
			qhi := min(q+1+rng.Int64N(50), size)
			glo, ghi, ok := s.firstGap(q, qhi)
			wlo := q
			for wlo < qhi && bits[wlo] {
				wlo++
			}
			require.Equal(t, wlo < qhi, ok)
			if ok {
				whi := wlo
				for whi < qhi && !bits[whi] {
					whi++
				}
				require.Equal(t, [2]int64{wlo, whi}, [2]int64{glo, ghi}, "firstGap(%d, %d) of %v", q, qhi, s.r)
			}
		}
	}
}

// sparseAdds adds n 1-byte ranges at every other offset, in a random
// order, to s and returns how many were stored.
func sparseAdds(s *ranges, n int, seed uint64) int {
	rng := rand.New(rand.NewPCG(seed, 1))
	stored := 0
	for _, k := range rng.Perm(n) {
		off := 2 * int64(k)
		if s.add(off, off+1) {
			stored++
		}
	}
	return stored
}

// A capped set never holds more ranges than its cap, however many sparse
// bytes are offered, and still takes what merges with what it holds.
func TestRangesCapHolds(t *testing.T) {
	s := ranges{maxRanges: 1024}
	stored := sparseAdds(&s, 100_000, 1)
	require.Len(t, s.r, 1024)
	require.Equal(t, 1024, stored, "the rest refused")
	// A new hole is refused …
	last := s.r[len(s.r)-1]
	require.False(t, s.fits(last.hi+5, last.hi+6))
	require.False(t, s.add(last.hi+5, last.hi+6))
	// … bytes that extend or bridge held ranges are taken at the cap.
	first := s.r[0]
	require.True(t, s.fits(first.hi, first.hi+1))
	require.True(t, s.add(first.hi, first.hi+1))
	require.True(t, s.contains(first.lo, first.hi+1))
	require.LessOrEqual(t, len(s.r), 1024)
	// Without the cap the same offers are all held.
	var open ranges
	require.Equal(t, 20_000, sparseAdds(&open, 20_000, 1))
	require.Len(t, open.r, 20_000)
}

// The cost of an insert does not grow with the number of inserts a peer
// attempts: per insert, 100 000 sparse inserts into a capped set cost about
// what 1000 do (a linear insert would make them ~100 times dearer). The
// bound is a generous ratio of two timings on the same machine, the best
// of several runs, never an absolute time.
func TestRangesInsertCostBounded(t *testing.T) {
	perInsert := func(n int) time.Duration {
		best := time.Duration(1 << 62)
		for run := range 5 {
			s := ranges{maxRanges: 1024}
			start := time.Now()
			sparseAdds(&s, n, uint64(run))
			best = min(best, time.Since(start)/time.Duration(n))
		}
		return best
	}
	small, large := perInsert(1_000), perInsert(100_000)
	t.Logf("per insert: %v at 1k attempts, %v at 100k", small, large)
	require.Less(t, large, 8*small+time.Microsecond)
}

// BenchmarkRangesSparseInsert is the cost of one 1-byte insert at a random
// offset into a receive set already holding gaps holes: what a peer that
// sends sparse 1-byte Data frames makes the receiver pay per frame. With
// the default cap, holes beyond 1024 are refused.
func BenchmarkRangesSparseInsert(b *testing.B) {
	for _, gaps := range []int{1_000, 100_000, 1_000_000} {
		for _, capped := range []bool{false, true} {
			name := fmt.Sprintf("gaps=%d/uncapped", gaps)
			maxRanges := 0
			if capped {
				name, maxRanges = fmt.Sprintf("gaps=%d/capped1024", gaps), 1024
			}
			b.Run(name, func(b *testing.B) {
				s := ranges{maxRanges: maxRanges}
				for k := range gaps { // ascending: cheap to build
					s.add(4*int64(k), 4*int64(k)+1)
				}
				rng := rand.New(rand.NewPCG(1, 2))
				b.ResetTimer()
				for range b.N {
					// Into a hole, then out again, so the set keeps its size.
					off := 4*rng.Int64N(int64(gaps)) + 2
					if s.add(off, off+1) {
						b.StopTimer()
						i := s.find(off)
						s.r = append(s.r[:i], s.r[i+1:]...)
						b.StartTimer()
					}
				}
			})
		}
	}
}

// A peer sending 1-byte Data frames at every other offset of the window
// cannot make the receiver hold more than MaxStreamGaps holes: the excess
// is dropped unacknowledged and counted, the session stays open. Without
// the cap the receiver holds one range per frame.
func TestSparseFramesCannotExceedGapCap(t *testing.T) {
	attack := func(maxGaps int) (*Session, int) {
		srv, err := New(Config{MaxStreamGaps: maxGaps}, 9, false, 0)
		require.NoError(t, err)
		frames := 0
		buf := make([]byte, 0, 256)
		// Offsets 0..2 never come: nothing is readable, every frame a hole.
		for off := int64(3); off < initialRecvWindow; off += 2 {
			b := wire.AppendHeader(buf[:0], wire.Header{Type: wire.TypeData, ConnID: 9, PN: int64(frames), Timestamp: 1000})
			b = wire.AppendData(b, &wire.Data{Offset: off, Payload: []byte{0xee}})
			require.True(t, srv.Handle(0, 1000, b))
			frames++
		}
		require.False(t, srv.Closed(), "%v", srv.Err())
		return srv, frames
	}
	srv, frames := attack(0) // the default
	require.Greater(t, frames, 30_000)
	require.Len(t, srv.in.have.r, 1024)
	require.EqualValues(t, frames-1024, srv.Stats(0).StreamFramesDropped)
	// The dropped frames were not acknowledged: the sender will resend them.
	largest := srv.ranges.Largest()
	require.EqualValues(t, 1023, largest, "only the stored frames' packets are acknowledged")

	// At the cap, bytes at the next offset to read still go in: nothing
	// is missing below them, and they are what lets the reader progress.
	b := wire.AppendHeader(nil, wire.Header{Type: wire.TypeData, ConnID: 9, PN: int64(frames), Timestamp: 1000})
	require.True(t, srv.Handle(0, 1000, wire.AppendData(b, &wire.Data{Offset: 0, Payload: []byte{1}})))
	require.Equal(t, 1024, srv.in.holes())
	require.Len(t, srv.in.have.r, 1025)
	n, err := srv.Read(make([]byte, 10))
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Len(t, srv.in.have.r, 1024)

	open, _ := attack(1 << 30)
	require.Len(t, open.in.have.r, frames, "without the cap: one range per frame")
}

// Dropping frames at the gap cap loses nothing: with a cap of 2 holes and
// 15 % of packets lost, a transfer still arrives whole (the dropped frames
// are resent like lost ones).
func TestGapCapTransferCompletes(t *testing.T) {
	p := OpenPair(t, Config{MaxStreamGaps: 2}, Link{Delay: 5 * time.Millisecond})
	rng := rand.New(rand.NewPCG(5, 6))
	p.Filter = func(from *Session, _ []byte) bool { return from != p.Cli || rng.IntN(100) >= 15 }
	data := make([]byte, 1_000_000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	got, rd, w := make([]byte, 0, len(data)), make([]byte, 64<<10), 0
	maxHeld := 0
	for i := 0; i < 200_000 && !p.Srv.in.eof(); i++ {
		maxHeld = max(maxHeld, p.Srv.in.holes())
		if w < len(data) {
			w += p.Cli.out.write(data[w:])
			p.Cli.out.finSet = w == len(data)
		}
		p.Run(100 * time.Microsecond)
		n, _ := p.Srv.Read(rd)
		got = append(got, rd[:n]...)
	}
	require.True(t, p.Srv.in.eof(), "FIN delivered")
	require.Equal(t, data, got)
	t.Logf("%d holes held at most, %d frames dropped", maxHeld, p.Srv.Stats(p.Now).StreamFramesDropped)
	require.LessOrEqual(t, maxHeld, 2)
	require.Positive(t, p.Srv.Stats(p.Now).StreamFramesDropped, "the cap was reached")
}
