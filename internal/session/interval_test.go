package session

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRanges(t *testing.T) {
	var s ranges
	s.add(10, 20)
	s.add(30, 40)
	s.add(20, 25) // adjacent: merges
	require.Equal(t, []span{{10, 25}, {30, 40}}, s.r)
	s.add(0, 5)
	s.add(24, 31) // bridges
	require.Equal(t, []span{{0, 5}, {10, 40}}, s.r)
	require.Equal(t, int64(5), s.prefix(0))
	require.Equal(t, int64(7), s.prefix(7))
	require.True(t, s.contains(12, 40))
	require.False(t, s.contains(4, 11))
	lo, hi, ok := s.firstGap(0, 50)
	require.True(t, ok)
	require.Equal(t, [2]int64{5, 10}, [2]int64{lo, hi})
	_, _, ok = s.firstGap(12, 30)
	require.False(t, ok)
	lo, hi, ok = s.firstGap(35, 50)
	require.True(t, ok)
	require.Equal(t, [2]int64{40, 50}, [2]int64{lo, hi})
	s.trimBelow(12)
	require.Equal(t, []span{{12, 40}}, s.r)
	s.add(5, 5) // empty: ignored
	require.Len(t, s.r, 1)
}
