package transport_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: every
// endpoint, relay and server a test starts must be closed by it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
