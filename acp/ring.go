package acp

import (
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// slotState is what the regulator knows about one sent update.
type slotState uint8

const (
	slotFree        slotState = iota // empty, acknowledged, or overwritten
	slotOutstanding                  // sent, neither acknowledged nor declared lost: in the backlog
	slotLost                         // declared lost; kept so a late ACK still counts for age
)

// slot is the per-update state: what an ACK needs to place the delivery on the
// monitor's sawtooth.
type slot struct {
	pn    cc.PacketNumber
	seq   uint64     // the regulator's count of updates sent before this one
	gen   clock.Mono // g_i: when the update's content was generated
	sent  clock.Mono // when it was sent (sender clock)
	state slotState
}

// updateRing holds the state of the most recent sent updates, indexed by
// packet number modulo a power-of-two capacity, so lookup is O(1) and nothing
// is allocated once it has grown. Sending packet number pn reuses the slot of
// pn − capacity (or any earlier number with the same residue): an update still
// outstanding that far behind is evicted and counted lost, an update already
// declared lost is forgotten (a very late ACK for it then counts for RTT and Z
// but not for age).
//
// The ring starts with ringMinSlots and doubles, up to the capacity, when a
// send would reuse a slot still held (outstanding or lost): it then holds
// exactly what a ring of full capacity would, but a source that keeps a few
// updates in flight, and a monitor's session that sends none, hold a few
// hundred bytes instead of 32 KiB (1024 slots).
type updateRing struct {
	slots    []slot
	mask     cc.PacketNumber
	capacity int // the power of two the ring may grow to
}

// ringMinSlots is the ring's first size.
const ringMinSlots = 16

func newUpdateRing(capacity int) updateRing {
	n := 1
	for n < capacity {
		n <<= 1
	}
	return updateRing{capacity: n}
}

// put stores a newly sent update and returns the state of the update it
// evicted (slotFree if none).
func (r *updateRing) put(pn cc.PacketNumber, seq uint64, gen, sent clock.Mono) slotState {
	if r.slots == nil {
		r.resize(min(ringMinSlots, r.capacity))
	}
	for r.slots[pn&r.mask].state != slotFree && len(r.slots) < r.capacity {
		r.resize(2 * len(r.slots))
	}
	s := &r.slots[pn&r.mask]
	evicted := s.state // packet numbers are never reused (cc.PacketNumber)
	*s = slot{pn: pn, seq: seq, gen: gen, sent: sent, state: slotOutstanding}
	return evicted
}

// resize moves every held slot into a ring of n slots (a power of two, at
// least the current size): numbers distinct modulo the old size are
// distinct modulo the new one, so none collide.
func (r *updateRing) resize(n int) {
	old := r.slots
	r.slots, r.mask = make([]slot, n), cc.PacketNumber(n-1)
	for _, s := range old {
		if s.state != slotFree {
			r.slots[s.pn&r.mask] = s
		}
	}
}

// get returns the slot of pn, or nil if the ring no longer (or never) held it.
func (r *updateRing) get(pn cc.PacketNumber) *slot {
	if r.slots == nil {
		return nil
	}
	s := &r.slots[pn&r.mask]
	if s.state == slotFree || s.pn != pn {
		return nil
	}
	return s
}

// len is the capacity.
func (r *updateRing) len() int { return r.capacity }
