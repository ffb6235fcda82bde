package main

import (
	"bytes"
	"testing"

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
