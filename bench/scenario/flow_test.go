package scenario

import (
	"testing"

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
