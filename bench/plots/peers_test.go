package plots

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/internal/benchtest"
	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
)

// A streaming point is a telemetry flow's p95 age over the runs against
// the upload's goodput in its file, labelled with whose upload it was; a
// sleeping one is the wake-to-stored median against the bytes per wake.
func TestPeerPoints(t *testing.T) {
	run := func(age, upload float64) *report.Run {
		return &report.Run{Scenario: "s", Flows: []report.Flow{
			{Name: "mqtt", Kind: scenario.KindTelemetry, AgeMs: &report.AgeStats{P95: age}},
			{Name: "cubic", Kind: scenario.KindIperf3, GoodputBps: upload},
		}}
	}
	pts, sleeping, err := peerPoints([]*report.Run{run(100, 8e6), run(300, 10e6)})
	require.NoError(t, err)
	require.False(t, sleeping)
	require.Equal(t, []peerPoint{{label: "mqtt + CUBIC upload", x: 200, y: 9}}, pts)

	wake := &report.Run{Scenario: "w", Flows: []report.Flow{{Name: "fresh", Kind: scenario.KindTelemetry, Sent: 4,
		WakeToStoredMs: &report.Stats{P50: 65}, Link: &report.LinkCount{DataBytes: 3000, ReturnBytes: 1000}}}}
	pts, sleeping, err = peerPoints([]*report.Run{wake})
	require.NoError(t, err)
	require.True(t, sleeping)
	require.Equal(t, []peerPoint{{label: "fresh", x: 65, y: 1000}}, pts)

	_, _, err = peerPoints([]*report.Run{run(1, 1), {Scenario: "s"}})
	require.ErrorContains(t, err, "missing from a run")
}

// Peers draws a file's telemetry flows; a file without any is an error.
func TestPeers(t *testing.T) {
	stream := []*report.Run{{Scenario: "s", Flows: []report.Flow{
		{Name: "udp", Kind: scenario.KindTelemetry, AgeMs: &report.AgeStats{P95: 120}},
		{Name: "fresh", Kind: scenario.KindTelemetry, AgeMs: &report.AgeStats{P95: 110}},
		{Name: "up", Kind: scenario.KindBulk, GoodputBps: 9e6}}}}
	p, err := Peers([][]*report.Run{stream})
	require.NoError(t, err)
	require.Equal(t, "better: up and right", p.Title.Text)
	require.Equal(t, "upload goodput beside them [Mbit/s]", p.Y.Label.Text)
	path := filepath.Join(t.TempDir(), "p.png")
	require.NoError(t, SavePNG(p, path))
	benchtest.RequirePNG(t, path)

	_, err = Peers([][]*report.Run{{{Scenario: "bulk only", Flows: []report.Flow{{Name: "up", Kind: scenario.KindBulk}}}}})
	require.ErrorContains(t, err, "no telemetry flows")
}
