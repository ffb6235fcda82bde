package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/qlog"
)

// qlogEvents are the event names a fresh trace may hold.
var qlogEvents = map[string]bool{
	"transport:packet_sent":             true,
	"transport:packet_received":         true,
	"recovery:packet_lost":              true,
	"recovery:metrics_updated":          true,
	"recovery:congestion_state_updated": true,
	"fresh:owd_sample":                  true,
	"fresh:clock_offset":                true,
	"fresh:update_age":                  true,
}

// qlogRecord is one record of a JSON-SEQ trace, as qvis reads it.
type qlogRecord struct {
	Time *float64       `json:"time"`
	Name string         `json:"name"`
	Data map[string]any `json:"data"`

	QlogVersion string `json:"qlog_version"`
	QlogFormat  string `json:"qlog_format"`
	Trace       *struct {
		VantagePoint struct {
			Type string `json:"type"`
		} `json:"vantage_point"`
		CommonFields struct {
			ODCID         string   `json:"ODCID"`
			TimeFormat    string   `json:"time_format"`
			ReferenceTime *float64 `json:"reference_time"`
		} `json:"common_fields"`
	} `json:"trace"`
}

// readQlog parses a JSON-SEQ trace (RFC 7464): every record starts with
// the record separator and ends with a line feed.
func readQlog(t *testing.T, path string) []qlogRecord {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NotEmpty(t, b)
	require.Equal(t, byte(0x1e), b[0], "the first record begins with RS")
	var recs []qlogRecord
	for i, r := range bytes.Split(b[1:], []byte{0x1e}) {
		require.True(t, bytes.HasSuffix(r, []byte("\n")), "record %d ends with LF", i)
		var rec qlogRecord
		require.NoError(t, json.Unmarshal(r, &rec), "record %d: %s", i, r)
		recs = append(recs, rec)
	}
	return recs
}

// packetKey names a packet in one direction: its number space's frame
// class and its number.
type packetKey struct {
	control bool
	pn      int64
}

// Both ends of a loopback connection traced into one directory
// (qlog.DirTracer): two files, each a well-formed qlog JSON-SEQ trace
// (header first, then events with a non-decreasing time, a known name and
// data) of the right vantage point and the same ODCID, closed when the
// connection ends; the packets one end sent are those the other received.
func TestQlogDirTracerLoopback(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Tracer: qlog.DirTracer(dir)}
	l, cli, srv := pair(t, cfg, cfg)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := range 5 {
		require.NoError(t, cli.SendUpdate([]byte{byte(i)}))
		_, err := srv.ReadUpdate(ctx)
		require.NoError(t, err)
	}
	requireTransfer(t, cli, srv, randomBytes(1<<20, 3))
	require.NoError(t, cli.Close())
	require.NoError(t, srv.Close())

	if d := os.Getenv("FRESH_QLOG_KEEP"); d != "" {
		t.Cleanup(func() { _ = os.CopyFS(d, os.DirFS(dir)) })
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.sqlog"))
	require.NoError(t, err)
	require.Len(t, files, 2, "one trace per end")
	sent, received := map[string]map[packetKey]bool{}, map[string]map[packetKey]bool{}
	var odcid []string
	for _, f := range files {
		role := qlog.Client
		if strings.HasSuffix(f, "_server.sqlog") {
			role = qlog.Server
		}
		recs := readQlog(t, f)
		require.Greater(t, len(recs), 100, f)
		h := recs[0]
		require.Equal(t, "0.3", h.QlogVersion)
		require.Equal(t, "JSON-SEQ", h.QlogFormat)
		require.NotNil(t, h.Trace, "the header has a trace")
		require.Equal(t, string(role), h.Trace.VantagePoint.Type)
		require.Equal(t, "relative", h.Trace.CommonFields.TimeFormat)
		require.NotNil(t, h.Trace.CommonFields.ReferenceTime)
		require.InDelta(t, float64(time.Now().UnixMilli()), *h.Trace.CommonFields.ReferenceTime, float64(time.Minute.Milliseconds()))
		require.Len(t, h.Trace.CommonFields.ODCID, 16)
		odcid = append(odcid, h.Trace.CommonFields.ODCID)
		sent[string(role)], received[string(role)] = map[packetKey]bool{}, map[packetKey]bool{}
		last := 0.0
		names := map[string]int{}
		for i, r := range recs[1:] {
			require.NotNil(t, r.Time, "record %d has a time", i+1)
			require.GreaterOrEqual(t, *r.Time, last, "record %d goes back in time", i+1)
			last = *r.Time
			require.True(t, qlogEvents[r.Name], "record %d: unknown event %q", i+1, r.Name)
			require.NotNil(t, r.Data, "record %d has data", i+1)
			names[r.Name]++
			if r.Name != "transport:packet_sent" && r.Name != "transport:packet_received" {
				continue
			}
			hdr := r.Data["header"].(map[string]any)
			frames := r.Data["frames"].([]any)
			require.Len(t, frames, 1, "one frame per datagram")
			ft := frames[0].(map[string]any)["frame_type"].(string)
			require.NotEqual(t, "unknown", ft)
			require.Positive(t, r.Data["raw"].(map[string]any)["length"].(float64))
			if hdr["packet_type"] != "1RTT" {
				continue // the handshake's levels number apart
			}
			k := packetKey{control: ft != "stream" && ft != "update" && ft != "ping" && ft != "pmtu_probe" && ft != "commit", pn: int64(hdr["packet_number"].(float64))}
			if r.Name == "transport:packet_sent" {
				sent[string(role)][k] = true
			} else {
				received[string(role)][k] = true
			}
		}
		for _, n := range []string{"transport:packet_sent", "transport:packet_received"} {
			require.Positive(t, names[n], "%s: no %s", role, n)
		}
		if role == qlog.Server {
			require.Equal(t, 5, names["fresh:update_age"], "one age per update")
			require.Positive(t, names["fresh:clock_offset"], "the receiver estimates the offset")
		} else {
			require.Positive(t, names["fresh:owd_sample"])
			require.Positive(t, names["recovery:metrics_updated"], "the sender's window and RTT")
			require.Positive(t, names["recovery:congestion_state_updated"])
		}
	}
	require.Equal(t, odcid[0], odcid[1], "both ends name the connection alike")
	for _, dir := range [][2]string{{"client", "server"}, {"server", "client"}} {
		from, to := dir[0], dir[1]
		require.NotEmpty(t, received[to])
		for k := range received[to] {
			require.True(t, sent[from][k], "%s received %+v, which %s never sent", to, k, from)
		}
		// Loopback may drop a few under load, never most.
		require.Greater(t, len(received[to]), len(sent[from])*9/10, "%s → %s", from, to)
	}
}

// A Tracer that fails (its directory is a file) leaves the connection
// untraced and working.
func TestQlogTracerErrorLeavesConnectionUp(t *testing.T) {
	notDir := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(notDir, nil, 0o644))
	cfg := Config{Tracer: qlog.DirTracer(notDir)}
	l, cli, srv := pair(t, cfg, cfg)
	defer l.Close()
	requireTransfer(t, cli, srv, randomBytes(64<<10, 4))
	require.NoError(t, cli.Close())
	require.NoError(t, srv.Close())
}

// BenchmarkLoopbackStreamQlog is BenchmarkLoopbackStream with both ends
// traced into qlog files: what tracing costs the whole stack.
func BenchmarkLoopbackStreamQlog(b *testing.B) {
	benchLoopbackStream(b, testConfig(Config{Tracer: qlog.DirTracer(b.TempDir())}))
}
