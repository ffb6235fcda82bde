package recovery

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// Every connection holds a Tracker, a monitor one per device: it must
// stay in the allocator's 256-byte size class (objects of 512 bytes or
// less carry no type header); 257 bytes would cost the 288-byte class.
// It was 240 bytes before the OWD guard moved in from the session (which
// went from 2040 to 2008 bytes, in its 2 KiB class still): 16 bytes more
// per connection, where a 32-byte guard on top would have cost 48.
func TestTrackerFitsSizeClass(t *testing.T) {
	require.LessOrEqual(t, unsafe.Sizeof(Tracker{}), uintptr(256), "Tracker is %d bytes", unsafe.Sizeof(Tracker{}))
}
