package scenario

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestUpdateRate: update_rate is a fixed flow's rate and an acp or lazy
// flow's source (PeriodicSource); it means nothing on other kinds.
func TestUpdateRate(t *testing.T) {
	parse := func(flow string) (*Scenario, error) {
		return Parse([]byte(`{"name": "x", "duration": "10s", "forward": {"rate": "1Mbps"}, "reverse": {"rate": "1Mbps"},
			"flows": [` + flow + `]}`))
	}
	s, err := parse(`{"kind": "acp", "update_rate": 50, "size": 100}`)
	require.NoError(t, err)
	require.True(t, s.Flows[0].PeriodicSource())
	s, err = parse(`{"kind": "lazy", "update_rate": 10}`)
	require.NoError(t, err)
	require.True(t, s.Flows[0].PeriodicSource())
	s, err = parse(`{"kind": "acp"}`)
	require.NoError(t, err)
	require.False(t, s.Flows[0].PeriodicSource(), "generate at will")
	s, err = parse(`{"kind": "fixed", "update_rate": 10}`)
	require.NoError(t, err)
	require.False(t, s.Flows[0].PeriodicSource(), "a fixed flow's rate is its policy's")
	for _, bad := range []string{
		`{"kind": "acp", "update_rate": -5}`,
		`{"kind": "bulk", "update_rate": 5}`,
		`{"kind": "cbr", "rate": "10kbps", "update_rate": 5}`,
	} {
		_, err := parse(bad)
		require.ErrorContains(t, err, "update_rate", bad)
	}
}

// TestPerFlowDelayAndWindow: extra_delay and max_window read back, and a
// window below two segments or on a flow without a receive window is
// refused.
func TestPerFlowDelayAndWindow(t *testing.T) {
	parse := func(flow string) (*Scenario, error) {
		return Parse([]byte(`{"name": "x", "duration": "10s", "mss": 1000, "forward": {"rate": "1Mbps"}, "reverse": {"rate": "1Mbps"},
			"flows": [` + flow + `]}`))
	}
	s, err := parse(`{"kind": "bulk", "extra_delay": "30ms", "max_window": 2000}`)
	require.NoError(t, err)
	require.Equal(t, 30*time.Millisecond, s.Flows[0].ExtraDelay.D())
	require.Equal(t, 2000, s.Flows[0].MaxWindow)
	_, err = parse(`{"kind": "cbr", "rate": "10kbps", "extra_delay": "5ms"}`)
	require.NoError(t, err, "any flow may have a longer path")
	for bad, msg := range map[string]string{
		`{"kind": "bulk", "max_window": 1999}`:                  "below two segments",
		`{"kind": "bulk", "max_window": -1}`:                    "below two segments",
		`{"kind": "cbr", "rate": "10kbps", "max_window": 5000}`: "max_window is for bulk flows",
		`{"kind": "bulk", "extra_delay": "-5ms"}`:               "negative",
	} {
		_, err := parse(bad)
		require.ErrorIs(t, err, ErrInvalid, bad)
		require.ErrorContains(t, err, msg, bad)
	}
	s, err = parse(`{"kind": "bulk"}`)
	require.NoError(t, err)
	s.Flows[0].ExtraDelay = Duration(-time.Millisecond)
	require.ErrorContains(t, s.Validate(), "extra_delay must not be negative")
}
