//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// lockFileName is the lock file in -data.
const lockFileName = "fresh-monitor.lock"

// dataLock is the exclusive lock a monitor holds on its -data directory
// for its whole life: two embedded NATS servers on one JetStream store
// would each believe it the only one (each holds its own view of the
// streams, and whatever one stores the other overwrites or loses). It is
// a flock(2) on -data/fresh-monitor.lock, so the kernel releases it when
// the process ends however it ends (SIGKILL included); the PID written in
// the file only names the holder in the refusal, and a stale one (its
// process gone) blocks nothing.
type dataLock struct {
	f *os.File
}

// lockData takes -data's lock, creating the directory if need be, or
// says who holds it and what to do.
func lockData(dir string) (*dataLock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("-data %s: %w", dir, err)
	}
	path := filepath.Join(dir, lockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("-data %s: %w", dir, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, heldError(dir, string(holder))
		}
		return nil, fmt.Errorf("-data %s: locking %s: %w", dir, path, err)
	}
	l := &dataLock{f: f}
	if err := l.write(""); err != nil {
		l.release()
		return nil, fmt.Errorf("-data %s: %w", dir, err)
	}
	return l, nil
}

// write records this process (and, once it runs, its embedded server's
// client URL) in the lock file, for a second monitor's refusal.
func (l *dataLock) write(natsURL string) error {
	s := "pid " + strconv.Itoa(os.Getpid()) + "\n"
	if natsURL != "" {
		s += "nats " + natsURL + "\n"
	}
	if err := l.f.Truncate(0); err != nil {
		return err
	}
	_, err := l.f.WriteAt([]byte(s), 0)
	return err
}

// release unlocks (closing the file does) and leaves the file: removing
// it would let a third monitor lock a new file while a second still
// waits on the old one's descriptor.
func (l *dataLock) release() { l.f.Close() }

// heldError is the refusal of a second monitor on -data, naming the
// holder from the lock file's lines ("pid N", "nats URL").
func heldError(dir, holder string) error {
	pid, natsURL := "", ""
	for line := range strings.Lines(holder) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch k {
		case "pid":
			pid = v
		case "nats":
			natsURL = v
		}
	}
	who, stop := "another fresh-monitor", "or stop it"
	if pid != "" {
		who, stop = "fresh-monitor (pid "+pid+")", "or stop "+pid
	}
	share := "store into its JetStream with -nats URL (its NATS client address)"
	if natsURL != "" {
		share = "store into its JetStream with -nats " + natsURL
	}
	return fmt.Errorf("-data %s is in use by %s: one JetStream store takes one server; give this monitor its own -data DIR, %s, %s", dir, who, share, stop)
}
