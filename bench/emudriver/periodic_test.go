package emudriver

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPeriodicSourceRefused: the emulator's update sources sample at 1 kHz;
// an acp flow with a periodic source (update_rate) is the simulator's, and
// is refused with the alternative named.
func TestPeriodicSourceRefused(t *testing.T) {
	s := parse(t, `{"name": "x", "duration": "1s", "forward": {"rate": "1Mbps"}, "reverse": {"rate": "1Mbps"},
	  "flows": [{"kind": "acp", "update_rate": 50}]}`)
	err := Check(s)
	require.ErrorIs(t, err, ErrUnsupported)
	require.ErrorContains(t, err, "telemetry flow with protocol fresh")
}
