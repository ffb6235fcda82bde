//go:build unix

package judge

import (
	"syscall"
	"time"
)

// cpuTime is the process's CPU time so far, user and system: what a
// family's runs cost, whatever else the machine runs.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
