package session

import (
	"errors"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/acp"
	"github.com/fresh-udp/fresh/cc"
)

// A monitor holds a Session per device: it must stay in the allocator's
// 2 KiB size class. Go puts an 8-byte type header before every object
// larger than 512 bytes that holds pointers, so the struct may take 2040
// bytes; 2041 would cost the 2304-byte class, 256 bytes more per
// connection. What a connection needs only once it exchanges data lives
// behind pointers allocated on first use (ackRing, ackSamples, the
// receive ring, the clock estimator).
func TestSessionFitsTwoKiB(t *testing.T) {
	require.LessOrEqual(t, unsafe.Sizeof(Session{})+8, uintptr(2048), "Session is %d bytes", unsafe.Sizeof(Session{}))
}

// A session's TLS side, likewise in the 896-byte class.
func TestSecurityFitsSizeClass(t *testing.T) {
	require.LessOrEqual(t, unsafe.Sizeof(security{})+8, uintptr(896), "security is %d bytes", unsafe.Sizeof(security{}))
}

// With Config.UpdatePolicy the update regulator is built by the first
// SendUpdate: a monitor's session, which only receives updates, never
// holds one (1.5 KiB of ACP state), yet its Stats report the rate a fresh
// one would start at. A NewUpdatePolicy that fails all the same fails that
// SendUpdate with a configuration error.
func TestPolicyBuiltWithFirstUpdate(t *testing.T) {
	named := func(c Config) Config {
		c.UpdatePolicy = acp.PolicyACP
		c.NewUpdatePolicy = func(size cc.ByteCount) (acp.Policy, error) { return acp.NewRegulator(acp.Config{UpdateSize: size}) }
		return c
	}
	p := NewPair(t, named(secure(t)), named(secure(t)), Link{})
	p.Open()
	for range 5 {
		require.NoError(t, p.Cli.SendUpdate(p.Now, p.Wall(p.Cli), []byte("reading")))
		p.Run(100 * time.Millisecond)
	}
	require.Positive(t, p.Srv.Stats(p.Now).UpdatesReceived)
	require.Nil(t, p.Srv.policy, "the receiving end built no regulator")
	require.NotNil(t, p.Cli.policy)
	require.Positive(t, p.Srv.Stats(p.Now).UpdateRate)
	require.Nil(t, p.Srv.policy, "nor did its Stats")

	bad := Config{UpdatePolicy: "broken", NewUpdatePolicy: func(cc.ByteCount) (acp.Policy, error) { return nil, errors.New("no") }}
	s, err := New(bad, 1, true, 0)
	require.NoError(t, err)
	require.ErrorIs(t, s.SendUpdate(0, 0, []byte("x")), ErrInvalidConfig)
}
