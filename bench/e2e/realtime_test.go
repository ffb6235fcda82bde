package e2e_test

import (
	"testing"

	"github.com/fresh-udp/fresh/internal/realtime"
)

// These tests move a real stream through the emulated bottleneck on the
// machine's own clock, so how much goodput they see depends on what else
// the machine runs (a -race build on two loaded cores reaches a fraction of
// an idle one's). By default they still require everything a fault must
// not break (the stream survives, byte-exact, the error it ends with) and
// log the goodput; in the long real-time suite (internal/realtime:
// FRESH_REALTIME=1, on a quiet machine) they also require the goodput
// bounds, and the tests that time the controller itself run. The
// simulator (bench/sim) asserts goodput in virtual time.

// goodputAtLeast requires got ≥ want in the real-time suite and logs the
// comparison otherwise.
func goodputAtLeast(t *testing.T, got, want float64, what string) {
	t.Helper()
	if realtime.Enabled() {
		if got < want {
			t.Fatalf("%s: %.1f Mbit/s < %.1f Mbit/s", what, mbit(got), mbit(want))
		}
		return
	}
	if got < want {
		t.Logf("%s: %.1f Mbit/s < %.1f Mbit/s (asserted only with FRESH_REALTIME=1)", what, mbit(got), mbit(want))
	}
}
