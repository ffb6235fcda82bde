//go:build unix

// Package rusage reads CPU time from getrusage(2) for the benchmark
// commands: a process's own (every thread: both endpoints of an in-process
// transfer, the runtime and, on loopback, most of the kernel's work, which
// runs in the sender's syscalls) and its waited-for children's.
package rusage

import (
	"syscall"
	"time"
)

// Process is this process's user+system CPU time so far.
func Process() (time.Duration, error) { return cpu(syscall.RUSAGE_SELF) }

// Children is the user+system CPU time of every child process waited for.
func Children() (time.Duration, error) { return cpu(syscall.RUSAGE_CHILDREN) }

func cpu(who int) (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
