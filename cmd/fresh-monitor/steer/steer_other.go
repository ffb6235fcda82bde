//go:build !linux

package steer

import (
	"errors"
	"net"
)

// MaxServers is the number of server IDs a group routes.
const MaxServers = 256

// Group is unavailable: SK_REUSEPORT programs are Linux's.
type Group struct{}

// Open fails: steering needs Linux's SK_REUSEPORT eBPF programs.
func Open(string, uint8) (*Group, error) {
	return nil, errors.New("steer: SO_REUSEPORT steering by connection ID needs Linux (an SK_REUSEPORT eBPF program)")
}

// Join fails as Open does.
func (*Group) Join(*net.UDPConn, byte) error { return errors.New("steer: needs Linux") }

// Close does nothing.
func (*Group) Close() error { return nil }
