package recovery

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
)

func TestAckRanges(t *testing.T) {
	a := NewAckRanges(3)
	for _, pn := range []cc.PacketNumber{0, 1, 2} {
		dup, ooo := a.Insert(pn)
		require.False(t, dup)
		require.False(t, ooo)
	}
	_, ooo := a.Insert(5) // gap
	require.True(t, ooo)
	require.Equal(t, []Range{{5, 5}, {0, 2}}, a.Ranges())
	dup, _ := a.Insert(1)
	require.True(t, dup)
	a.Insert(4) // fills toward the older range
	a.Insert(3) // bridges: one range
	require.Equal(t, []Range{{0, 5}}, a.Ranges())
	a.Insert(7)
	a.Insert(9)
	a.Insert(11) // a fourth range: the oldest falls off
	require.Equal(t, []Range{{11, 11}, {9, 9}, {7, 7}}, a.Ranges())
	require.Equal(t, cc.PacketNumber(11), a.Largest())
}

func TestForgetDropsWhatThePeerHasSeen(t *testing.T) {
	a := NewAckRanges(16)
	for _, pn := range []cc.PacketNumber{1, 2, 3, 5, 6, 8, 10, 11} {
		a.Insert(pn)
	}
	require.Equal(t, []Range{{10, 11}, {8, 8}, {5, 6}, {1, 3}}, a.Ranges())
	a.Forget(5)
	require.Equal(t, []Range{{10, 11}, {8, 8}, {6, 6}}, a.Ranges(), "ranges at or below 5 go; 5..6 is cut to 6")
	a.Forget(11)
	require.Empty(t, a.Ranges())
	dup, _ := a.Insert(12)
	require.False(t, dup)
	require.Equal(t, []Range{{12, 12}}, a.Ranges())
	dup, _ = a.Insert(4) // a straggler below the forgotten floor
	require.False(t, dup, "recorded again, not taken for a duplicate")
	require.Equal(t, []Range{{12, 12}, {4, 4}}, a.Ranges())
}
