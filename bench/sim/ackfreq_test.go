package sim

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
)

// narrowUplink is an NB-IoT-like path: a 2 Mbit/s download whose ACKs
// share a 48 kbit/s uplink (a 20-packet FIFO) with the device's own
// telemetry, 6 kbit/s of 100-byte packets.
const narrowUplink = `{"name": "narrow-uplink", "duration": "30s", "seed": 3, "mss": 1000,
	"forward": {"rate": "2Mbps", "delay": "60ms", "queue": {"discipline": "fifo", "limit": 60}},
	"reverse": {"rate": "48kbps", "delay": "60ms", "queue": {"discipline": "fifo", "limit": 20}},
	"flows": [
		{"name": "test", "kind": "bulk", "cc": "owd", "size": 1000},
		{"name": "telemetry", "kind": "cbr", "rate": "6kbps", "size": 100, "reverse": true}
	]}`

// telemetryDelivered is the share of the telemetry's packets delivered.
func telemetryDelivered(t *testing.T, r *report.Run) float64 {
	t.Helper()
	f, ok := r.Flow("telemetry")
	require.True(t, ok)
	require.Positive(t, f.Sent)
	return float64(f.Delivered) / float64(f.Sent)
}

// TestAckFrequencyNarrowUplink: on a narrow uplink the ACKs of a download
// fill it and the device's own telemetry is dropped; with ACK frequency
// (the sender thins the receiver's ACKs once the uplink holds a standing
// queue) the telemetry gets through, for every controller, in the same
// test as the run without it (no session consents: every second packet
// acknowledged). The download does not lose goodput for it.
func TestAckFrequencyNarrowUplink(t *testing.T) {
	s, err := scenario.Parse([]byte(narrowUplink))
	require.NoError(t, err)
	for _, name := range []string{"owd", "bbr", "cubic"} {
		t.Run(name, func(t *testing.T) {
			with, err := Run(s, Options{CC: name})
			require.NoError(t, err)
			without, err := Run(s, Options{CC: name, noAckFrequency: true})
			require.NoError(t, err)
			w, wo := telemetryDelivered(t, with), telemetryDelivered(t, without)
			t.Logf("%s: telemetry delivered %.3f with ACK frequency, %.3f without; goodput %.2f vs %.2f Mbit/s; %d requests, last %d packets per ACK",
				name, w, wo, with.Flows[0].GoodputBps/1e6, without.Flows[0].GoodputBps/1e6, with.Flows[0].AckFrequencySent, with.Flows[0].AckRatio)
			require.Positive(t, with.Flows[0].AckFrequencySent)
			require.Zero(t, without.Flows[0].AckFrequencySent, "a receiver that did not consent is never asked")
			require.GreaterOrEqual(t, with.Flows[0].GoodputBps, 0.95*without.Flows[0].GoodputBps)
			// Never worse than without, unless both deliver 90 %: BBR,
			// no longer held back by its ACK clock, downloads 2.2× as
			// fast and its telemetry gets 0.956 instead of 0.982.
			require.GreaterOrEqual(t, w, min(wo, 0.9))
			if name == "owd" {
				// The case: the ACKs of owd's download starve the
				// uplink (BBR's own ACK clock keeps it slower; CUBIC's
				// window losses send it back to every second packet
				// now and then).
				require.Greater(t, w, wo+0.3, "thinning must give the uplink back to the telemetry")
				require.GreaterOrEqual(t, w, 0.9)
			}
		})
	}
}

// TestAckFrequencySymmetricUnchanged: on a symmetric path the return path
// never holds a standing queue, so the sender never asks for fewer ACKs,
// beside a buffer filler too, and the outcome is that of a run where no
// session consents: the link carries the same bulk goodput, and the
// telemetry the same. (Not bit for bit, and not flow by flow: the
// Accept's parameters change the first packets' timing by a few µs, and
// which of two flows sharing a full FIFO loses which packet then follows
// from that, so the split between them moves by percents either way from
// seed to seed.)
func TestAckFrequencySymmetricUnchanged(t *testing.T) {
	s, err := scenario.Parse([]byte(`{"name": "symmetric", "duration": "20s", "seed": 5, "mss": 1000,
		"forward": {"rate": "10Mbps", "delay": "20ms", "queue": {"discipline": "fifo", "limit": 100}},
		"reverse": {"rate": "10Mbps", "delay": "20ms", "queue": {"discipline": "fifo", "limit": 100}},
		"flows": [
			{"name": "a", "kind": "bulk", "cc": "owd"},
			{"name": "b", "kind": "bulk", "cc": "cubic", "pin": true, "start": "5s"},
			{"name": "telemetry", "kind": "cbr", "rate": "500kbps", "size": 200, "reverse": true}
		]}`))
	require.NoError(t, err)
	for _, name := range []string{"owd", "bbr", "copa"} {
		t.Run(name, func(t *testing.T) {
			with, err := Run(s, Options{CC: name})
			require.NoError(t, err)
			without, err := Run(s, Options{CC: name, noAckFrequency: true})
			require.NoError(t, err)
			var bulkWith, bulkWithout float64
			for i, f := range with.Flows {
				require.Zero(t, f.AckFrequencySent, f.Name)
				if f.Kind == "bulk" {
					bulkWith += f.GoodputBps
					bulkWithout += without.Flows[i].GoodputBps
				} else {
					require.InDelta(t, without.Flows[i].GoodputBps, f.GoodputBps, 0.02*without.Flows[i].GoodputBps+1, f.Name)
				}
			}
			require.InDelta(t, bulkWithout, bulkWith, 0.02*bulkWithout, "the bulk flows together")
		})
	}
}
