package recovery

import (
	"encoding/binary"
	"math/rand/v2"
	"sort"

	"github.com/fresh-udp/fresh/cc"
)

// Skipped packet numbers catch optimistic ACKs (RFC 9000 §21.4): a
// receiver that acknowledges packets before they arrive, to make the
// sender's congestion controller grow faster than the path allows. Now
// and then the sender leaves a packet number unused; an honest receiver
// never acknowledges it, so an ACK that does proves the peer acknowledges
// packets it never received, and the connection is closed.
//
// The gaps between skips are drawn from a ChaCha8 stream keyed by the
// driver's secret seed, so the receiver cannot predict them: uniform in
// [skipPeriod/2, 3·skipPeriod/2), one skip per skipPeriod packets on
// average. A skip costs one packet number and, at the receiver, one ACK
// range until the sender has seen it acknowledged.
const skipPeriod = 256

// keepSkipped is how many of the latest skipped numbers are remembered
// beyond those still inside the tracked window: an ACK range may reach
// back past the oldest packet in flight, and a skip remembered longer
// catches a lazy optimistic ACKer that acknowledges one range from the
// start of the connection.
const keepSkipped = 64

// skipper picks the numbers to skip and remembers them, ascending.
type skipper struct {
	rng     *rand.ChaCha8 // nil: not drawn from yet (see due)
	seed    uint64
	skipped []cc.PacketNumber
	pre     int32 // packets sent before rng was made (up to skipPeriod/2)
	until   int32 // packets to send before the next skip (below 3·skipPeriod/2)
	enabled bool
}

// EnableSkipping makes the tracker skip packet numbers, at intervals drawn
// from seed, which the peer must not know.
func (t *Tracker) EnableSkipping(seed uint64) {
	t.skip.seed, t.skip.enabled = seed, true
}

// start makes the generator and draws the first gap. It runs once the
// first skipPeriod/2 packets have gone, which no gap is shorter than: the
// generator's state (320 bytes) is not held by a connection that never
// sends that many (a monitor's, whose device is quiet), and the numbers
// skipped are those a generator made at EnableSkipping would skip.
func (s *skipper) start() {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], s.seed)
	binary.LittleEndian.PutUint64(key[8:], 0x736b6970706e7321) // domain separation: "skippns!"
	s.rng = rand.NewChaCha8(key)
	s.until = s.gap() - s.pre
}

func (s *skipper) gap() int32 {
	return skipPeriod/2 + int32(s.rng.Uint64()%skipPeriod)
}

// due reports whether the next packet number is to be skipped, counting
// one packet sent otherwise.
func (s *skipper) due() bool {
	if !s.enabled {
		return false
	}
	if s.rng == nil {
		if s.pre < skipPeriod/2 {
			s.pre++
			return false
		}
		s.start()
	}
	if s.until > 0 {
		s.until--
		return false
	}
	s.until = s.gap()
	return true
}

// add remembers pn as skipped and forgets the oldest skips below base
// beyond keepSkipped.
func (s *skipper) add(pn, base cc.PacketNumber) {
	s.skipped = append(s.skipped, pn)
	drop := 0
	for len(s.skipped)-drop > keepSkipped && s.skipped[drop] < base {
		drop++
	}
	if drop > 0 {
		n := copy(s.skipped, s.skipped[drop:])
		s.skipped = s.skipped[:n]
	}
}

// first is the index of the first skipped number ≥ pn.
func (s *skipper) first(pn cc.PacketNumber) int {
	return sort.Search(len(s.skipped), func(i int) bool { return s.skipped[i] >= pn })
}

// SkippedIn reports whether a packet number in [lo, hi] was skipped (as
// far as the tracker remembers): acknowledging it is an optimistic ACK.
func (t *Tracker) SkippedIn(lo, hi cc.PacketNumber) bool {
	i := t.skip.first(lo)
	return i < len(t.skip.skipped) && t.skip.skipped[i] <= hi
}

// Skipped is the skipped packet numbers remembered, ascending; the slice
// is the tracker's own.
func (t *Tracker) Skipped() []cc.PacketNumber { return t.skip.skipped }
