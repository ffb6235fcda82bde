package transport

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Every bad setting fails at Listen/Dial time with ErrConfig and a message
// naming the field; the zero Config is valid.
func TestConfigValidation(t *testing.T) {
	_, err := Config{}.withDefaults()
	require.NoError(t, err)
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{MaxDatagram: 10}, "MaxDatagram 10"},
		{Config{MaxDatagram: 100000}, "MaxDatagram 100000"},
		{Config{SendBuffer: 100}, "SendBuffer and ReceiveWindow"},
		{Config{ReceiveWindow: 1}, "SendBuffer and ReceiveWindow"},
		{Config{CC: "nope"}, `unknown controller "nope"`},
		{Config{UpdatePolicy: "x"}, `UpdatePolicy "x"`},
		{Config{MaxUpdateRate: -5}, "MaxUpdateRate -5"},
		{Config{AckEvery: -1}, "AckEvery -1"},
		{Config{StreamDSCP: 46}, "StreamDSCP 46 is not a DSCP value"}, // a raw number, not DSCPCode(46)
		{Config{UpdateDSCP: 0xff}, "UpdateDSCP 255 is not a DSCP value"},
		{Config{IdleTimeout: -time.Second}, "IdleTimeout -1s"},
		{Config{HandshakeTimeout: -time.Second}, "HandshakeTimeout -1s"},
	} {
		_, err := tc.cfg.withDefaults()
		require.ErrorIs(t, err, ErrConfig, "%+v", tc.cfg)
		require.ErrorContains(t, err, tc.want)
		_, err = Listen("127.0.0.1:0", tc.cfg)
		require.ErrorIs(t, err, ErrConfig, "Listen fails at once")
	}
}
