//go:build unix

package loadgen

import "syscall"

// RaiseFileLimit raises the soft limit on open files to the hard limit:
// a load test holds a socket per source (loadtest, fleetload with
// -per-socket 1), and the default soft limit, 1,024, is a tenth of a
// fleet.
func RaiseFileLimit() error {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return err
	}
	r.Cur = r.Max
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r)
}
