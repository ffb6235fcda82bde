package qlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sink is an io.WriteCloser that keeps what was written.
type sink struct {
	bytes.Buffer
	closed bool
	err    error
}

func (s *sink) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	return s.Buffer.Write(p)
}
func (s *sink) Close() error { s.closed = true; return nil }

// records splits a JSON-SEQ stream and decodes each record.
func records(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	require.True(t, len(b) > 0 && b[0] == recordSeparator)
	var out []map[string]any
	for _, r := range bytes.Split(b[1:], []byte{recordSeparator}) {
		require.True(t, bytes.HasSuffix(r, []byte("\n")))
		var m map[string]any
		require.NoError(t, json.Unmarshal(r, &m), "%s", r)
		out = append(out, m)
	}
	return out
}

var testInfo = ConnInfo{Role: Server, ConnID: 0xabc, Remote: &net.UDPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 4433}, Start: time.UnixMilli(1_700_000_000_123)}

func TestWriterRecords(t *testing.T) {
	var s sink
	w := NewWriter(&s, testInfo, "a \"title\"\n\x01\xff")
	w.PacketSent(1500*time.Microsecond, &Packet{Type: "1RTT", Number: 7, Length: 1200, Frame: Frame{Type: "stream", Offset: 100, Length: 1146, Fin: true}})
	w.PacketReceived(2*time.Millisecond, &Packet{Type: "1RTT", Number: 3, Length: 90, Frame: Frame{Type: "ack", AckDelay: 250 * time.Microsecond,
		AckRanges: []AckRange{{Smallest: 9, Largest: 12}, {Smallest: 5, Largest: 5}}}})
	w.PacketSent(3*time.Millisecond, &Packet{Type: "1RTT", Frame: Frame{Type: "connection_close", ErrorCode: 3, Reason: "bye \"now\""}})
	w.MetricsUpdated(4*time.Millisecond, Metrics{CongestionWindow: 12000, SmoothedRTT: 20 * time.Millisecond, PacingRate: 1e6})
	w.MetricsUpdated(5*time.Millisecond, Metrics{CongestionWindow: 12000, SmoothedRTT: 21 * time.Millisecond, PacingRate: 1e6})
	w.MetricsUpdated(6*time.Millisecond, Metrics{CongestionWindow: 12000, SmoothedRTT: 21 * time.Millisecond, PacingRate: 1e6}) // no change: no record
	w.PacketLost(7*time.Millisecond, "1RTT", 8, TriggerReordering)
	w.CongestionStateUpdated(8*time.Millisecond, "", "slow_start")
	w.OWDSample(9*time.Millisecond, OWDSample{PacketNumber: 7, OWD: 10 * time.Millisecond, MinOWD: 9 * time.Millisecond, Synced: true})
	w.ClockOffset(10*time.Millisecond, -1500*time.Microsecond, true, false)
	w.UpdateAge(11*time.Millisecond, 4, 12*time.Millisecond, true)
	require.Empty(t, s.Bytes(), "buffered until Close")
	require.NoError(t, w.Close())
	require.True(t, s.closed)
	w.PacketLost(12*time.Millisecond, "1RTT", 9, TriggerTime) // after Close: dropped
	require.NoError(t, w.Close())

	recs := records(t, s.Bytes())
	require.Len(t, recs, 11)
	h := recs[0]
	require.Equal(t, "0.3", h["qlog_version"])
	require.Equal(t, "JSON-SEQ", h["qlog_format"])
	require.Equal(t, "a \"title\"\n\x01\ufffd", h["title"])
	tr := h["trace"].(map[string]any)
	require.Equal(t, "server", tr["vantage_point"].(map[string]any)["type"])
	cf := tr["common_fields"].(map[string]any)
	require.Equal(t, "0000000000000abc", cf["ODCID"])
	require.Equal(t, "relative", cf["time_format"])
	require.Equal(t, 1_700_000_000_123.0, cf["reference_time"])
	require.Equal(t, "192.0.2.1:4433", cf["peer_address"])

	ev := func(i int) (float64, string, map[string]any) {
		return recs[i]["time"].(float64), recs[i]["name"].(string), recs[i]["data"].(map[string]any)
	}
	tm, name, d := ev(1)
	require.Equal(t, 1.5, tm)
	require.Equal(t, "transport:packet_sent", name)
	require.Equal(t, map[string]any{"packet_type": "1RTT", "packet_number": 7.0}, d["header"])
	require.Equal(t, 1200.0, d["raw"].(map[string]any)["length"])
	require.Equal(t, []any{map[string]any{"frame_type": "stream", "stream_id": 0.0, "offset": 100.0, "length": 1146.0, "fin": true}}, d["frames"])
	_, name, d = ev(2)
	require.Equal(t, "transport:packet_received", name)
	require.Equal(t, []any{map[string]any{"frame_type": "ack", "ack_delay": 0.25, "acked_ranges": []any{[]any{5.0}, []any{9.0, 12.0}}}}, d["frames"], "ascending, a single number alone")
	_, _, d = ev(3)
	require.Equal(t, "bye \"now\"", d["frames"].([]any)[0].(map[string]any)["reason"])
	_, name, d = ev(4)
	require.Equal(t, "recovery:metrics_updated", name)
	require.Equal(t, map[string]any{"congestion_window": 12000.0, "bytes_in_flight": 0.0, "smoothed_rtt": 20.0, "pacing_rate": 1e6}, d)
	_, _, d = ev(5)
	require.Equal(t, map[string]any{"smoothed_rtt": 21.0}, d, "only what changed")
	_, name, d = ev(6)
	require.Equal(t, "recovery:packet_lost", name)
	require.Equal(t, "reordering_threshold", d["trigger"])
	_, name, d = ev(7)
	require.Equal(t, "recovery:congestion_state_updated", name)
	require.Equal(t, map[string]any{"new": "slow_start"}, d)
	_, name, d = ev(8)
	require.Equal(t, "fresh:owd_sample", name)
	require.Equal(t, map[string]any{"packet_number": 7.0, "owd_us": 10000.0, "owd_min_us": 9000.0, "synced": true}, d)
	_, name, d = ev(9)
	require.Equal(t, "fresh:clock_offset", name)
	require.Equal(t, map[string]any{"offset_us": -1500.0, "synced": true, "source": "inband"}, d)
	tm, name, d = ev(10)
	require.Equal(t, 11.0, tm)
	require.Equal(t, "fresh:update_age", name)
	require.Equal(t, map[string]any{"packet_number": 4.0, "age_us": 12000.0, "early": true}, d)
}

// A write error is kept: the rest is dropped and Close reports it.
func TestWriterKeepsFirstError(t *testing.T) {
	s := sink{err: errors.New("disk full")}
	w := NewWriter(&s, testInfo, Title)
	for i := range 1000 { // more than the buffer holds
		w.PacketSent(time.Duration(i), &Packet{Type: "1RTT", Number: int64(i), Frame: Frame{Type: "ping"}})
	}
	require.ErrorContains(t, w.Close(), "disk full")
	require.True(t, s.closed)
}

func TestDirTracerAndFromEnv(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "traces") // created on first use
	tr, err := DirTracer(dir)(testInfo)
	require.NoError(t, err)
	require.NoError(t, tr.Close())
	name := FileName(testInfo)
	require.Equal(t, "20231114T221320.123000Z_0000000000000abc_server.sqlog", name)
	b, err := os.ReadFile(filepath.Join(dir, name))
	require.NoError(t, err)
	require.Len(t, records(t, b), 1)

	notDir := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(notDir, nil, 0o644))
	_, err = DirTracer(notDir)(testInfo)
	require.ErrorContains(t, err, "qlog")

	t.Setenv(EnvDir, "")
	require.Nil(t, FromEnv())
	t.Setenv(EnvDir, dir)
	nt := FromEnv()
	require.NotNil(t, nt)
	info := testInfo
	info.Role = Client
	tr, err = nt(info)
	require.NoError(t, err)
	require.NoError(t, tr.Close())
	_, err = os.Stat(filepath.Join(dir, strings.Replace(name, "server", "client", 1)))
	require.NoError(t, err)
}
