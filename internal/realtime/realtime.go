// Package realtime is the switch of the long real-time test suite.
//
// Almost every test of fresh runs in virtual time (internal/session's Pair,
// the controllers' simulated paths) or, over real sockets, asserts only
// what the machine's speed cannot change: bytes exact, counters that add
// up, errors, condition waits with generous deadlines. A few tests measure
// real time itself: goodput ratios under a flood, the state a paced
// Initial flood leaves, Dial times with and without Retry, goodput and
// delay through the emulated bottleneck (bench/e2e, bench/emu,
// bench/emudriver, the quic-go hook's in bench/cmd/quicbench). Their
// numbers hold on a quiet machine and not on a loaded one (a CI runner, a
// 2-core laptop building something else), and some take tens of seconds
// to minutes. They form the long real-time suite, which runs only with
// the switch on, on a quiet machine:
//
//	FRESH_REALTIME=1 go test -run 'Measure|Flood' -v ./transport
//	FRESH_REALTIME=1 go test -count=1 github.com/fresh-udp/fresh/bench/...
//
// Without it those tests skip (Require), or run their load-independent
// assertions and report the timing bounds they miss with t.Logf instead
// of failing (Check). The switch is a test-only setting: no library code
// reads it.
package realtime

import (
	"os"
	"testing"
)

// Env is the environment variable that turns the suite on.
const Env = "FRESH_REALTIME"

// Enabled reports whether the long real-time suite runs (FRESH_REALTIME=1).
func Enabled() bool { return os.Getenv(Env) == "1" }

// Check requires ok in the long real-time suite and logs the miss
// otherwise ("not met … a loaded machine?"), for a bound that the
// machine's load decides: a goodput floor, a delay ceiling, a ratio
// between a delay-based controller and a loss-based one. The test's
// load-independent assertions stay unconditional beside it.
func Check(tb testing.TB, ok bool, format string, args ...any) {
	tb.Helper()
	switch {
	case ok:
	case Enabled():
		tb.Fatalf(format, args...)
	default:
		tb.Logf("not met (required only with %s=1; a loaded machine?): "+format, append([]any{Env}, args...)...)
	}
}

// Require skips tb unless the long real-time suite runs.
func Require(tb testing.TB) {
	tb.Helper()
	if !Enabled() {
		tb.Skipf("a real-time measurement, part of the long suite: set %s=1 to run it", Env)
	}
}
