package quichook

import (
	"github.com/fresh-udp/fresh/internal/tos"
)

// Where the OS allows it (Linux), each datagram carries its own class
// (package internal/tos): quic-go's and the feedback; elsewhere only the
// socket's TOS is set (to Config.DSCP).
const perPacketTOS = tos.PerPacket

func tosOOB(v6 bool, class int) []byte { return tos.ControlMessage(v6, class) }
