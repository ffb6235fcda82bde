//go:build !linux

package quichook

// Elsewhere only the socket's TOS is set (to Config.DSCP); feedback is not
// marked separately.
const perPacketTOS = false

func tosOOB(bool, int) []byte { return nil }
