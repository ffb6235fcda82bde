package transport

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/acp"
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/internal/session"
)

func TestUpdatePolicyByNameOrHook(t *testing.T) {
	for _, name := range []string{"acp", "acp-literal", "lazy"} {
		cfg, err := testConfig(Config{UpdatePolicy: name}).withDefaults()
		require.NoError(t, err)
		_, err = newPolicy(&cfg)
		require.NoError(t, err, name)
	}
	_, err := testConfig(Config{UpdatePolicy: "fastest"}).withDefaults()
	require.ErrorIs(t, err, ErrInvalidConfig, "unknown names fail in the config")
	cfg := testConfig(Config{UpdatePolicy: "fastest"})
	_, err = newPolicy(&cfg)
	require.ErrorIs(t, err, ErrInvalidConfig, "and when a session builds it")

	// The hook wins over the name and gets the datagram size.
	var gotSize cc.ByteCount
	cfg, err = testConfig(Config{UpdatePolicy: "lazy", MaxDatagram: 900, NewUpdatePolicy: func(size cc.ByteCount) (acp.Policy, error) {
		gotSize = size
		return acp.NewFixed(25, acp.Config{UpdateSize: size})
	}}).withDefaults()
	require.NoError(t, err)
	p, err := newPolicy(&cfg)
	require.NoError(t, err)
	require.Equal(t, cc.ByteCount(900), gotSize)
	p.OnUpdateSent(0, 1, 0)
	require.Equal(t, 40*time.Millisecond, time.Duration(p.NextSendTime()), "25 Hz")

	// Its failures are configuration errors.
	for _, hook := range []func(cc.ByteCount) (acp.Policy, error){
		func(cc.ByteCount) (acp.Policy, error) { return nil, errors.New("no") },
		func(cc.ByteCount) (acp.Policy, error) { return nil, nil },
	} {
		cfg.NewUpdatePolicy = hook
		_, err = newPolicy(&cfg)
		require.ErrorIs(t, err, ErrInvalidConfig)
	}
}

// newPolicy builds the update policy a session of cfg would run.
func newPolicy(cfg *Config) (acp.Policy, error) {
	s, err := session.New(cfg.sessionConfig(), 1, false, 0)
	if err != nil {
		return nil, err
	}
	defer s.Abort(ErrClosed) // ends its TLS handshake goroutine
	return s.BuildPolicy()   // a session builds a named one with its first update
}

// An update policy's name is not a congestion controller: Config{CC:
// "lazy"} once passed validation and ran the stream with a 2^40-byte
// window. It fails at Listen and Dial with ErrInvalidConfig and says what to do.
func TestUpdatePolicyNameAsCCFails(t *testing.T) {
	for _, name := range acp.PolicyNames() {
		_, err := Listen("127.0.0.1:0", testConfig(Config{CC: name}))
		require.ErrorIs(t, err, ErrInvalidConfig, name)
		require.ErrorContains(t, err, "is an update policy")
		_, err = Dial(t.Context(), "127.0.0.1:9", testConfig(Config{CC: name}))
		require.ErrorIs(t, err, ErrInvalidConfig, name)
	}
}
