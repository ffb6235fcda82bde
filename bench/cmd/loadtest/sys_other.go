//go:build !unix

package main

import (
	"errors"
	"time"
)

var errNoRusage = errors.New("CPU time needs getrusage(2), which this platform lacks")

func raiseFileLimit() error               { return nil }
func processCPU() (time.Duration, error)  { return 0, errNoRusage }
func childrenCPU() (time.Duration, error) { return 0, errNoRusage }
