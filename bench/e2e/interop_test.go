package e2e_test

import (
	"context"
	"os"
	"testing"

	"github.com/fresh-udp/fresh/bench/e2e"
	"github.com/fresh-udp/fresh/internal/realtime"
)

// interopFullEnv runs TestInterop at the full sizes (the runner's: 50
// handshakes, 10 MB transfers, rebindings and blackouts every 5 s), a few
// minutes; the default sizes fit the CI's test run.
const interopFullEnv = "FRESH_INTEROP_FULL"

// TestInterop runs the interop-style fault suite (e2e.Cases), one subtest
// per QUIC interop runner case: each must arrive byte-exact and keep the
// protocol's promise for that case. Goodput bounds are enforced only in
// the long real-time suite (FRESH_REALTIME=1); crosstraffic skips, with
// the reason, without root, /dev/net/tun or iperf3.
func TestInterop(t *testing.T) {
	opts := e2e.Options{Full: os.Getenv(interopFullEnv) == "1", Strict: realtime.Enabled(), Logf: t.Logf}
	for _, c := range e2e.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			if c.KnownFailure != "" {
				t.Skipf("known protocol failure (freshbench interop -cases %s shows it): %s", c.Name, c.KnownFailure)
			}
			opts.Logf = t.Logf
			res := e2e.Run(context.Background(), c, opts)
			t.Logf("%s %s in %v (%d bytes byte-exact): %s", res.Case, res.Status, res.Took.Round(1e6), res.Bytes, res.Measured)
			switch res.Status {
			case e2e.Skip:
				t.Skip(res.Err)
			case e2e.Fail:
				t.Fatalf("%s: %v (promise: %s)", c.Name, res.Err, c.Promise)
			}
		})
	}
}
