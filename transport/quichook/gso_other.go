//go:build !linux

package quichook

const gsoSupported = false

func gsoOOB(b []byte, _ int) []byte { return b }

func gsoSizeOf([]byte) int { return 0 }
