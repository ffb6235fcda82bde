// Package loopback times one bulk transfer over loopback on each of the
// stacks loopbench compares: a fresh stream (Fresh), a quic-go stream
// (QUIC) and kernel TCP through iperf3 (IPerf3). Each reports the same
// Transfer: the payload the receiver counted, the time from the first
// Write to the receiver's end of stream, and the CPU time this process
// (and, for iperf3, its children) spent over that window.
package loopback

import (
	"time"

	"github.com/fresh-udp/fresh/cc"
)

// WriteChunk is the one buffer every in-process client writes from, bytes.
const WriteChunk = 64 << 10

// Transfer is what one stack reports for one transfer.
type Transfer struct {
	Bytes   cc.ByteCount  // payload the receiver counted
	Elapsed time.Duration // first write to the receiver's EOF
	Goodput cc.Bandwidth  // payload bit/s over Elapsed
	CPU     time.Duration // user+system CPU time charged to the transfer
	Lost    int64         // packets the sender declared lost (TCP: retransmitted segments)
	Detail  string        // what else is worth knowing ("GSO on", "cc bbr")
}

// goodputOf is n bytes over elapsed, bit/s.
func goodputOf(n cc.ByteCount, elapsed time.Duration) cc.Bandwidth {
	if elapsed <= 0 {
		return 0
	}
	return cc.Bandwidth(float64(n) * 8 / elapsed.Seconds())
}
