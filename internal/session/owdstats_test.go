package session

import (
	"testing"
	"time"

	"github.com/fresh-udp/fresh/cc"

	"github.com/stretchr/testify/require"
)

func TestOWDStats(t *testing.T) {
	var o owdStats
	require.Zero(t, o.current())
	ms := func(v int) time.Duration { return time.Duration(v) * time.Millisecond }
	o.add(ms(1), false) // clocks not trusted yet: ignored
	require.Zero(t, o.min)
	for _, v := range []int{30, 25, 40, 50, 45, 60} {
		o.add(ms(v), true)
	}
	require.Equal(t, ms(25), o.min)
	require.Equal(t, ms(40), o.current(), "min of 40, 50, 45, 60")
}

// A controller without a delay analyzer (cubic) still gets the OWD columns
// of Stats from the ACKs' samples.
func TestStatsOWDWithCubic(t *testing.T) {
	cfg := Config{TrustPeerClock: true, NewController: func(mss cc.ByteCount) (cc.Controller, error) { return cc.New("cubic", mss) }}
	p := OpenPair(t, cfg, Link{Delay: 5 * time.Millisecond})
	p.Cli.out.write(make([]byte, 50_000))
	p.Run(200 * time.Millisecond)
	st := p.Cli.Stats(p.Now)
	require.Equal(t, "cubic", st.CC)
	require.Equal(t, 5*time.Millisecond, st.MinOWD, "the pair's one-way delay")
	require.Equal(t, 5*time.Millisecond, st.CurOWD)
}

// Stats carries the RTT estimator's variation: on a path whose RTT does
// not vary, RTTVAR falls from its first value, half the first sample
// (RFC 6298 §2.2), toward zero, while SRTT stays at the path's RTT.
func TestStatsRTTVar(t *testing.T) {
	p := OpenPair(t, Config{DisablePathMTUDiscovery: true}, Link{Delay: 10 * time.Millisecond})
	require.Zero(t, p.Cli.Stats(p.Now).RTTVar, "no sample yet")
	p.Cli.out.write(make([]byte, 1000))
	p.Run(100 * time.Millisecond)
	first := p.Cli.Stats(p.Now)
	require.Positive(t, first.RTTVar)
	require.LessOrEqual(t, first.RTTVar, first.SRTT/2)
	for range 20 {
		p.Cli.out.write(make([]byte, 1000))
		p.Run(100 * time.Millisecond)
	}
	st := p.Cli.Stats(p.Now)
	require.Less(t, st.RTTVar, first.RTTVar/2)
	require.InDelta(t, 20*time.Millisecond, st.SRTT, float64(2*time.Millisecond))
}
