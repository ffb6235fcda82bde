package clock

import (
	"sync/atomic"
	"time"
)

// Manual is a Clock moved only by its owner: for tests and the simulator.
// Wall time is Epoch + elapsed monotonic time + WallOffset, so a test can give
// one host's clock an offset without touching its monotonic time.
// Now, Wall, Advance and Set are safe for concurrent use (a test may move
// the clock while an endpoint's goroutine reads it); set the exported
// fields before the clock is shared.
type Manual struct {
	mono atomic.Int64
	// Epoch is the wall time at Mono 0.
	Epoch time.Time
	// WallOffset is added to wall readings (a deliberately wrong clock).
	WallOffset time.Duration
	// SkewPPM makes the wall clock run fast (+) or slow (−) by this many
	// parts per million of elapsed monotonic time.
	SkewPPM float64
}

// NewManual returns a manual clock at Mono 0 whose wall clock starts at epoch.
func NewManual(epoch time.Time) *Manual { return &Manual{Epoch: epoch} }

// Now returns the current monotonic time.
func (m *Manual) Now() Mono { return Mono(m.mono.Load()) }

// Wall returns Epoch + elapsed·(1+skew) + WallOffset.
func (m *Manual) Wall() time.Time {
	elapsed := time.Duration(m.mono.Load())
	skew := time.Duration(float64(elapsed) * m.SkewPPM / 1e6)
	return m.Epoch.Add(elapsed + skew + m.WallOffset)
}

// Advance moves the clock forward by d (negative d is ignored: monotonic).
func (m *Manual) Advance(d time.Duration) {
	if d > 0 {
		m.mono.Add(int64(d))
	}
}

// Set moves the clock to t if t is later than now.
func (m *Manual) Set(t Mono) {
	for {
		cur := m.mono.Load()
		if int64(t) <= cur || m.mono.CompareAndSwap(cur, int64(t)) {
			return
		}
	}
}

var _ Clock = (*Manual)(nil)
