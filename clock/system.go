package clock

import "time"

// System is the host clock. Its monotonic reading comes from Go's monotonic
// clock (immune to wall-clock steps); its wall reading is time.Now.
type System struct{ origin time.Time }

// NewSystem returns the system clock; its Mono origin is the moment of the call.
func NewSystem() *System { return &System{origin: time.Now()} }

// Now returns monotonic time since the clock was created.
func (s *System) Now() Mono { return Mono(time.Since(s.origin)) }

// Wall returns the host's wall-clock time.
func (s *System) Wall() time.Time { return time.Now() }

var _ Clock = (*System)(nil)
