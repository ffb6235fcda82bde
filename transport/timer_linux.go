package transport

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// sysTimer is a timerfd (CLOCK_MONOTONIC) that Go's netpoller waits on: a
// goroutine reads it and signals fire. Moving or stopping it changes
// the kernel's timer, so the process wakes only when it expires (see
// wakeTimer). If the timerfd cannot be made (a seccomp filter, an old
// kernel), a Go timer does the job instead, with its extra wake-ups.
type sysTimer struct {
	f    *os.File
	fd   int // f's: f.Fd() would make it blocking, out of the netpoller's hands
	fire chan struct{}
	done chan struct{} // closed when the reader has returned
	fall *time.Timer   // the fallback, when f is nil
}

func (t *sysTimer) init() {
	t.fire = make(chan struct{}, 1)
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return
	}
	t.fd, t.f = fd, os.NewFile(uintptr(fd), "timerfd") // non-blocking: the netpoller waits on it
	t.done = make(chan struct{})
	go t.read()
}

// read signals fire at every expiry until the file is closed.
func (t *sysTimer) read() {
	defer close(t.done)
	var b [8]byte // the number of expiries since the last read
	for {
		if _, err := t.f.Read(b[:]); err != nil {
			return
		}
		select {
		case t.fire <- struct{}{}:
		default: // one pending signal is enough
		}
	}
}

func (t *sysTimer) reset(d time.Duration) {
	if t.fire == nil {
		t.init()
	}
	t.drain()
	if t.f == nil {
		t.fallback(d)
		return
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(d.Nanoseconds())}
	if err := unix.TimerfdSettime(t.fd, 0, &spec, nil); err != nil {
		t.fallback(d)
	}
}

func (t *sysTimer) stop() {
	if t.fire == nil {
		return
	}
	if t.f != nil {
		_ = unix.TimerfdSettime(t.fd, 0, &unix.ItimerSpec{}, nil)
	}
	if t.fall != nil {
		t.fall.Stop()
	}
	t.drain()
}

// drain drops a signal of an expiry the new setting replaces.
func (t *sysTimer) drain() {
	select {
	case <-t.fire:
	default:
	}
}

// fallback arms the Go timer instead.
func (t *sysTimer) fallback(d time.Duration) {
	if t.fall == nil {
		t.fall = time.AfterFunc(d, func() {
			select {
			case t.fire <- struct{}{}:
			default:
			}
		})
		return
	}
	t.fall.Reset(d)
}

func (t *sysTimer) c() <-chan struct{} { return t.fire } // nil until first armed: never ready

func (t *sysTimer) close() {
	t.stop()
	if t.f != nil {
		_ = t.f.Close()
		<-t.done
	}
}
