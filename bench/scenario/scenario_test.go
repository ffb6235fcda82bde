package scenario

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
)

func TestParseRate(t *testing.T) {
	tests := []struct {
		in   string
		want cc.Bandwidth
		err  bool
	}{
		{"1.5Mbps", 1_500_000, false},
		{"200kbps", 200_000, false},
		{"10Gbps", 10_000_000_000, false},
		{"9600bps", 9600, false},
		{" 2 MBPS ", 2_000_000, false},
		{"10 Mbit/s", 10_000_000, false}, // the command lines' spellings (internal/units)
		{"10M", 10_000_000, false},
		{"100", 0, true}, // but a file must give a unit
		{"1.5", 0, true},
		{"10MB", 0, true}, // bytes, not bits
		{"-1Mbps", 0, true},
		{"fastMbps", 0, true},
	}
	for _, tc := range tests {
		got, err := ParseRate(tc.in)
		if tc.err {
			require.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
	require.Equal(t, "1.5Mbps", FormatRate(1_500_000))
}

func TestParseDefaultsAndErrors(t *testing.T) {
	s, err := Parse([]byte(`{"name":"x","duration":"10s",
		"forward":{"rate":"1Mbps","delay":"10ms"},"reverse":{"rate":"1Mbps"},
		"flows":[{"kind":"bulk"},{"kind":"acp"},{"kind":"cbr","rate":"100kbps"}]}`))
	require.NoError(t, err)
	require.Equal(t, 10*time.Second, s.Duration.D())
	require.Equal(t, 1000, s.MSS)
	require.Equal(t, "fifo", s.Forward.Queue.Discipline)
	require.Equal(t, 1000, s.Forward.Queue.Limit)
	require.Equal(t, "owd", s.Flows[0].CC)
	require.Equal(t, "acp", s.Flows[1].CC)
	require.Equal(t, 1024, s.Flows[1].Size)
	require.Equal(t, "bulk-0", s.Flows[0].Name)
	require.Equal(t, "perfect", s.ClockSync)

	bad := []string{
		`{"name":"x","duration":"10s","forward":{"rate":"1Mbps"},"reverse":{"rate":"1Mbps"},"flows":[{"kind":"warp"}]}`,
		`{"name":"x","duration":"10s","forward":{"rate":"1Mbps"},"reverse":{"rate":"1Mbps"},"flows":[]}`,
		`{"name":"x","duration":"10s","forward":{"rate":"1Mbps","lossy":1},"reverse":{"rate":"1Mbps"},"flows":[{"kind":"bulk"}]}`,
		`{"name":"x","duration":"10s","forward":{"rate":"1Mbps","queue":{"discipline":"red"}},"reverse":{"rate":"1Mbps"},"flows":[{"kind":"bulk"}]}`,
		`{"name":"x","duration":"10s","forward":{"rate":"1Mbps"},"reverse":{"rate":"1Mbps"},"flows":[{"kind":"fixed"}]}`,
		`{"name":"x","duration":"10s","forward":{"rate":"1Mbps"},"reverse":{"rate":"1Mbps"},"flows":[{"kind":"bulk","dscp":"CS9"}]}`,
		`{"name":"x","duration":"-1s","forward":{"rate":"1Mbps"},"reverse":{"rate":"1Mbps"},"flows":[{"kind":"bulk"}]}`,
		`not json`,
	}
	for _, b := range bad {
		_, err := Parse([]byte(b))
		require.ErrorIs(t, err, ErrInvalid, b)
	}
}

func TestWithCCKeepsPinned(t *testing.T) {
	s := &Scenario{Flows: []Flow{{Kind: KindBulk, CC: "cubic", Pin: true}, {Kind: KindBulk, CC: "owd"}, {Kind: KindACP, CC: "acp"}}}
	c := s.WithCC("reno")
	require.Equal(t, []string{"cubic", "reno", "acp"}, []string{c.Flows[0].CC, c.Flows[1].CC, c.Flows[2].CC})
	require.Equal(t, "owd", s.Flows[1].CC, "original untouched")
}

// A flow's dscp is read by dscp.Parse (every class name, any
// case, or a number) and defaults to best effort.
func TestDSCP(t *testing.T) {
	for in, want := range map[string]uint8{`"CS7"`: 56, `"cs6"`: 48, `"EF"`: 46, `"AF12"`: 12, `"af43"`: 38, `""`: 0, `"10"`: 10, "": 0} {
		field := ""
		if in != "" {
			field = `, "dscp": ` + in
		}
		s, err := Parse([]byte(`{"name": "d", "duration": "1s", "forward": {"rate": "1Mbps"}, "reverse": {"rate": "1Mbps"},
			"flows": [{"kind": "acp"` + field + `}]}`))
		require.NoError(t, err, in)
		require.True(t, s.Flows[0].DSCP.IsSet(), "%s: Validate fills the default", in)
		require.Equal(t, want, s.Flows[0].DSCP.Code(), in)
	}
	for _, in := range []string{`"64"`, `"AF14"`, `"CS8"`, `46`} {
		_, err := Parse([]byte(`{"name": "d", "duration": "1s", "forward": {"rate": "1Mbps"}, "reverse": {"rate": "1Mbps"},
			"flows": [{"kind": "acp", "dscp": ` + in + `}]}`))
		require.ErrorIs(t, err, ErrInvalid, in)
	}
}

// Every committed scenario must load.
func TestCommittedScenariosLoad(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "scenarios", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		_, err := Load(f)
		require.NoError(t, err, f)
	}
}

func TestQueueWMM(t *testing.T) {
	parse := func(queue string) (*Scenario, error) {
		return Parse([]byte(`{"name": "w", "duration": "1s", "forward": {"rate": "1Mbps", "queue": ` + queue + `},
			"reverse": {"rate": "1Mbps"}, "flows": [{"kind": "acp", "dscp": "CS7"}]}`))
	}
	s, err := parse(`{"discipline": "wmm"}`)
	require.NoError(t, err)
	require.Equal(t, Queue{Discipline: "wmm", Limit: 1000, ACQueue: "fifo"}, s.Forward.Queue)
	s, err = parse(`{"discipline": "wmm", "limit": 50, "ac_queue": "codel", "ac_limit": 20}`)
	require.NoError(t, err)
	require.Equal(t, Queue{Discipline: "wmm", Limit: 50, ACQueue: "codel", ACLimit: 20}, s.Forward.Queue)
	for _, q := range []string{
		`{"discipline": "wmm", "ac_queue": "fq_codel"}`,
		`{"discipline": "wmm", "ac_limit": -1}`,
		`{"discipline": "fifo", "ac_queue": "codel"}`,
		`{"discipline": "cake", "ac_limit": 10}`,
	} {
		_, err := parse(q)
		require.ErrorIs(t, err, ErrInvalid, q)
	}
}

// Telemetry flows: defaults, and their fields refused elsewhere.
func TestTelemetry(t *testing.T) {
	s, err := Parse([]byte(`{"name": "t", "duration": "1s", "forward": {"rate": "1Mbps"}, "reverse": {"rate": "1Mbps"},
		"flows": [{"kind": "telemetry"}, {"kind": "telemetry", "protocol": "udp", "interval": "10ms", "size": 200}, {"kind": "telemetry", "nagle": true},
		{"kind": "telemetry", "protocol": "mqtt", "reliable": true}, {"kind": "telemetry", "protocol": "coap"},
		{"kind": "telemetry", "protocol": "fresh", "secure": true, "sleep": true, "interval": "30s", "interval_max": "300s"}]}`))
	require.NoError(t, err)
	require.True(t, s.Flows[3].Reliable)
	require.Equal(t, "coap", s.Flows[4].Protocol)
	require.True(t, s.Flows[5].Sleep)
	require.Equal(t, 300*time.Second, s.Flows[5].IntervalMax.D())
	require.Equal(t, 100*time.Millisecond, s.Flows[0].Interval.D())
	require.Equal(t, "tcp", s.Flows[0].Protocol)
	require.Equal(t, 64, s.Flows[0].Size)
	require.Equal(t, "udp", s.Flows[1].Protocol)
	require.True(t, s.Flows[2].Nagle)
	require.True(t, s.Flows[0].EmuTUNOnly())
	for _, f := range []string{
		`{"kind": "telemetry", "protocol": "sctp"}`,
		`{"kind": "telemetry", "protocol": "udp", "nagle": true}`,
		`{"kind": "telemetry", "interval": "-1s"}`,
		`{"kind": "bulk", "interval": "1s"}`,
		`{"kind": "cbr", "rate": "1Mbps", "protocol": "udp"}`,
		`{"kind": "telemetry", "protocol": "tcp", "reliable": true}`,
		`{"kind": "telemetry", "protocol": "mqtt", "reverse": true}`,
		`{"kind": "telemetry", "protocol": "coap", "respond": true}`,
		`{"kind": "bulk", "reliable": true}`,
		`{"kind": "telemetry", "protocol": "udp", "secure": true}`,
		`{"kind": "bulk", "secure": true}`,
		`{"kind": "telemetry", "protocol": "udp", "cc": "owd"}`,
		`{"kind": "telemetry", "protocol": "quic", "reverse": true}`,
		`{"kind": "telemetry", "protocol": "tcp", "sleep": true}`,
		`{"kind": "telemetry", "protocol": "quic", "cc": "owd", "sleep": true}`,
		`{"kind": "telemetry", "protocol": "udp", "sleep": true, "reverse": true}`,
		`{"kind": "telemetry", "interval": "2s", "interval_max": "1s"}`,
		`{"kind": "bulk", "sleep": true}`,
	} {
		_, err := Parse([]byte(`{"name": "t", "duration": "1s", "forward": {"rate": "1Mbps"}, "reverse": {"rate": "1Mbps"}, "flows": [` + f + `]}`))
		require.ErrorIs(t, err, ErrInvalid, f)
	}
}
