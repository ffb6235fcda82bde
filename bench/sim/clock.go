package sim

import (
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// Clock model. The sender's clock is the simulator's truth; each receiver's
// wall clock runs at (1 + skew) and is offset, as scenario.ClockOffset and
// ClockSkewPPM say. How the receiver corrects it is scenario.ClockSync:
//
//	"perfect"  the receiver knows θ exactly (an ideal NTP); default when the
//	           scenario sets no offset and no skew
//	"inband"   clock.Inband estimates θ from forward data stamps and the ACK
//	           stamps echoed back on data (T3, T4); default otherwise
//	"none"     no correction: OWD samples carry the offset and the receiver
//	           says its clock is not synchronised

// epochUS places the simulation at a realistic wall time (2025-01-01 UTC), so
// stamps look like real ones and never go negative.
const epochUS = 1735689600 * 1_000_000

type syncMode uint8

const (
	syncPerfect syncMode = iota
	syncInband
	syncNone
)

type rxClock struct {
	mode   syncMode
	offset time.Duration // θ at time 0
	skew   float64       // fraction (ppm·1e-6)
	inband *clock.Inband
}

// senderStamp is the sender's wall stamp at simulated time now.
func senderStamp(now clock.Mono) clock.Stamp {
	return clock.Stamp(epochUS + int64(now)/1000)
}

// theta is the true receiver − sender offset at simulated time now.
func (c *rxClock) theta(now clock.Mono) time.Duration {
	return c.offset + time.Duration(float64(now)*c.skew)
}

// stamp is the receiver's wall stamp at simulated time now.
func (c *rxClock) stamp(now clock.Mono) clock.Stamp {
	return clock.Stamp(epochUS + (int64(now)+int64(c.theta(now)))/1000)
}

// owd is the receiver's one-way delay estimate for a packet stamped sent on
// arrival stamp recv, and whether the receiver trusts it.
func (c *rxClock) owd(sent, recv clock.Stamp) (time.Duration, bool) {
	switch c.mode {
	case syncPerfect:
		trueSent := clock.Mono((int64(sent) - epochUS) * 1000)
		return recv.Sub(sent) - c.theta(trueSent), true
	case syncInband:
		c.inband.AddForward(sent, recv)
		return c.inband.OWD(sent, recv)
	default:
		return recv.Sub(sent), false
	}
}

// reverse feeds an echoed ACK exchange (T3 receiver clock, T4 sender clock).
func (c *rxClock) reverse(t3, t4 clock.Stamp) {
	if c.mode == syncInband && t3 != 0 {
		c.inband.AddReverse(t3, t4)
	}
}
