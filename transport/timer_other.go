//go:build !linux

package transport

import "time"

// sysTimer is a Go timer where there is no timerfd (see wakeTimer for the
// wake-ups that costs).
type sysTimer struct {
	fire chan struct{}
	t    *time.Timer
}

func (t *sysTimer) reset(d time.Duration) {
	if t.fire == nil {
		t.fire = make(chan struct{}, 1)
	}
	select { // drop a signal of an expiry the new setting replaces
	case <-t.fire:
	default:
	}
	if t.t == nil {
		t.t = time.AfterFunc(d, func() {
			select {
			case t.fire <- struct{}{}:
			default:
			}
		})
		return
	}
	t.t.Reset(d)
}

func (t *sysTimer) stop() {
	if t.t != nil {
		t.t.Stop()
	}
}

func (t *sysTimer) c() <-chan struct{} { return t.fire }

func (t *sysTimer) close() { t.stop() }
