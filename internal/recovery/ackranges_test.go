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
