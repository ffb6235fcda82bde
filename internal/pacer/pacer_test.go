package pacer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

const ms = time.Millisecond

// At 8 Mbit/s a 1000-byte datagram takes 1 ms: a sender that keeps up is
// held to one per millisecond.
func TestPacerSpacesAtTheRate(t *testing.T) {
	clk := clock.NewManual(time.Unix(0, 0))
	clk.Advance(time.Second)
	var p Pacer
	require.True(t, p.Ready(clk.Now()), "the zero pacer lets the first datagram go")
	p.OnSent(clk.Now(), 1000, 8*cc.MbitPerSecond)
	// The burst credit: a fresh pacer counts as 2 ms late, so the first
	// datagrams go back to back until the credit is spent.
	sent := 1
	for p.Ready(clk.Now()) {
		p.OnSent(clk.Now(), 1000, 8*cc.MbitPerSecond)
		sent++
	}
	require.Equal(t, 3, sent, "1 datagram plus 2 ms of credit")
	for range 10 {
		require.False(t, p.Ready(clk.Now()))
		require.Equal(t, time.Duration(p.Next()-clk.Now()), ms, "the next one 1 ms on")
		clk.Advance(ms)
		require.True(t, p.Ready(clk.Now()))
		p.OnSent(clk.Now(), 1000, 8*cc.MbitPerSecond)
	}
}

// A sender idle for a second catches up by Burst worth of datagrams, not
// by a second's worth.
func TestPacerBoundsTheCatchUp(t *testing.T) {
	clk := clock.NewManual(time.Unix(0, 0))
	var p Pacer
	p.OnSent(clk.Now(), 1000, 8*cc.MbitPerSecond)
	clk.Advance(time.Second)
	sent := 0
	for p.Ready(clk.Now()) {
		p.OnSent(clk.Now(), 1000, 8*cc.MbitPerSecond)
		sent++
	}
	require.Equal(t, int(Burst/ms)+1, sent)
}

// Without a pacing rate nothing is held back, and a rate that appears
// later starts from now, not from a stale deadline.
func TestPacerUnpacedAndRateChange(t *testing.T) {
	clk := clock.NewManual(time.Unix(0, 0))
	var p Pacer
	for range 100 {
		require.True(t, p.Ready(clk.Now()))
		p.OnSent(clk.Now(), 1500, 0)
	}
	clk.Advance(10 * ms)
	p.OnSent(clk.Now(), 1000, 1*cc.MbitPerSecond) // 8 ms per datagram
	require.False(t, p.Ready(clk.Now()))
	require.Equal(t, 6*ms, time.Duration(p.Next()-clk.Now()), "8 ms less the 2 ms of credit")
}
