package cc

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// H-TCP's α(Δ) grows without bound with the time since the last congestion
// event; an ACK after a long quiet stretch still adds at most the bytes it
// acknowledges.
func TestHTCPIncreaseCappedAtSlowStart(t *testing.T) {
	c := NewHTCP(HTCPConfig{MSS: testMSS})
	h := newHarness(t, c, testMSS)
	h.sendWindow()
	h.lose(1) // a congestion event: congestion avoidance from here
	h.ackAll(testRTT)
	h.sendWindow()
	h.advance(30 * time.Minute) // α(Δ) ≈ 8·10^5
	before := c.Window()
	h.ackFull(testRTT)
	require.LessOrEqual(t, c.Window(), before+testMSS, "at most the bytes acknowledged")
	require.Greater(t, c.Window(), before, "but it still grows")
}
