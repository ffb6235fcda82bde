package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The demo moves the upload byte-exact (run fails on a SHA-256 mismatch)
// and the server hears status updates, with each controller and without
// the hook.
func TestDemo(t *testing.T) {
	for _, args := range [][]string{{"-cc", "owd"}, {"-cc", "cubic"}, {"-plain"}} {
		t.Run(args[len(args)-1], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var out bytes.Buffer
			require.NoError(t, run(ctx, append(args, "-bytes", "3MB", "-update-every", "1ms"), &out))
			s := out.String()
			require.Contains(t, s, "sha256 matches")
			require.NotContains(t, s, " 0 status updates,", "the server heard updates")
			if args[0] == "-cc" {
				require.Contains(t, s, "hooked=true cc="+args[1])
				require.NotContains(t, s, "client hook: 0 shimmed")
			} else {
				require.NotContains(t, s, "hook:")
			}
			t.Log(s)
		})
	}
}

func TestUsage(t *testing.T) {
	var out bytes.Buffer
	require.ErrorContains(t, run(context.Background(), []string{"-insecure"}, &out), "TLS")
	require.ErrorContains(t, run(context.Background(), []string{"-s", "-c", "x:1"}, &out), "exclude")
	require.ErrorContains(t, run(context.Background(), []string{"-s", "-listen", "127.0.0.1:0"}, &out), "-cert")
}
