package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReceivedNotAboveSent: as in iperf3, the receiver cannot report more
// than the sender sent. Unpaced, the sender's buffer is full when -t ends,
// so bytes written but not yet acknowledged then are the ones a sender
// counting acknowledgements would miss and the receiver reads anyway.
func TestReceivedNotAboveSent(t *testing.T) {
	for _, args := range [][]string{{"-t", "1", "-i", "0.5", "-J"}, {"-t", "1", "-i", "0.5", "-R", "-J"}} {
		srvOut, cliOut := loopback(t, []string{"-J"}, args)
		for who, res := range map[string]result{"client": decode(t, cliOut), "server": decode(t, srvOut)} {
			sent, recv := res.End.SumSent, res.End.SumReceived
			require.Positive(t, sent.Bytes, "%s %q", who, args)
			require.LessOrEqual(t, recv.Bytes, sent.Bytes, "%s %q: received more than sent", who, args)
			// fresh's stream is reliable and the receiver reads to EOF:
			// every byte written arrives.
			require.Equal(t, sent.Bytes, recv.Bytes, "%s %q", who, args)
		}
	}
}
