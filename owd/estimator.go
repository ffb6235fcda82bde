package owd

import "time"

// Estimator is the receiver side of SPEC §1: it turns a data packet's sender
// timestamp PStime and the receiver's arrival time PRtime into a one-way delay
//
//	OWD = PRtime − PStime + offset
//
// where offset is the receiver's best estimate of (sender clock − receiver
// clock), supplied by package clock (NTP-corrected and/or in-band). Both stamps
// are wall-clock microseconds, as carried on the wire. The sender needs no
// synchronised clock of its own: it only reads the samples off the ACKs.
type Estimator struct {
	offset time.Duration
	synced bool
}

// SetOffset sets the current estimate of (sender clock − receiver clock) and
// whether it is trustworthy; the flag travels on ACKs as AckSample.ClockSynced.
// Note the sign: clock.Inband reports NTP's θ = receiver − sender, so pass
// −θ here (or use Inband.OWD directly, which applies θ itself).
func (e *Estimator) SetOffset(offset time.Duration, synced bool) {
	e.offset = offset
	e.synced = synced
}

// Offset returns the offset in use and whether it is trustworthy.
func (e *Estimator) Offset() (time.Duration, bool) { return e.offset, e.synced }

// Stamp returns the one-way delay of a packet sent at sentUs (sender clock,
// µs) that arrived at arrivalUs (receiver clock, µs). The result may be
// negative when clocks are badly off; the controller's RTT cross-check, not
// the estimator, decides what to do with such a sample.
func (e *Estimator) Stamp(sentUs, arrivalUs int64) time.Duration {
	return time.Duration(arrivalUs-sentUs)*time.Microsecond + e.offset
}
