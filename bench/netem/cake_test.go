package netem

import (
	"testing"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/stretchr/testify/require"
)

func dscpPkt(flow uint64, size int, dscp uint8) *Packet {
	return &Packet{FlowKey: flow, Size: size, DSCP: dscp}
}

func TestTinOf(t *testing.T) {
	tests := []struct {
		dscp uint8
		want Tin
	}{
		{56, TinVoice}, {48, TinVoice}, {46, TinVoice}, {44, TinVoice}, {40, TinVoice}, {32, TinVoice},
		{0, TinBestEffort}, {34, TinBestEffort}, {10, TinBestEffort}, {24, TinBestEffort},
		{8, TinBulk}, {1, TinBulk},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, TinOf(tc.dscp), "dscp %d", tc.dscp)
	}
}

// serveBytes plays a transmitter at rate: dequeue, wait the packet's
// serialization time, dequeue again, until n packets are out or the queue
// is empty. refill is called before each dequeue to keep flows backlogged.
func serveBytes(q Queue, rate cc.Bandwidth, start clock.Mono, n int, refill func(now clock.Mono)) (map[Tin]int, clock.Mono) {
	got := map[Tin]int{}
	now := start
	for i := 0; i < n; i++ {
		if refill != nil {
			refill(now)
		}
		p := q.Dequeue(now)
		if p == nil {
			break
		}
		got[TinOf(p.DSCP)] += p.Size
		now = now.Add(TxTime(p.Size, rate))
	}
	return got, now
}

func TestCakeServesCS7First(t *testing.T) {
	const rate = 10 * cc.MbitPerSecond
	q, err := NewCake(CakeConfig{Rate: rate}, nil)
	require.NoError(t, err)
	// Load: best effort and bulk flows backlogged for a while.
	for i := 0; i < 200; i++ {
		q.Enqueue(at(0), dscpPkt(uint64(i%4), 1500, 0))
		q.Enqueue(at(0), dscpPkt(uint64(10+i%2), 1500, 8))
	}
	_, now := serveBytes(q, rate, at(0), 50, nil)
	for _, dscp := range []uint8{56, 48, 46} {
		v := dscpPkt(99, 200, dscp)
		q.Enqueue(now, v)
		require.Same(t, v, q.Dequeue(now), "DSCP %d is served ahead of the backlog", dscp)
		now = now.Add(TxTime(200, rate))
		// Let the voice tin's threshold meter recover before the next.
		_, now = serveBytes(q, rate, now, 3, nil)
	}
}

// TestCakeVoiceThreshold: a saturating voice tin gets priority only up to
// its 25 % threshold; best effort keeps the rest.
func TestCakeVoiceThreshold(t *testing.T) {
	const rate = 10 * cc.MbitPerSecond
	q, err := NewCake(CakeConfig{Rate: rate, Limit: 100000, Target: noAQM, Interval: noAQM}, nil)
	require.NoError(t, err)
	for i := 0; i < 5000; i++ {
		q.Enqueue(at(0), dscpPkt(1, 1000, 56))
		q.Enqueue(at(0), dscpPkt(2, 1000, 0))
	}
	got, _ := serveBytes(q, rate, at(0), 4000, nil)
	total := float64(got[TinVoice] + got[TinBestEffort])
	require.InDelta(t, 0.25, float64(got[TinVoice])/total, 0.01, "%v", got)
}

// TestCakeBulkNotStarved: bulk (CS1) keeps its 1/16 share against a
// saturating best-effort tin, and no more.
func TestCakeBulkNotStarved(t *testing.T) {
	const rate = 10 * cc.MbitPerSecond
	q, err := NewCake(CakeConfig{Rate: rate, Limit: 100000, Target: noAQM, Interval: noAQM}, nil)
	require.NoError(t, err)
	for i := 0; i < 5000; i++ {
		q.Enqueue(at(0), dscpPkt(1, 1000, 8))
		q.Enqueue(at(0), dscpPkt(2, 1000, 0))
	}
	got, _ := serveBytes(q, rate, at(0), 4000, nil)
	total := float64(got[TinBulk] + got[TinBestEffort])
	require.InDelta(t, 1.0/16, float64(got[TinBulk])/total, 0.01, "%v", got)
}

// TestCakeAloneTinUsesTheLink: thresholds only matter under contention; a
// tin alone gets the whole link (the scheduler is work-conserving).
func TestCakeAloneTinUsesTheLink(t *testing.T) {
	const rate = 10 * cc.MbitPerSecond
	q, err := NewCake(CakeConfig{Rate: rate, Limit: 100000, Target: noAQM, Interval: noAQM}, nil)
	require.NoError(t, err)
	for i := 0; i < 100; i++ {
		q.Enqueue(at(0), dscpPkt(1, 1000, 8))
	}
	got, end := serveBytes(q, rate, at(0), 1000, nil)
	require.Equal(t, 100000, got[TinBulk])
	require.Equal(t, at(100*TxTime(1000, rate)), end)
}

func TestCakeOverflowAcrossTins(t *testing.T) {
	var d drops
	q, err := NewCake(CakeConfig{Rate: cc.MbitPerSecond, Limit: 5}, d.fn)
	require.NoError(t, err)
	fat := dscpPkt(1, 1500, 8) // bulk tin, the fattest flow
	q.Enqueue(at(0), fat)
	q.Enqueue(at(0), dscpPkt(1, 1500, 8))
	for i := 0; i < 3; i++ {
		q.Enqueue(at(0), dscpPkt(2, 100, 56))
	}
	q.Enqueue(at(0), dscpPkt(3, 100, 0))
	require.Len(t, d.pkts, 1)
	require.Same(t, fat, d.pkts[0])
	require.Equal(t, 5, q.Len())
	require.Equal(t, 1500+4*100, q.Bytes())
	require.Equal(t, 1, q.TinLen(TinBulk))
}

func TestCakeLowRateTargetTuning(t *testing.T) {
	q, err := NewCake(CakeConfig{Rate: 100 * cc.MbitPerSecond}, nil)
	require.NoError(t, err)
	target, interval := q.Params(TinBestEffort)
	require.Equal(t, DefaultTarget, target)
	require.Equal(t, DefaultInterval, interval)
	// At 1.5 Mbit/s, 1.5 MTU takes 12.1 ms > 5 ms.
	q.SetRate(1500 * cc.KbitPerSecond)
	target, interval = q.Params(TinBestEffort)
	want := time.Duration(1.5 * 1514 * 8 * 1e9 / 1.5e6)
	require.Equal(t, want, target)
	require.Equal(t, DefaultInterval+want-DefaultTarget, interval)
	vt, _ := q.Params(TinVoice)
	require.Equal(t, 4*want, vt, "voice tunes at its 25 % threshold rate")
}

func TestCakeConfigErrors(t *testing.T) {
	_, err := NewCake(CakeConfig{}, nil)
	require.ErrorIs(t, err, ErrInvalidConfig)
	_, err = NewCake(CakeConfig{Rate: 1, Flows: -1}, nil)
	require.ErrorIs(t, err, ErrInvalidConfig)
}
