//go:build linux

package emudriver

import (
	"net"
	"syscall"
)

// setTOS marks every datagram c sends with the DSCP (IPv4 TOS byte, ECN
// bits 0), so the relay's DSCP-aware queues see the flow's class. Only
// IPv4 sockets are marked: the driver runs on 127.0.0.1.
func setTOS(c *net.UDPConn, dscp uint8) error {
	if dscp == 0 {
		return nil
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_TOS, int(dscp)<<2)
	}); err != nil {
		return err
	}
	return serr
}
