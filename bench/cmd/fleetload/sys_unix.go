//go:build unix

package main

import "syscall"

// raiseFileLimit raises the soft limit on open files to the hard limit:
// with -per-socket 1 every agent is a socket, and the default soft limit
// (1,024) is a tenth of a fleet.
func raiseFileLimit() error {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return err
	}
	r.Cur = r.Max
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r)
}
