//go:build unix

package main

import (
	"syscall"
	"time"
)

// raiseFileLimit raises the soft limit on open files to the hard limit:
// every source is a socket.
func raiseFileLimit() error {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return err
	}
	r.Cur = r.Max
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r)
}

// processCPU is this process's user+system CPU time so far.
func processCPU() (time.Duration, error) { return rusageCPU(syscall.RUSAGE_SELF) }

// childrenCPU is the user+system CPU time of the children waited for.
func childrenCPU() (time.Duration, error) { return rusageCPU(syscall.RUSAGE_CHILDREN) }

func rusageCPU(who int) (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
