//go:build !linux

package emudriver

import "net"

// setTOS does nothing off Linux: the relay reads no TOS there either.
func setTOS(*net.UDPConn, uint8) error { return nil }
