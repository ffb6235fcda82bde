//go:build !linux

package transport

const gsoSupported = false

func appendSegmentControl(oob []byte, _ int) []byte { return oob }
