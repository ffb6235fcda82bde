package session

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// A monitor holds a Session per device: it must stay in the allocator's
// 2 KiB size class. Go puts an 8-byte type header before every object
// larger than 512 bytes that holds pointers, so the struct may take 2040
// bytes; 2041 would cost the 2304-byte class, 256 bytes more per
// connection. What a connection needs only once it exchanges data lives
// behind pointers allocated on first use (ackRing, ackSamples, the
// receive ring, the clock estimator).
func TestSessionFitsTwoKiB(t *testing.T) {
	require.LessOrEqual(t, unsafe.Sizeof(Session{})+8, uintptr(2048), "Session is %d bytes", unsafe.Sizeof(Session{}))
}

// A session's TLS side, likewise in the 896-byte class.
func TestSecurityFitsSizeClass(t *testing.T) {
	require.LessOrEqual(t, unsafe.Sizeof(security{})+8, uintptr(896), "security is %d bytes", unsafe.Sizeof(security{}))
}
