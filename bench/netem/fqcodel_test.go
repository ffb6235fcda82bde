package netem

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// noAQM is a CoDel target no test reaches, to test FQ scheduling alone.
const noAQM = time.Hour

func TestFQCoDelSparseFlowFirst(t *testing.T) {
	q, err := NewFQCoDel(FQCoDelConfig{}, nil)
	require.NoError(t, err)
	require.NotEqual(t, q.FlowIndex(1), q.FlowIndex(2))
	for i := 0; i < 50; i++ {
		q.Enqueue(at(0), pkt(1, 1500))
	}
	// The bulk flow has used its first quantum and sits on old flows.
	for i := 0; i < 3; i++ {
		require.Equal(t, uint64(1), q.Dequeue(at(time.Duration(i)*time.Millisecond)).FlowKey)
	}
	sparse := pkt(2, 100)
	q.Enqueue(at(3*time.Millisecond), sparse)
	require.Same(t, sparse, q.Dequeue(at(3*time.Millisecond)), "a new (sparse) flow is served before old flows")
	require.Equal(t, uint64(1), q.Dequeue(at(4*time.Millisecond)).FlowKey)
}

// TestFQCoDelByteFairness: DRR shares bytes, not packets, between two
// backlogged flows with different packet sizes (RFC 8290 §4.2).
func TestFQCoDelByteFairness(t *testing.T) {
	q, err := NewFQCoDel(FQCoDelConfig{Limit: 100000, Target: noAQM, Interval: noAQM}, nil)
	require.NoError(t, err)
	require.NotEqual(t, q.FlowIndex(1), q.FlowIndex(2))
	for i := 0; i < 1000; i++ {
		q.Enqueue(at(0), pkt(1, 1500))
	}
	for i := 0; i < 5000; i++ {
		q.Enqueue(at(0), pkt(2, 300))
	}
	served := map[uint64]int{}
	total := 0
	for total < 1_000_000 {
		p := q.Dequeue(at(time.Millisecond))
		require.NotNil(t, p)
		served[p.FlowKey] += p.Size
		total += p.Size
	}
	require.InEpsilon(t, served[1], served[2], 0.01, "bytes served: %v", served)
}

func TestFQCoDelOverflowDropsFromFattestFlow(t *testing.T) {
	var d drops
	q, err := NewFQCoDel(FQCoDelConfig{Limit: 10}, d.fn)
	require.NoError(t, err)
	require.NotEqual(t, q.FlowIndex(1), q.FlowIndex(2))
	// Flow 1: 3 big packets (4500 B); flow 2: 7 small ones (700 B). Flow 1
	// has fewer packets but more bytes, so it is the fattest.
	var first *Packet
	for i := 0; i < 3; i++ {
		p := pkt(1, 1500)
		if i == 0 {
			first = p
		}
		q.Enqueue(at(0), p)
	}
	for i := 0; i < 7; i++ {
		q.Enqueue(at(0), pkt(2, 100))
	}
	require.Empty(t, d.pkts)
	q.Enqueue(at(0), pkt(2, 100)) // the 11th packet, into the thin flow
	require.Len(t, d.pkts, 1)
	require.Same(t, first, d.pkts[0], "head of the fattest flow is dropped")
	require.Equal(t, DropOverflow, d.reasons[0])
	require.Equal(t, 10, q.Len())
	require.Equal(t, 2*1500+8*100, q.Bytes())
}

func TestFQCoDelByteLimit(t *testing.T) {
	var d drops
	q, err := NewFQCoDel(FQCoDelConfig{LimitBytes: 3000}, d.fn)
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		q.Enqueue(at(0), pkt(1, 1500))
	}
	require.Equal(t, 1, d.count(DropOverflow))
	require.Equal(t, 3000, q.Bytes())
}

// TestFQCoDelPerFlowAQM: CoDel runs per flow queue, so a flow whose queue
// stands above target is dropped while a flow that keeps its queue short
// is not.
func TestFQCoDelPerFlowAQM(t *testing.T) {
	var d drops
	q, err := NewFQCoDel(FQCoDelConfig{Limit: 100000}, d.fn)
	require.NoError(t, err)
	require.NotEqual(t, q.FlowIndex(1), q.FlowIndex(2))
	// 1000 bulk packets at once, then a 100-byte packet of flow 2 every
	// 2 ms; one dequeue per ms.
	for i := 0; i < 1000; i++ {
		q.Enqueue(at(0), pkt(1, 1500))
	}
	for ms := 1; ms < 1000; ms++ {
		now := at(time.Duration(ms) * time.Millisecond)
		if ms%2 == 0 {
			q.Enqueue(now, pkt(2, 100))
		}
		q.Dequeue(now)
	}
	require.NotZero(t, d.count(DropAQM))
	for _, p := range d.pkts {
		require.Equal(t, uint64(1), p.FlowKey)
	}
}

func TestFQCoDelConfigErrors(t *testing.T) {
	for _, cfg := range []FQCoDelConfig{
		{Flows: -1}, {Flows: maxFlows + 1}, {Quantum: -1}, {Limit: -5}, {Interval: -time.Second},
	} {
		_, err := NewFQCoDel(cfg, nil)
		require.ErrorIs(t, err, ErrInvalidConfig, "%+v", cfg)
	}
}

func TestFlowIndexSpread(t *testing.T) {
	q, err := NewFQCoDel(FQCoDelConfig{HashSeed: 7}, nil)
	require.NoError(t, err)
	used := map[int]bool{}
	for k := uint64(0); k < 100000; k++ {
		i := q.FlowIndex(k)
		require.True(t, i >= 0 && i < DefaultFlows)
		used[i] = true
	}
	require.Len(t, used, DefaultFlows)
	// Another seed maps keys differently.
	q2, err := NewFQCoDel(FQCoDelConfig{HashSeed: 8}, nil)
	require.NoError(t, err)
	same := 0
	for k := uint64(0); k < 1000; k++ {
		if q.FlowIndex(k) == q2.FlowIndex(k) {
			same++
		}
	}
	require.Less(t, same, 20)
}
