package transport

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// On loopback (MTU 65536) path MTU discovery stops at the ceiling,
// MaxDatagram: 1452 by default, what a user sets otherwise; with
// DisablePathMTUDiscovery the size stays fixed. The stream arrives whole
// at every size.
func TestPathMTUDiscoveryLoopbackCeiling(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      Config
		want     int
		srv      *Config // the listener's, if not cfg
		wantLost int64
	}{
		{"default", Config{}, DefaultMaxDatagram, nil, 0},
		{"ceiling 9000", Config{MaxDatagram: 9000}, 9000, nil, 0},
		{"ceiling 1300", Config{MaxDatagram: 1300}, 1300, nil, 0},
		{"disabled", Config{DisablePathMTUDiscovery: true}, 1200, nil, 0},
		{"disabled at 1400", Config{DisablePathMTUDiscovery: true, MaxDatagram: 1400}, 1400, nil, 0},
		// The peer's reader drops datagrams above its own MaxDatagram:
		// a client with a higher ceiling stops below the server's.
		{"server's ceiling below the client's", Config{MaxDatagram: 9000}, 1280, &Config{MaxDatagram: 1300}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srvCfg := tc.cfg
			if tc.srv != nil {
				srvCfg = *tc.srv
			}
			l, cli, srv := pair(t, srvCfg, tc.cfg)
			defer l.Close()
			data := randomBytes(2<<20, 3)
			requireTransfer(t, cli, srv, data)
			st := cli.Stats()
			require.Equal(t, tc.want, st.DatagramSize, "%v", st)
			require.Equal(t, tc.wantLost, st.PMTUProbesLost)
			if tc.cfg.DisablePathMTUDiscovery {
				require.Zero(t, st.PMTUProbesSent)
			}
			require.Contains(t, st.String(), "datagram ")
			require.NoError(t, cli.Close())
			require.NoError(t, srv.Close())
		})
	}
}
