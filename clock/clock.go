package clock

import "time"

// Mono is a monotonic instant in nanoseconds since an arbitrary origin chosen
// by the Clock that produced it. Only differences between two Mono values of the
// same Clock mean anything; a Mono is never converted to wall time. Keeping it a
// distinct type stops wall-clock corrections (NTP steps, in-band offsets) from
// leaking into RTT, pacing and epoch arithmetic.
type Mono int64

// Add returns m advanced by d.
func (m Mono) Add(d time.Duration) Mono { return m + Mono(d) }

// Sub returns the duration m − o.
func (m Mono) Sub(o Mono) time.Duration { return time.Duration(m - o) }

// Before reports whether m is strictly earlier than o.
func (m Mono) Before(o Mono) bool { return m < o }

// After reports whether m is strictly later than o.
func (m Mono) After(o Mono) bool { return m > o }

// Clock is the only source of time in fresh. Everything that needs "now" gets a
// Clock injected (endpoints) or is handed "now" as an argument (controllers).
type Clock interface {
	// Now is the monotonic time, for intervals: RTT, pacing, timers, epochs.
	Now() Mono
	// Wall is the wall-clock time, for timestamps that cross the wire and
	// must be compared with another host's clock (one-way delay, age).
	Wall() time.Time
}
