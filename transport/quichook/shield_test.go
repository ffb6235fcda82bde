package quichook

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A sequence number may run at most seqWindow ahead of the largest one
// received; the first from a peer may be anything (a forgotten peer
// resumes its own numbering).
func TestReceiverSequenceWindow(t *testing.T) {
	r, err := newReceiver()
	require.NoError(t, err)
	require.True(t, r.inWindow(1<<40), "the first sets where the numbers are")
	cfg, err := Config{}.withDefaults()
	require.NoError(t, err)
	r.onData(0, 0, &dataHeader{seq: 1000}, &cfg)
	require.True(t, r.inWindow(0), "old ones are only duplicates or reordered")
	require.True(t, r.inWindow(1000+seqWindow))
	require.False(t, r.inWindow(1000+seqWindow+1))
	require.False(t, r.inWindow(1<<62))
}

// Replies to an address that has not shown the cookie stay within three
// times the bytes it sent; a validated one has no limit.
func TestRepliesToUnvalidatedAddressesWithinThreeTimes(t *testing.T) {
	c := &PacketConn{}
	p := &peer{rxBytes: helloLen}
	require.True(t, c.replyAllowed(p, helloEchoLen))
	require.False(t, c.replyAllowed(p, helloEchoLen), "22 + 22 > 3 × 14")
	require.Equal(t, int64(1), c.st.amplificationLimited)
	p.rxBytes += helloLen
	require.True(t, c.replyAllowed(p, helloEchoLen), "44 ≤ 3 × 28")
	require.LessOrEqual(t, p.txBytes, 3*p.rxBytes)
	p.validated = true
	for range 10 {
		require.True(t, c.replyAllowed(p, maxFeedbackLen))
	}
}
