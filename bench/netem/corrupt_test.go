package netem

import (
	"bytes"
	"math/bits"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// corruptPattern sends n packets of 100 zero bytes (spaced out, so the
// queue never overflows) and returns, per packet, how many bits arrived
// flipped (-1: lost), checking that Corrupted says the same.
func corruptPattern(t *testing.T, cfg LinkConfig, n int) []int {
	t.Helper()
	flipped := make([]int, n)
	l := newLink(t, cfg, func(_ clock.Mono, p *Packet, _ DropReason) { flipped[p.FlowKey] = -1 })
	for i := range n {
		now := at(time.Duration(i) * time.Millisecond)
		p := pkt(uint64(i), 100)
		p.Data = make([]byte, 100)
		l.Enqueue(now, p)
		for q := l.Poll(now); q != nil; q = l.Poll(now) {
			k := 0
			for _, b := range q.Data {
				k += bits.OnesCount8(b)
			}
			require.Equal(t, k > 0, q.Corrupted, "packet %d: Corrupted says whether a bit was flipped", q.FlowKey)
			flipped[q.FlowKey] = k
		}
	}
	return flipped
}

// Corrupt flips exactly one bit of a packet's Data with its probability,
// counts it, is reproducible from the seed, and has its own random
// streams: turning it on changes neither which packets are lost nor when
// any arrives.
func TestLinkCorruptBernoulli(t *testing.T) {
	const n = 50000
	cfg := LinkConfig{Rate: 100 * cc.MbitPerSecond, Corrupt: 0.05, Loss: 0.02, Seed: 42}
	got := corruptPattern(t, cfg, n)
	corrupted, lost := 0, 0
	for _, k := range got {
		switch {
		case k < 0:
			lost++
		case k > 0:
			require.Equal(t, 1, k, "one bit flipped")
			corrupted++
		}
	}
	require.InEpsilon(t, 0.05, float64(corrupted)/float64(n-lost), 0.06)
	require.Equal(t, got, corruptPattern(t, cfg, n), "same seed, same corruption")

	// The same losses with corruption off.
	noCorrupt := cfg
	noCorrupt.Corrupt = 0
	for i, k := range corruptPattern(t, noCorrupt, n) {
		require.Equal(t, got[i] < 0, k < 0, "packet %d: corruption changed the loss pattern", i)
		require.False(t, k > 0)
	}

	l := newLink(t, LinkConfig{Rate: 100 * cc.MbitPerSecond, Corrupt: 1, Seed: 1}, nil)
	data := bytes.Repeat([]byte{0xAA}, 64)
	p := &Packet{Size: 100, Data: bytes.Clone(data)}
	l.Enqueue(at(0), p)
	require.Same(t, p, l.Poll(at(time.Second)))
	require.True(t, p.Corrupted)
	require.NotEqual(t, data, p.Data)
	require.Equal(t, uint64(1), l.Stats().Corrupted)

	// A packet without Data is counted, and nothing else happens to it.
	q := &Packet{Size: 100}
	l.Enqueue(at(time.Second), q)
	require.Same(t, q, l.Poll(at(2*time.Second)))
	require.True(t, q.Corrupted)
	require.Equal(t, uint64(2), l.Stats().Corrupted)
}

// CorruptGE corrupts in bursts: with loss_good 0 and loss_bad 1 (Gilbert's
// model) runs of corrupted packets average 1/R, and P/(P+R) of the packets
// are corrupted: the interop runner's "30 % with bursts of 3" is P = 1/7,
// R = 1/3.
func TestLinkCorruptGilbertElliottBursts(t *testing.T) {
	const n = 200000
	ge := &GilbertElliott{P: 1.0 / 7, R: 1.0 / 3, LossBad: 1}
	got := corruptPattern(t, LinkConfig{Rate: 100 * cc.MbitPerSecond, CorruptGE: ge, Seed: 5}, n)
	bursts, in := 0, 0
	for i, k := range got {
		require.GreaterOrEqual(t, k, 0, "nothing lost")
		if k > 0 {
			in++
			if i == 0 || got[i-1] == 0 {
				bursts++
			}
		}
	}
	require.InEpsilon(t, 0.3, float64(in)/n, 0.05, "corrupted share")
	require.InEpsilon(t, 3.0, float64(in)/float64(bursts), 0.05, "mean burst length")
}

func TestLinkCorruptConfig(t *testing.T) {
	for _, cfg := range []LinkConfig{
		{Rate: cc.MbitPerSecond, Corrupt: 1.5},
		{Rate: cc.MbitPerSecond, Corrupt: -0.1},
		{Rate: cc.MbitPerSecond, CorruptGE: &GilbertElliott{P: 2}},
	} {
		_, err := NewLink(cfg, nil)
		require.ErrorIs(t, err, ErrInvalidConfig, "%+v", cfg)
	}
	s, err := scenario.Parse([]byte(`{"name":"x","duration":"10s","flows":[{"kind":"bulk"}],
		"forward":{"rate":"1Mbps","corrupt":0.02,"corrupt_gilbert_elliott":{"p":0.1,"r":0.5,"loss_bad":1}},
		"reverse":{"rate":"1Mbps"}}`))
	require.NoError(t, err)
	cfg := LinkConfigFromPath(s.Forward, 7)
	require.Equal(t, 0.02, cfg.Corrupt)
	require.Equal(t, &GilbertElliott{P: 0.1, R: 0.5, LossBad: 1}, cfg.CorruptGE)
	l, err := NewLink(cfg, nil)
	require.NoError(t, err)
	c := l.Config()
	c.CorruptGE.P = 0.9
	require.Equal(t, 0.1, l.Config().CorruptGE.P, "Config returns a copy")
	_, err = scenario.Parse([]byte(`{"name":"x","duration":"10s","flows":[{"kind":"bulk"}],
		"forward":{"rate":"1Mbps","corrupt":2},"reverse":{"rate":"1Mbps"}}`))
	require.ErrorContains(t, err, "corrupt 2 outside 0..1")
	_, err = scenario.Parse([]byte(`{"name":"x","duration":"10s","flows":[{"kind":"bulk"}],
		"forward":{"rate":"1Mbps","corrupt_gilbert_elliott":{"p":2,"r":0.5,"loss_bad":1}},"reverse":{"rate":"1Mbps"}}`))
	require.ErrorContains(t, err, "corrupt_gilbert_elliott probabilities")
}

// With Length the bad spells are exactly Length packets: Gilbert's model
// (loss_good 0, loss_bad 1) with Length 3 hits runs of exactly 3, and
// 3P/(3P+1) = 30 % of the packets with P = 1/7, for loss and corruption
// alike.
func TestLinkGilbertElliottFixedLength(t *testing.T) {
	const n = 200000
	ge := &GilbertElliott{P: 1.0 / 7, LossBad: 1, Length: 3}
	for _, tc := range []struct {
		name string
		hit  func() []bool
	}{
		{"loss", func() []bool { return lossPattern(t, LinkConfig{Rate: 100 * cc.MbitPerSecond, GE: ge, Seed: 9}, n) }},
		{"corruption", func() []bool {
			k := corruptPattern(t, LinkConfig{Rate: 100 * cc.MbitPerSecond, CorruptGE: ge, Seed: 9}, n)
			b := make([]bool, n)
			for i, v := range k {
				b[i] = v > 0
			}
			return b
		}},
	} {
		hits := tc.hit()
		runs, in, run := map[int]int{}, 0, 0
		for _, v := range append(hits, false) {
			if v {
				run++
				in++
				continue
			}
			if run > 0 {
				runs[run]++
			}
			run = 0
		}
		require.Len(t, runs, 1, "%s: every run is 3 long: %v", tc.name, runs)
		require.Positive(t, runs[3], tc.name)
		require.InEpsilon(t, 0.3, float64(in)/n, 0.03, "%s: share hit", tc.name)
	}
	_, err := NewLink(LinkConfig{Rate: cc.MbitPerSecond, GE: &GilbertElliott{P: 0.1, LossBad: 1, Length: -1}}, nil)
	require.ErrorIs(t, err, ErrInvalidConfig)
}
