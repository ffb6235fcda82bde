package acp

import (
	"math/rand/v2"
	"testing"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/stretchr/testify/require"
)

// The growing ring holds exactly what a ring allocated at full capacity
// holds, through random sends, ACKs and losses, and stays small while few
// updates are held.
func TestRingGrowsOnlyWhenASlotIsHeld(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	grow := newUpdateRing(256)
	full := newUpdateRing(256)
	full.resize(256)
	var pn cc.PacketNumber
	for step := range 4000 {
		inFlight, lossy := 4, false
		if step > 2000 {
			// Losses stay held (a late ACK still counts for age) and
			// more are in flight than the capacity: evictions.
			inFlight, lossy = 300, true
		}
		pn += cc.PacketNumber(1 + rng.IntN(3)) // stream packets take numbers too
		at := clock.Mono(step)
		require.Equal(t, full.put(pn, uint64(pn), at, at), grow.put(pn, uint64(pn), at, at), "evictions agree at %d", pn)
		if !lossy { // every update is acknowledged inFlight packets later
			for q := pn - cc.PacketNumber(inFlight) - 3; q <= pn-cc.PacketNumber(inFlight); q++ {
				for _, r := range []*updateRing{&grow, &full} {
					if s := r.get(q); s != nil {
						s.state = slotFree
					}
				}
			}
		}
		old := pn - cc.PacketNumber(rng.IntN(inFlight*2))
		switch op := rng.IntN(3); {
		case op == 2 || op == 1 && !lossy:
		case op == 0: // acknowledged
			for _, r := range []*updateRing{&grow, &full} {
				if s := r.get(old); s != nil {
					s.state = slotFree
				}
			}
		default: // lost
			for _, r := range []*updateRing{&grow, &full} {
				if s := r.get(old); s != nil {
					s.state = slotLost
				}
			}
		}
		if step == 2000 {
			require.LessOrEqual(t, len(grow.slots), 64, "a few updates in flight keep the ring small")
		}
		for q := pn - 40; q <= pn; q++ {
			require.Equal(t, full.get(q) != nil, grow.get(q) != nil, "pn %d", q)
			if s := full.get(q); s != nil {
				require.Equal(t, *s, *grow.get(q))
			}
		}
	}
	require.Equal(t, 256, len(grow.slots), "grew to capacity when more were held")
}

// A regulator that never sends (a monitor's) allocates no ring.
func TestRingUnusedAllocatesNothing(t *testing.T) {
	r, err := NewRegulator(Config{})
	require.NoError(t, err)
	r.OnAck(ms(1), cc.AckSample{PacketNumber: 7})
	require.Nil(t, r.ring.slots)
	require.Equal(t, DefaultCapacity, r.ring.len())
}
