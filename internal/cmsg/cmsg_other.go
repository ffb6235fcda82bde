//go:build !linux

package cmsg

// PerPacketTOS: elsewhere only a socket's TOS can be set, for all its
// datagrams.
const PerPacketTOS = false

// GSO: segmentation offload is Linux's.
const GSO = false

// TOS is nil where PerPacketTOS is false.
func TOS(bool, int) []byte { return nil }

// AppendSegmentSize returns oob unchanged where GSO is false.
func AppendSegmentSize(oob []byte, _ int) []byte { return oob }

// SegmentSize is 0 where GSO is false.
func SegmentSize([]byte) int { return 0 }
