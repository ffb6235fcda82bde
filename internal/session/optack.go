package session

import (
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/internal/wire"
)

// optimisticAck reports whether a acknowledges a packet this end never
// sent: one beyond the largest sent, or one of the numbers the recovery
// tracker skipped (RFC 9000 §21.4). Either proves the peer acknowledges
// packets it did not receive, which lets it make the congestion controller
// send faster than the path carries; the caller closes the connection.
func (s *Session) optimisticAck(a *wire.Ack) bool {
	if cc.PacketNumber(a.Ranges[0].Largest) >= s.tr.Next() { // ranges are descending
		return true
	}
	for _, r := range a.Ranges[:a.NRanges] {
		if s.tr.SkippedIn(cc.PacketNumber(r.Smallest), cc.PacketNumber(r.Largest)) {
			return true
		}
	}
	return false
}

// skipSeed is the seed of the packet numbers this end skips: the driver's
// (a secret), or, without one, one derived from the connection ID, which
// is at least unknown to off-path hosts. The client's and server's
// sequences differ.
func skipSeed(seed, connID uint64, client bool) uint64 {
	if seed == 0 {
		seed = connID ^ 0x9e3779b97f4a7c15
	}
	if client {
		seed = ^seed
	}
	return seed
}
