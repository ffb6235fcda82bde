package transport

import (
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// wakeTimer is the driver's one deadline, the earliest of its
// connections': set arms it (0 disarms), near and far deliver when it
// fires, fired says which did.
//
// A deadline more than farDeadline away goes to a timerfd the netpoller
// watches (sysTimer, timer_linux.go), not to a Go timer, because of what
// Go timers that move later cost an idle device: the runtime keeps a
// timer's old place in its heap when it is reset to a later time or
// stopped, and adjusts the heap only when that old time comes
// (runtime/time.go, minWhenHeap), so the process wakes then for nothing,
// and with it the runtime's sysmon thread, a few times more. A status
// update sent once a second arms the retransmission timeout 200 ms ahead,
// and its ACK, a millisecond later, moves the deadline seconds away: with
// a Go timer, a wake-up for nothing after every update (strace: an
// epoll_wait returning empty 200 ms after each send), much of an idle
// agent's wake-ups (measured in bench/results/peers.md, "The device's own
// cost"). A timerfd moved is moved in
// the kernel, and nothing wakes. Nearer deadlines (the pacer's, a delayed
// ACK's) stay on a Go timer: a bulk transfer re-arms them at every step,
// where a system call each, and a goroutine handing each expiry over,
// cost it goodput on loopback (peers.md), and a stale wake-up a few
// milliseconds early costs a busy connection nothing.
type wakeTimer struct {
	due clock.Mono // the deadline set; 0: none

	near    *time.Timer
	nearDue clock.Mono // near is armed for it; 0: not armed
	far     sysTimer
	farDue  clock.Mono // far is armed for it; 0: not armed
}

const (
	// farDeadline: deadlines at least this far away go to the timerfd.
	farDeadline = 50 * time.Millisecond
	// lazySlack is how much later a far deadline may move and keep the
	// timerfd where it is: it then fires that much early and the driver
	// re-arms it.
	lazySlack = time.Millisecond
)

// set arms the timer for due on the driver's clock, whose time is now (0:
// disarm).
func (w *wakeTimer) set(due, now clock.Mono) {
	if due == w.due {
		return
	}
	w.due = due
	switch d := due.Sub(now); {
	case due == 0:
		w.stopNear()
		w.stopFar()
	case d < farDeadline:
		// A far deadline still armed is later: left alone, it costs at
		// most one early wake-up, where disarming it would cost a system
		// call every time a busy connection's deadline came near.
		w.nearDue = due
		if w.near == nil {
			w.near = time.NewTimer(max(d, 0))
			return
		}
		w.near.Reset(max(d, 0))
	default:
		w.stopNear()
		if w.farDue != 0 && due.After(w.farDue) && due.Sub(w.farDue) <= lazySlack {
			return
		}
		w.farDue = due
		w.far.reset(d)
	}
}

func (w *wakeTimer) stopNear() {
	if w.nearDue != 0 {
		w.near.Stop()
		w.nearDue = 0
	}
}

func (w *wakeTimer) stopFar() {
	if w.farDue != 0 {
		w.far.stop()
		w.farDue = 0
	}
}

// nearC and farC deliver when the deadline fires (nil: never ready).
func (w *wakeTimer) nearC() <-chan time.Time {
	if w.nearDue == 0 {
		return nil
	}
	return w.near.C
}

func (w *wakeTimer) farC() <-chan struct{} { return w.far.c() }

// fired records that nearC (near) or farC delivered: the driver looks at
// its deadlines again and sets the next.
func (w *wakeTimer) fired(near bool) {
	if near {
		w.nearDue = 0
	} else {
		w.farDue = 0
	}
	w.due = 0
}

// close releases the timers.
func (w *wakeTimer) close() {
	w.stopNear()
	w.far.close()
}
