//go:build !unix

// Package rusage reads CPU time from getrusage(2), which this platform
// lacks: every call fails.
package rusage

import (
	"errors"
	"time"
)

var errNoRusage = errors.New("CPU time needs getrusage(2), which this platform lacks")

// Process fails here.
func Process() (time.Duration, error) { return 0, errNoRusage }

// Children fails here.
func Children() (time.Duration, error) { return 0, errNoRusage }
