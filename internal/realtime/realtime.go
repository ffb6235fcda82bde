// Package realtime is the switch of the long real-time test suite.
//
// Almost every test of fresh runs in virtual time (internal/session's Pair,
// the controllers' simulated paths) or, over real sockets, asserts only
// what the machine's speed cannot change: bytes exact, counters that add
// up, errors, condition waits with generous deadlines. A few tests measure
// real time itself: goodput ratios under a flood, the state a paced
// Initial flood leaves, Dial times with and without Retry. Their numbers
// hold on a quiet machine and not on a loaded one (a CI runner, a 2-core
// laptop building something else), and they take tens of seconds to
// minutes. They form the long real-time suite, which runs only with
//
//	FRESH_REALTIME=1 go test -run 'Measure|Flood' -v ./transport
//
// Without it those tests skip, or run their load-independent assertions
// and report their timing figures with t.Logf instead of asserting them.
// The switch is a test-only setting: no library code reads it.
package realtime

import (
	"os"
	"testing"
)

// Env is the environment variable that turns the suite on.
const Env = "FRESH_REALTIME"

// Enabled reports whether the long real-time suite runs (FRESH_REALTIME=1).
func Enabled() bool { return os.Getenv(Env) == "1" }

// Require skips tb unless the long real-time suite runs.
func Require(tb testing.TB) {
	tb.Helper()
	if !Enabled() {
		tb.Skipf("a real-time measurement, part of the long suite: set %s=1 to run it", Env)
	}
}
