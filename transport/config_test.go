package transport

import (
	"context"
	"crypto/tls"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/dscp"
)

// Every bad setting fails at Listen/Dial time with ErrInvalidConfig and a message
// naming the field; the zero Config is valid.
func TestConfigValidation(t *testing.T) {
	_, err := testConfig(Config{}).withDefaults()
	require.NoError(t, err)
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{MaxDatagram: 10}, "Config.MaxDatagram: 10 outside"},
		{Config{MaxDatagram: 100000}, "Config.MaxDatagram: 100000 outside"},
		{Config{SendBuffer: 100}, "Config.SendBuffer: 100 does not hold one datagram"},
		{Config{ReceiveWindow: 1}, "Config.ReceiveWindow: 1 does not hold"},
		{Config{CC: "nope"}, `Config.CC: cc: unknown controller "nope"`},
		{Config{UpdatePolicy: "x"}, `Config.UpdatePolicy: "x"`},
		{Config{MaxUpdateRate: -5}, "Config.MaxUpdateRate: -5"},
		{Config{AckEvery: -1}, "Config.AckEvery: -1"},
		{Config{StreamDSCP: 46}, "Config.StreamDSCP: 46 is not a code point"}, // a raw number, not dscp.FromCode(46)
		{Config{UpdateDSCP: 0xff}, "Config.UpdateDSCP: 255 is not a code point"},
		{Config{IdleTimeout: -time.Second}, "Config.IdleTimeout: -1s"},
		{Config{HandshakeTimeout: -time.Second}, "Config.HandshakeTimeout: -1s"},
		{Config{KeyUpdateInterval: -1}, "Config.KeyUpdateInterval: -1 is negative"},
	} {
		_, err := testConfig(tc.cfg).withDefaults()
		require.ErrorIs(t, err, ErrInvalidConfig, "%+v", tc.cfg)
		require.ErrorContains(t, err, tc.want)
		_, err = Listen("127.0.0.1:0", tc.cfg)
		require.ErrorIs(t, err, ErrInvalidConfig, "Listen fails at once")
	}
}

// Secure by default: without TLS credentials an endpoint refuses to start
// unless plaintext is asked for by name, and the error says how.
func TestTLSOrInsecureRequired(t *testing.T) {
	_, err := Listen("127.0.0.1:0", Config{})
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.Contains(t, err.Error(), "Config.TLS")
	require.Contains(t, err.Error(), "Insecure")
	_, err = Dial(t.Context(), "127.0.0.1:9", Config{})
	require.ErrorIs(t, err, ErrInvalidConfig)
	_, err = Listen("127.0.0.1:0", testConfig(Config{Insecure: true, TLS: testConfig(Config{}).TLS}))
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.Contains(t, err.Error(), "choose one")
}

// An end with TLS and an end without fail at once with an error that says
// so, whichever side is which.
func TestTLSAndPlaintextPeersFailClearly(t *testing.T) {
	for _, tc := range []struct {
		name     string
		srv, cli Config
	}{
		{"plaintext client", testConfig(Config{}), Config{Insecure: true}},
		{"plaintext server", Config{Insecure: true}, testConfig(Config{})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Listen("127.0.0.1:0", tc.srv)
			require.NoError(t, err)
			defer l.Close()
			start := time.Now()
			_, err = Dial(t.Context(), l.Addr().String(), tc.cli)
			require.ErrorIs(t, err, ErrHandshake)
			require.Contains(t, err.Error(), "without")
			require.Less(t, time.Since(start), 5*time.Second, "must not wait for the handshake timeout")
		})
	}
}

// countingCache counts the session tickets crypto/tls stores in it.
type countingCache struct {
	tls.ClientSessionCache
	tickets atomic.Int32
}

func (c *countingCache) Put(key string, cs *tls.ClientSessionState) {
	if cs != nil {
		c.tickets.Add(1)
	}
	c.ClientSessionCache.Put(key, cs)
}

// Session resumption works as crypto/tls has it: a dialer with a session
// cache resumes on its second connection (an abbreviated handshake, no
// certificate sent).
func TestTLSSessionResumption(t *testing.T) {
	l, err := Listen("127.0.0.1:0", testConfig(Config{}))
	require.NoError(t, err)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept(context.Background())
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	cli := testConfig(Config{})
	cache := &countingCache{ClientSessionCache: tls.NewLRUClientSessionCache(4)}
	cli.TLS.ClientSessionCache = cache
	var resumed []bool
	for i := range 2 {
		c, err := Dial(t.Context(), l.Addr().String(), cli)
		require.NoError(t, err)
		_, err = c.Write([]byte("hello"))
		require.NoError(t, err)
		if i == 0 { // the ticket follows the Accept: the second Dial needs it
			require.Eventually(t, func() bool { return cache.tickets.Load() > 0 }, 5*time.Second, time.Millisecond)
		}
		st, ok := c.ConnectionState()
		require.True(t, ok)
		resumed = append(resumed, st.DidResume)
		require.NoError(t, c.Close())
	}
	require.Equal(t, []bool{false, true}, resumed)
}

func TestDSCPDefaults(t *testing.T) {
	c, err := testConfig(Config{}).withDefaults()
	require.NoError(t, err)
	require.Equal(t, dscp.BestEffort, c.StreamDSCP, "stream default")
	require.Equal(t, dscp.CS7, c.UpdateDSCP, "update default")

	c, err = testConfig(Config{UpdateDSCP: dscp.BestEffort, StreamDSCP: dscp.AF12}).withDefaults()
	require.NoError(t, err)
	require.Equal(t, uint8(0), c.UpdateDSCP.Code(), "best effort set explicitly stays best effort")
	require.Equal(t, uint8(12), c.StreamDSCP.Code())
}
