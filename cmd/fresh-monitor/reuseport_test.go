//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// -reuseport without -server-id starts, with a reset key of its own
// rather than the one every process derives from the certificate (which
// the transport refuses on a shared port without server IDs: each
// process would hand out the others' reset tokens), and says so; with a
// -server-id it keeps the derived key.
func TestReusePortWithoutServerIDKeepsItsOwnResetKey(t *testing.T) {
	const line = "-reuseport without -server-id"
	for _, withID := range []bool{false, true} {
		args := []string{"-listen", "127.0.0.1:0", "-reuseport", "-nats-listen", "127.0.0.1:0", "-metrics", "off", "-data", t.TempDir()}
		if withID {
			args = append(args, "-server-id", "3")
		}
		r := startRun(t, args...)
		if withID {
			require.NotContains(t, r.stderr.String(), line)
		} else {
			require.Contains(t, r.stderr.String(), line)
		}
		r.stop(t)
	}
}
