//go:build linux || darwin || freebsd || netbsd || openbsd

package main

import (
	"syscall"
	"time"
)

// processCPU is this process's user+system CPU time so far, every thread.
func processCPU() (time.Duration, error) { return rusageCPU(syscall.RUSAGE_SELF) }

// childrenCPU is the user+system CPU time of every child process that has
// been waited for.
func childrenCPU() (time.Duration, error) { return rusageCPU(syscall.RUSAGE_CHILDREN) }

func rusageCPU(who int) (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
