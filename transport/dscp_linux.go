//go:build linux

package transport

import "golang.org/x/sys/unix"

// Linux marks each datagram with its own class (package internal/cmsg), so
// one socket can mark updates CS7 and the stream best effort.

var errInvalidArgument = unix.EINVAL
