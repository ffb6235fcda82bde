package loopback

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseIperf3(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "iperf3-client.json"))
	require.NoError(t, err)
	r, err := parseIperf3(data)
	require.NoError(t, err)
	require.InDelta(t, 21096330752.620213, r.End.SumReceived.BitsPerSecond, 1e-3)
	require.InDelta(t, 0.018987, r.End.SumReceived.Seconds, 1e-9)
	require.Equal(t, int64(50069504), r.End.SumReceived.Bytes)
	require.Equal(t, "bbr", r.End.SenderCC)
	require.Zero(t, r.End.SumSent.Retransmits)
}

func TestParseIperf3Errors(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "iperf3-error.json"))
	require.NoError(t, err)
	_, err = parseIperf3(data)
	require.ErrorContains(t, err, "unable to connect to server: Connection refused")

	_, err = parseIperf3([]byte(`{"end": {}}`))
	require.ErrorContains(t, err, "no end.sum_received")

	_, err = parseIperf3([]byte("iperf3: error - unable to connect"))
	require.ErrorContains(t, err, "iperf3 JSON")
}
