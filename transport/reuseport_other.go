//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package transport

import (
	"fmt"
	"net"
	"syscall"
)

// setReusePort fails: this platform has no SO_REUSEPORT with the meaning
// ListenUDP documents.
func setReusePort(_, _ string, _ syscall.RawConn) error {
	return fmt.Errorf("%w: ListenUDP reusePort (SO_REUSEPORT) is not supported on this platform", ErrInvalidConfig)
}

// reusesPort is false: no socket here shares its port.
func reusesPort(net.PacketConn) bool { return false }
