package emudriver

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/internal/realtime"
)

// runTUN runs a scenario through the TUN router, or skips the test with
// the reason it cannot run here.
func runTUN(t *testing.T, s *scenario.Scenario) *report.Run {
	t.Helper()
	if _, err := exec.LookPath(iperf3Binary); err != nil {
		t.Skipf("no %s: %v", iperf3Binary, err)
	}
	r, err := Run(context.Background(), s, Options{TUN: true})
	if errors.Is(err, ErrNoTUN) {
		t.Skip(err.Error())
	}
	require.NoError(t, err)
	return r
}

func flowOf(t *testing.T, r *report.Run, name string) report.Flow {
	t.Helper()
	f, ok := r.Flow(name)
	if !ok {
		t.Fatalf("no flow %q", name)
	}
	return f
}

// The CI smoke test of the TUN router: kernel CUBIC (iperf3) and our owd
// each move data through the router, alone in turn on a 20 Mbit/s, 20 ms
// path with a 100-packet FIFO, and (in the long real-time suite: owd,
// delay-based, reads a loaded machine's scheduling delays as queueing)
// owd queues less than CUBIC, which fills the buffer.
func TestTUNSmoke(t *testing.T) {
	s, err := scenario.Load(filepath.Join("..", "scenarios", "tun-smoke.json"))
	require.NoError(t, err)
	r := runTUN(t, s)
	require.Equal(t, "emu-tun", r.Driver)
	owd, cubic := flowOf(t, r, "owd"), flowOf(t, r, "kernel-cubic")
	t.Logf("owd: %.2f Mbit/s, queue p95 %.1f ms, %d packets; cubic: %.2f Mbit/s, queue p95 %.1f ms, %d segments, %d retransmitted",
		owd.GoodputBps/1e6, owd.QueueMs.P95, owd.Delivered, cubic.GoodputBps/1e6, cubic.QueueMs.P95, cubic.Delivered, cubic.Retransmitted)
	for _, f := range []report.Flow{owd, cubic} {
		require.Positive(t, f.Bytes, f.Name)
		require.Positive(t, f.Delivered, "%s: data packets seen at the router", f.Name)
		require.Positive(t, f.GoodputBps, f.Name)
	}
	realtime.Check(t, owd.QueueMs.P95 < cubic.QueueMs.P95, "owd's queue p95 %.1f ms < CUBIC's %.1f ms", owd.QueueMs.P95, cubic.QueueMs.P95)
	require.Positive(t, r.Utilization.Forward)
}

// Every flow kind crosses the TUN router in both directions: fresh bulk
// and updates, cbr, telemetry over TCP (with and without Nagle) and UDP,
// and Nagle's algorithm holds small messages back while one is unacked
// (a message every 10 ms on a 40 ms RTT).
func TestTUNFlowKinds(t *testing.T) {
	s, err := scenario.Parse([]byte(`{"name": "tun-kinds", "duration": "4s", "seed": 1, "mss": 1400,
	  "forward": {"rate": "10Mbps", "delay": "20ms", "queue": {"limit": 100}},
	  "reverse": {"rate": "10Mbps", "delay": "20ms", "queue": {"limit": 100}},
	  "flows": [
	    {"name": "bulk", "kind": "bulk", "cc": "owd", "bytes": 200000},
	    {"name": "rbulk", "kind": "bulk", "cc": "cubic", "reverse": true, "bytes": 200000},
	    {"name": "acp", "kind": "acp", "size": 200},
	    {"name": "cbr", "kind": "cbr", "rate": "200kbps"},
	    {"name": "rcbr", "kind": "cbr", "rate": "200kbps", "reverse": true},
	    {"name": "tcp", "kind": "telemetry", "size": 100, "interval": "10ms"},
	    {"name": "nagle", "kind": "telemetry", "size": 100, "interval": "10ms", "nagle": true},
	    {"name": "udp", "kind": "telemetry", "protocol": "udp", "size": 100, "interval": "10ms"},
	    {"name": "rtcp", "kind": "telemetry", "size": 100, "interval": "10ms", "reverse": true},
	    {"name": "reqresp", "kind": "telemetry", "size": 100, "interval": "10ms", "respond": true},
	    {"name": "rudp", "kind": "telemetry", "protocol": "udp", "size": 100, "interval": "10ms", "respond": true, "reverse": true},
	    {"name": "fresh", "kind": "telemetry", "protocol": "fresh", "size": 100, "interval": "10ms"}]}`))
	require.NoError(t, err)
	r := runTUN(t, s)
	for _, f := range r.Flows {
		require.Positive(t, f.Bytes, f.Name)
		require.Positive(t, f.Delivered, f.Name)
		require.Greater(t, f.OWDms.P50, 20.0, "%s: at least the propagation delay at the router", f.Name)
		if f.Kind == scenario.KindTelemetry {
			require.NotNil(t, f.WriteToRouterMs, f.Name)
			require.Greater(t, f.EndToEndMs.P50, 20.0, f.Name)
			require.Greater(t, f.EndToEndMs.P50, f.WriteToRouterMs.P50, f.Name)
		}
	}
	tcp, nagle := flowOf(t, r, "tcp"), flowOf(t, r, "nagle")
	t.Logf("write to router p50: TCP_NODELAY %.2f ms, Nagle %.2f ms", tcp.WriteToRouterMs.P50, nagle.WriteToRouterMs.P50)
	require.Greater(t, nagle.WriteToRouterMs.Mean, tcp.WriteToRouterMs.Mean)
	// Request/response: the round trip is at least the path's 40 ms.
	for _, name := range []string{"reqresp", "rudp"} {
		f := flowOf(t, r, name)
		require.NotNil(t, f.RTTMs, name)
		require.GreaterOrEqual(t, f.RTTMs.P50, 40.0, name)
		require.Less(t, f.RTTMs.P50, 120.0, name)
	}
	require.Nil(t, tcp.RTTMs, "no responses asked")
}

// MQTT (mosquitto, paho, QoS 0 and 1, and over TLS 1.3), CoAP (go-coap,
// non-confirmable with No-Response and confirmable, and over DTLS 1.2) and
// fresh over its TLS handshake, and quic-go's DATAGRAMs (plain, and over
// transport/quichook with owd) carry readings through the router:
// each delivers its readings, the monitor's age of information is
// measured, and the router counts what each put on the link in both
// directions (a non-confirmable CoAP reading with No-Response gets nothing
// back; a confirmable one gets its ACK).
func TestTUNPeers(t *testing.T) {
	if _, err := exec.LookPath(mosquittoBinary); err != nil {
		t.Skipf("%v", ErrNoMosquitto)
	}
	s, err := scenario.Parse([]byte(`{"name": "tun-peers", "duration": "4s", "seed": 1,
	  "forward": {"rate": "10Mbps", "delay": "20ms", "queue": {"limit": 100}},
	  "reverse": {"rate": "10Mbps", "delay": "20ms", "queue": {"limit": 100}},
	  "flows": [
	    {"name": "mqtt0", "kind": "telemetry", "protocol": "mqtt", "size": 100, "interval": "50ms"},
	    {"name": "mqtt1", "kind": "telemetry", "protocol": "mqtt", "reliable": true, "size": 100, "interval": "50ms"},
	    {"name": "coap-non", "kind": "telemetry", "protocol": "coap", "size": 100, "interval": "50ms"},
	    {"name": "coap-con", "kind": "telemetry", "protocol": "coap", "reliable": true, "size": 100, "interval": "50ms"},
	    {"name": "mqtt-tls", "kind": "telemetry", "protocol": "mqtt", "reliable": true, "secure": true, "size": 100, "interval": "50ms"},
	    {"name": "coap-dtls", "kind": "telemetry", "protocol": "coap", "secure": true, "size": 100, "interval": "50ms"},
	    {"name": "fresh-tls", "kind": "telemetry", "protocol": "fresh", "secure": true, "size": 100, "interval": "50ms"},
	    {"name": "quic", "kind": "telemetry", "protocol": "quic", "size": 100, "interval": "50ms"},
	    {"name": "quic-owd", "kind": "telemetry", "protocol": "quic", "cc": "owd", "size": 100, "interval": "50ms"}]}`))
	require.NoError(t, err)
	r := runTUN(t, s)
	for _, f := range r.Flows {
		t.Logf("%s: %d of %d delivered, e2e p50 %.1f ms, age mean %v, link %+v", f.Name, f.Delivered, f.Sent, f.EndToEndMs.P50, f.AgeMs, *f.Link)
		require.Positive(t, f.Sent, f.Name)
		require.GreaterOrEqual(t, float64(f.Delivered), 0.9*float64(f.Sent), "%s: readings delivered", f.Name)
		require.Greater(t, f.EndToEndMs.P50, 20.0, "%s: at least the path's one-way delay", f.Name)
		require.NotNil(t, f.AgeMs, f.Name)
		require.Greater(t, f.AgeMs.Mean, 20.0, f.Name)
		require.GreaterOrEqual(t, f.Link.DataPackets, f.Delivered, "%s: a packet per reading at least", f.Name)
	}
	con, non := flowOf(t, r, "coap-con"), flowOf(t, r, "coap-non")
	require.Zero(t, non.Link.ReturnPackets, "No-Response: nothing comes back")
	require.GreaterOrEqual(t, con.Link.ReturnPackets, con.Delivered, "a piggybacked ACK per confirmable reading")
	require.Positive(t, flowOf(t, r, "mqtt0").Link.ReturnPackets, "TCP's ACKs and the CONNACK")
	// Encryption costs bytes on the link: the handshake, records and tags.
	require.Greater(t, flowOf(t, r, "mqtt-tls").Link.DataBytes, flowOf(t, r, "mqtt1").Link.DataBytes)
	require.Greater(t, flowOf(t, r, "coap-dtls").Link.DataBytes, non.Link.DataBytes)
	require.Positive(t, flowOf(t, r, "coap-dtls").Link.ReturnPackets, "the DTLS handshake's flights")
}

// Sleeping devices: every wake connects, sends one reading, waits for its
// acknowledgement where the protocol has one, and closes. Every reading
// arrives; fresh resuming with 0-RTT stores it sooner than MQTT, which
// needs TCP's and TLS's handshakes and the CONNECT before its PUBLISH; a
// non-confirmable CoAP reading keeps the radio on for the one datagram.
func TestTUNSleeping(t *testing.T) {
	if _, err := exec.LookPath(mosquittoBinary); err != nil {
		t.Skipf("%v", ErrNoMosquitto)
	}
	s, err := scenario.Parse([]byte(`{"name": "tun-sleeping", "duration": "7s", "seed": 1,
	  "forward": {"rate": "10Mbps", "delay": "20ms", "queue": {"limit": 100}},
	  "reverse": {"rate": "10Mbps", "delay": "20ms", "queue": {"limit": 100}},
	  "flows": [
	    {"name": "fresh", "kind": "telemetry", "protocol": "fresh", "secure": true, "sleep": true, "size": 100, "interval": "1s", "interval_max": "1.2s"},
	    {"name": "mqtt", "kind": "telemetry", "protocol": "mqtt", "secure": true, "reliable": true, "sleep": true, "size": 100, "interval": "1s"},
	    {"name": "coap-non", "kind": "telemetry", "protocol": "coap", "sleep": true, "size": 100, "interval": "1s"},
	    {"name": "coap-con-dtls", "kind": "telemetry", "protocol": "coap", "reliable": true, "secure": true, "sleep": true, "size": 100, "interval": "1s"},
	    {"name": "quic", "kind": "telemetry", "protocol": "quic", "sleep": true, "size": 100, "interval": "1s"},
	    {"name": "udp", "kind": "telemetry", "protocol": "udp", "sleep": true, "size": 100, "interval": "1s"}]}`))
	require.NoError(t, err)
	r := runTUN(t, s)
	for _, f := range r.Flows {
		t.Logf("%s: %d of %d, wake to stored %+v, radio on %+v, link %+v", f.Name, f.Delivered, f.Sent, *f.WakeToStoredMs, *f.RadioOnMs, *f.Link)
		require.GreaterOrEqual(t, f.Sent, int64(5), f.Name)
		require.Equal(t, f.Sent, f.Delivered, "%s: every reading", f.Name)
		require.Greater(t, f.WakeToStoredMs.P50, 20.0, "%s: at least the path's one-way delay", f.Name)
		require.Positive(t, f.RadioOnMs.P50, f.Name)
	}
	fresh, mqtt, non := flowOf(t, r, "fresh"), flowOf(t, r, "mqtt"), flowOf(t, r, "coap-non")
	require.Less(t, fresh.WakeToStoredMs.P50, mqtt.WakeToStoredMs.P50)
	require.Less(t, non.RadioOnMs.P50, fresh.RadioOnMs.P50)
	require.Zero(t, non.Link.ReturnPackets)
}
