package loopback

import (
	"fmt"
	"io"
	"time"

	"github.com/fresh-udp/fresh/bench/internal/rusage"
	"github.com/fresh-udp/fresh/cc"
)

// avgSize is the mean datagram size the sender's counters imply, bytes
// (UDP payload; acknowledgements the client sent are in both counts).
func avgSize(bytes, packets int64) int64 {
	if packets == 0 {
		return 0
	}
	return bytes / packets
}

// copyResult is what a receiving side reports at the end of its stream.
type copyResult struct {
	bytes cc.ByteCount
	end   time.Time // when Read returned io.EOF
	err   error
}

// drain copies r to io.Discard and stamps the EOF.
func drain(r io.Reader) copyResult {
	n, err := io.Copy(io.Discard, r)
	return copyResult{bytes: cc.ByteCount(n), end: time.Now(), err: err}
}

// timeTransfer writes n bytes to w from one reused WriteChunk buffer, calls
// closeWrite, and waits for the receiver's result. The transfer runs from
// just before the first Write to the receiver's EOF; its CPU time is this
// process's user+system time over the same window.
func timeTransfer(n cc.ByteCount, w io.Writer, closeWrite func() error, received <-chan copyResult) (Transfer, error) {
	buf := make([]byte, WriteChunk)
	cpu0, err := rusage.Process()
	if err != nil {
		return Transfer{}, err
	}
	start := time.Now()
	for left := n; left > 0; {
		chunk := buf[:min(left, cc.ByteCount(len(buf)))]
		m, err := w.Write(chunk)
		left -= cc.ByteCount(m)
		if err != nil {
			return Transfer{}, fmt.Errorf("write after %d bytes: %w", n-left, err)
		}
	}
	if err := closeWrite(); err != nil {
		return Transfer{}, fmt.Errorf("close write: %w", err)
	}
	r := <-received
	cpu1, err := rusage.Process()
	if err != nil {
		return Transfer{}, err
	}
	if r.err != nil {
		return Transfer{}, fmt.Errorf("receiver: %w", r.err)
	}
	elapsed := r.end.Sub(start)
	return Transfer{
		Bytes:   r.bytes,
		Elapsed: elapsed,
		Goodput: goodputOf(r.bytes, elapsed),
		CPU:     cpu1 - cpu0,
	}, nil
}
