//go:build !linux

package transport

import "errors"

// Elsewhere only the socket's TOS is set (to the stream's DSCP); updates are
// not marked separately (internal/cmsg.PerPacketTOS is false).

var errInvalidArgument = errors.New("invalid argument")
