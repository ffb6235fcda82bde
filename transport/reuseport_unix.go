//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package transport

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// setReusePort sets SO_REUSEPORT on a socket before it is bound.
func setReusePort(_, _ string, rc syscall.RawConn) error {
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	}); err != nil {
		return err
	}
	return serr
}

// reusesPort reports whether pc is a socket with SO_REUSEPORT set: one
// that other sockets (processes) may share its port with.
func reusesPort(pc net.PacketConn) bool {
	sc, ok := pc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	v, serr := 0, error(nil)
	if err := rc.Control(func(fd uintptr) {
		v, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT)
	}); err != nil || serr != nil {
		return false
	}
	return v != 0
}
