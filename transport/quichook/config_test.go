package quichook

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh"
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/owd"
)

// A refused Config wraps the sentinel every fresh package shares and names
// the field as the user writes it.
func TestConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		cfg   Config
		field string
	}{
		{Config{MaxDatagram: 100}, "quichook.Config.MaxDatagram"},
		{Config{QueuePackets: -1}, "quichook.Config.QueuePackets"},
		{Config{AckEvery: maxSamples + 1}, "quichook.Config.AckEvery"},
		{Config{MaxPeers: -1}, "quichook.Config.MaxPeers"},
		{Config{CC: "no-such-controller"}, "quichook.Config.CC"},
	} {
		_, err := tc.cfg.withDefaults()
		require.Error(t, err, tc.field)
		require.True(t, errors.Is(err, ErrInvalidConfig), "%v", err)
		require.True(t, errors.Is(err, fresh.ErrInvalidConfig))
		require.Contains(t, err.Error(), tc.field)
	}
}

// The zero Config runs owd with transport's vocabulary and defaults.
func TestConfigDefaults(t *testing.T) {
	c, err := Config{}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, owd.Name, c.CC)
	require.Equal(t, DefaultMaxDatagram, c.MaxDatagram)
	ctl, err := c.NewController(cc.ByteCount(c.MaxDatagram))
	require.NoError(t, err)
	require.Equal(t, owd.Name, ctl.Name())
}
