package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The loopback part end to end, tiny: every stack moves its bytes (loopOnce
// fails on a short read) and the table has its rows.
func TestLoopbackTable(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run("owd", 0, 0, 2<<20, 1, "", "", &out))
	s := out.String()
	for _, row := range []string{"| quic-go default |", "| quic-go default + qlog recorder (no hook) |", "| quic-go + hook (owd) |", "hook/plain goodput"} {
		require.Contains(t, s, row)
	}
}

// -runs 0 runs the bottleneck part alone: its rows, no loopback section.
func TestBottleneckOnlyTable(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run("owd", time.Second, 200*time.Millisecond, 1<<20, 0, "", "", &out))
	s := out.String()
	require.Contains(t, s, "| 0 % | quic-go + hook (owd) |")
	require.Contains(t, s, "| 1 % | quic-go default |")
	require.NotContains(t, s, "Loopback")
}
