package netem

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFIFOLimits(t *testing.T) {
	tests := []struct {
		name       string
		cfg        FIFOConfig
		sizes      []int
		wantKept   int
		wantBytes  int
		wantDroped []int // indices of dropped packets
	}{
		{"packets", FIFOConfig{Limit: 3}, []int{100, 100, 100, 100, 100}, 3, 300, []int{3, 4}},
		{"bytes", FIFOConfig{LimitBytes: 1000}, []int{400, 400, 400, 200, 1}, 3, 1000, []int{2, 4}},
		{"both, packets bind", FIFOConfig{Limit: 2, LimitBytes: 10000}, []int{100, 100, 100}, 2, 200, []int{2}},
		{"both, bytes bind", FIFOConfig{Limit: 10, LimitBytes: 250}, []int{100, 100, 100}, 2, 200, []int{2}},
		{"larger than the byte limit", FIFOConfig{LimitBytes: 1000}, []int{1001}, 0, 0, []int{0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var d drops
			q, err := NewFIFO(tc.cfg, d.fn)
			require.NoError(t, err)
			ps := make([]*Packet, len(tc.sizes))
			for i, s := range tc.sizes {
				ps[i] = pkt(uint64(i), s)
				q.Enqueue(at(0), ps[i])
			}
			require.Equal(t, tc.wantKept, q.Len())
			require.Equal(t, tc.wantBytes, q.Bytes())
			var dropped []int
			for _, p := range d.pkts {
				dropped = append(dropped, int(p.FlowKey))
			}
			require.Equal(t, tc.wantDroped, dropped)
			require.Equal(t, len(tc.wantDroped), d.count(DropOverflow))
			// What is kept comes out in order.
			prev := -1
			for p := q.Dequeue(at(0)); p != nil; p = q.Dequeue(at(0)) {
				require.Greater(t, int(p.FlowKey), prev)
				prev = int(p.FlowKey)
			}
			require.Zero(t, q.Len())
			require.Zero(t, q.Bytes())
		})
	}
}

func TestFIFODefaultLimit(t *testing.T) {
	var d drops
	q, err := NewFIFO(FIFOConfig{}, d.fn)
	require.NoError(t, err)
	for i := 0; i < DefaultLimit+5; i++ {
		q.Enqueue(at(0), pkt(0, 1500))
	}
	require.Equal(t, DefaultLimit, q.Len())
	require.Equal(t, 5, d.count(DropOverflow))
}

func TestFIFONegativeLimit(t *testing.T) {
	_, err := NewFIFO(FIFOConfig{Limit: -1}, nil)
	require.ErrorIs(t, err, ErrInvalidConfig)
}
