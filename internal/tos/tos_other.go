//go:build !linux

package tos

// PerPacket: elsewhere only a socket's TOS can be set, for all its
// datagrams.
const PerPacket = false

// ControlMessage is nil where PerPacket is false.
func ControlMessage(bool, int) []byte { return nil }
