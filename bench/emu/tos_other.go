//go:build !linux

package emu

import (
	"errors"
	"net"
)

// Outside Linux the relay does not read or re-mark TOS: every datagram is
// queued as DSCP 0 (best effort) and sent unmarked.

const tosSupported = false

var oobSize = 0

func enableRecvTOS(*net.UDPConn, bool) error {
	return errors.New("reading TOS is implemented on Linux only")
}

func parseTOS([]byte) uint8 { return 0 }

func tosOOB([]byte, uint8, bool) []byte { return nil }
