// Package loglimit rate-limits log lines of one kind, so that a flood of
// one event (rejected handshakes, a full store failing every device's
// writes) cannot turn into a flood of log lines: at most Burst lines per
// Window, and the next line logged says how many were not (its
// "suppressed" attribute). Counters, not logs, count every event. The
// transport's handshake rejections and fresh-monitor's store failures use
// it, one Limiter per kind of line.
package loglimit

import (
	"sync"
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// Burst lines are logged per Window.
const (
	Burst  = 10
	Window = time.Second
)

// Limiter is a fixed window of Window that logs its first Burst lines.
// The zero value is ready to use; it is safe for concurrent use.
type Limiter struct {
	mu         sync.Mutex
	start      clock.Mono // the current window's
	n          int        // lines logged in it
	suppressed int64      // lines not logged since the last one logged
}

// Allow reports whether a line may be logged now and, if so, how many
// were suppressed before it.
func (l *Limiter) Allow(now clock.Mono) (ok bool, suppressed int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == 0 || now.Sub(l.start) >= Window {
		l.start, l.n = now, 0
	}
	if l.n >= Burst {
		l.suppressed++
		return false, 0
	}
	l.n++
	suppressed, l.suppressed = l.suppressed, 0
	return true, suppressed
}
