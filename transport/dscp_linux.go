//go:build linux

package transport

import (
	"golang.org/x/sys/unix"

	"github.com/fresh-udp/fresh/internal/tos"
)

// Linux marks each datagram with its own class (package internal/tos), so
// one socket can mark updates CS7 and the stream best effort.
const perPacketTOSSupported = tos.PerPacket

var errInvalidArgument = unix.EINVAL

func tosControlMessage(v6 bool, class int) []byte { return tos.ControlMessage(v6, class) }
