package sim

import (
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// Clock model. The data sender's clock is the simulator's truth; each
// receiver's wall clock runs at (1 + skew) and is offset, as
// scenario.ClockOffset and ClockSkewPPM say. How the receiver corrects it is
// scenario.ClockSync, mapped onto the session's own clock handling:
//
//	"perfect"  an ideal NTP: the receiver's corrected wall clock is the
//	           truth, and the session trusts the peer's stamps
//	           (TrustPeerClock); default when the scenario sets no offset
//	           and no skew
//	"inband"   the receiver's clock keeps its offset and skew; the session's
//	           in-band estimator (clock.Inband) learns them from the
//	           packets' own stamps, as it does over UDP; default otherwise
//	"none"     offset and skew, and no correction: OWD samples carry the
//	           offset and are never trusted, so controllers fall back to RTT

// epochUS places the simulation at a realistic wall time (2025-01-01 UTC), so
// stamps look like real ones and never go negative.
const epochUS = 1735689600 * 1_000_000

type syncMode uint8

const (
	syncPerfect syncMode = iota
	syncInband
	syncNone
)

// wallClock is one endpoint's wall clock in the simulation.
type wallClock struct {
	offset time.Duration // θ at time 0
	skew   float64       // fraction (ppm·1e-6)
}

// theta is the true receiver − sender offset at simulated time now.
func (c wallClock) theta(now clock.Mono) time.Duration {
	return c.offset + time.Duration(float64(now)*c.skew)
}

// micros is the wall clock's reading at simulated time now, in µs.
func (c wallClock) micros(now clock.Mono) int64 {
	return epochUS + (int64(now)+int64(c.theta(now)))/1000
}
