//go:build linux || darwin || freebsd || netbsd || openbsd

package main

import (
	"syscall"
	"time"
)

// processCPU is this process's user+system CPU time so far, every thread
// (both endpoints, the runtime, and on loopback most of the kernel's work
// for both, which runs in the sender's syscall).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
