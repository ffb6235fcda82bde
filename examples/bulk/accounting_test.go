package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/examples/internal/testcerts"
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

// TestReverseSummaryRTT: with -R the server sends, so the RTTs are its
// (a receiver measures none); the client's summary and end.fresh carry
// them instead of zeros, and the server's -J reports the same sender.
func TestReverseSummaryRTT(t *testing.T) {
	files := testcerts.Write(t, "bulk-client")
	_, text := loopbackWith(t, append(files.ServerArgs("--"), "-J"), append(files.ClientArgs("--"), "-t", "1", "-R", "-b", "20M"))
	line := summaryLine(t, string(text))
	require.NotContains(t, line, "srtt 0µs", line)
	require.NotContains(t, line, "min rtt 0µs", line)

	srvOut, cliOut := loopback(t, []string{"-J"}, []string{"-t", "1", "-R", "-b", "20M", "-J"})
	cli, srv := decode(t, cliOut), decode(t, srvOut)
	for who, f := range map[string]freshEnd{"client": cli.End.Fresh, "server": srv.End.Fresh} {
		require.Positive(t, f.SRTT, "%s: the sender's SRTT", who)
		require.Positive(t, f.MinRTT, "%s: the sender's min RTT", who)
		require.Positive(t, f.PacketsSent, who)
	}
}

// summaryLine is the client's "cc NAME: srtt …" line.
func summaryLine(t *testing.T, text string) string {
	t.Helper()
	for l := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(l, "cc ") {
			return l
		}
	}
	require.Fail(t, "no summary line", text)
	return ""
}
