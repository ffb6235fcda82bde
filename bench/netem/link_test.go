package netem

import (
	"testing"
	"time"

	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/bench/traces"
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/stretchr/testify/require"
)

func newLink(t *testing.T, cfg LinkConfig, onDrop DropFunc) *Link {
	t.Helper()
	l, err := NewLink(cfg, onDrop)
	require.NoError(t, err)
	return l
}

func TestLinkSerializationAndDelayExact(t *testing.T) {
	l := newLink(t, LinkConfig{Rate: 1200 * cc.KbitPerSecond, Delay: 50 * time.Millisecond}, nil)
	t0 := at(time.Second)
	p := pkt(1, 1500)
	l.Enqueue(t0, p)
	next, ok := l.NextEvent()
	require.True(t, ok)
	require.Equal(t, t0.Add(10*time.Millisecond), next, "1500 B at 1.2 Mbit/s take 10 ms")
	require.Nil(t, l.Poll(t0.Add(60*time.Millisecond-1)))
	next, ok = l.NextEvent()
	require.True(t, ok)
	require.Equal(t, t0.Add(60*time.Millisecond), next)
	require.Same(t, p, l.Poll(t0.Add(60*time.Millisecond)))
	require.Equal(t, t0.Add(60*time.Millisecond), p.ArrivedAt)
	require.Zero(t, p.QueueDelay)
	_, ok = l.NextEvent()
	require.False(t, ok)
	require.Nil(t, l.Poll(t0.Add(time.Hour)))
}

func TestLinkBackToBack(t *testing.T) {
	l := newLink(t, LinkConfig{Rate: 1200 * cc.KbitPerSecond, Delay: 50 * time.Millisecond}, nil)
	var ps []*Packet
	for i := 0; i < 5; i++ {
		p := pkt(uint64(i), 1500)
		ps = append(ps, p)
		l.Enqueue(at(0), p)
	}
	require.Equal(t, 4, l.Stats().MaxBacklog, "one is on the wire, four wait")
	// Poll late, once: arrival times are still exact.
	for i, p := range ps {
		require.Same(t, p, l.Poll(at(time.Second)))
		require.Equal(t, at(time.Duration(i+1)*10*time.Millisecond+50*time.Millisecond), p.ArrivedAt, "packet %d", i)
		require.Equal(t, time.Duration(i)*10*time.Millisecond, p.QueueDelay, "packet %d", i)
	}
	require.Nil(t, l.Poll(at(time.Second)))
	s := l.Stats()
	require.Equal(t, uint64(5), s.Enqueued)
	require.Equal(t, uint64(5), s.Delivered)
	require.Equal(t, uint64(7500), s.DeliveredBytes)
	require.Equal(t, 50*time.Millisecond, s.BusyTime)
}

func TestTxTime(t *testing.T) {
	require.Equal(t, 10*time.Millisecond, TxTime(1500, 1200*cc.KbitPerSecond))
	require.Equal(t, 12*time.Microsecond, TxTime(1500, 1000*cc.MbitPerSecond))
	require.Equal(t, time.Duration(2667), TxTime(1, 3*cc.MbitPerSecond), "rounded up")
	require.Zero(t, TxTime(0, cc.MbitPerSecond))
}

func TestLinkJitterNeverReorders(t *testing.T) {
	const jitter = 20 * time.Millisecond
	l := newLink(t, LinkConfig{Rate: 100 * cc.MbitPerSecond, Delay: 10 * time.Millisecond, Jitter: jitter, Seed: 3}, nil)
	const n = 20000
	var maxExtra time.Duration
	var prev clock.Mono
	got := 0
	for i := 0; i < n; i++ {
		now := at(time.Duration(i) * 200 * time.Microsecond)
		l.Enqueue(now, pkt(uint64(i), 1000))
		for p := l.Poll(now); p != nil; p = l.Poll(now) {
			require.Equal(t, uint64(got), p.FlowKey, "in order")
			require.GreaterOrEqual(t, p.ArrivedAt, prev)
			prev = p.ArrivedAt
			// Enqueued on an idle link: serialized at once.
			extra := p.ArrivedAt.Sub(p.EnqueuedAt) - TxTime(1000, 100*cc.MbitPerSecond) - 10*time.Millisecond
			require.GreaterOrEqual(t, extra, time.Duration(0))
			maxExtra = max(maxExtra, extra)
			got++
		}
	}
	require.Greater(t, got, n-200)
	require.Greater(t, maxExtra, jitter*9/10, "jitter is applied")
}

func TestLinkJitterUniform(t *testing.T) {
	// Packets spaced wider than the jitter bound: no packet is held back
	// by its predecessor, so the extra delay is the drawn jitter itself.
	const jitter = 10 * time.Millisecond
	l := newLink(t, LinkConfig{Rate: 100 * cc.MbitPerSecond, Jitter: jitter, Seed: 9}, nil)
	var sum time.Duration
	const n = 5000
	for i := 0; i < n; i++ {
		now := at(time.Duration(i) * 20 * time.Millisecond)
		p := pkt(0, 1000)
		l.Enqueue(now, p)
		require.Same(t, p, l.Poll(now.Add(time.Second/50-1)))
		extra := p.ArrivedAt.Sub(now) - TxTime(1000, 100*cc.MbitPerSecond)
		require.True(t, extra >= 0 && extra <= jitter)
		sum += extra
	}
	require.InEpsilon(t, float64(jitter/2), float64(sum/n), 0.05)
}

// lossPattern sends n packets (spaced out, so the queue never overflows)
// and returns which were lost.
func lossPattern(t *testing.T, cfg LinkConfig, n int) []bool {
	t.Helper()
	lost := make([]bool, n)
	l := newLink(t, cfg, func(_ clock.Mono, p *Packet, why DropReason) {
		require.Equal(t, DropRandom, why)
		lost[p.FlowKey] = true
	})
	for i := 0; i < n; i++ {
		now := at(time.Duration(i) * time.Millisecond)
		l.Enqueue(now, pkt(uint64(i), 100))
		for l.Poll(now) != nil {
		}
	}
	return lost
}

func countTrue(b []bool) int {
	n := 0
	for _, v := range b {
		if v {
			n++
		}
	}
	return n
}

func TestLinkBernoulliLoss(t *testing.T) {
	const n = 100000
	cfg := LinkConfig{Rate: 100 * cc.MbitPerSecond, Loss: 0.05, Seed: 42}
	a := lossPattern(t, cfg, n)
	require.InEpsilon(t, 0.05, float64(countTrue(a))/n, 0.05)
	require.Equal(t, a, lossPattern(t, cfg, n), "same seed, same drops")
	cfg.Seed = 43
	require.NotEqual(t, a, lossPattern(t, cfg, n), "another seed, other drops")
	// Jitter has its own random stream: turning it on keeps the drops.
	cfg.Seed, cfg.Jitter = 42, 5*time.Millisecond
	require.Equal(t, a, lossPattern(t, cfg, n))
}

func TestLinkGilbertElliottBursts(t *testing.T) {
	const n = 400000
	ge := &GilbertElliott{P: 0.01, R: 0.25, LossBad: 1}
	lost := lossPattern(t, LinkConfig{Rate: 100 * cc.MbitPerSecond, GE: ge, Seed: 5}, n)
	bursts, inBurst := 0, 0
	for i, v := range lost {
		if v {
			inBurst++
			if i == 0 || !lost[i-1] {
				bursts++
			}
		}
	}
	require.Greater(t, bursts, 1000)
	mean := float64(inBurst) / float64(bursts)
	require.InEpsilon(t, 1/ge.R, mean, 0.08, "mean burst length %.2f", mean)
	// Stationary loss rate P/(P+R).
	require.InEpsilon(t, ge.P/(ge.P+ge.R), float64(inBurst)/n, 0.08)
	// Bernoulli at the same mean rate gives far shorter bursts.
	bern := lossPattern(t, LinkConfig{Rate: 100 * cc.MbitPerSecond, Loss: ge.P / (ge.P + ge.R), Seed: 5}, n)
	bb, bl := 0, 0
	for i, v := range bern {
		if v {
			bl++
			if i == 0 || !bern[i-1] {
				bb++
			}
		}
	}
	require.Less(t, float64(bl)/float64(bb), 1.2)
}

func TestLinkSetRateAndDelay(t *testing.T) {
	l := newLink(t, LinkConfig{Rate: 1200 * cc.KbitPerSecond, Delay: 50 * time.Millisecond}, nil)
	a, b, c := pkt(1, 1500), pkt(2, 1500), pkt(3, 1500)
	l.Enqueue(at(0), a)
	l.Enqueue(at(0), b)
	// Halfway through a, the rate doubles and the delay drops to 20 ms.
	// a finishes serializing at the old rate (at 10 ms) and, leaving the
	// transmitter after the change, takes the new delay; b is serialized
	// at the new rate (5 ms).
	require.NoError(t, l.SetRate(at(5*time.Millisecond), 2400*cc.KbitPerSecond))
	require.NoError(t, l.SetDelay(at(5*time.Millisecond), 20*time.Millisecond))
	require.Same(t, a, l.Poll(at(time.Second)))
	require.Equal(t, at(30*time.Millisecond), a.ArrivedAt)
	require.Same(t, b, l.Poll(at(time.Second)))
	require.Equal(t, at(35*time.Millisecond), b.ArrivedAt)
	// A packet on the delay line keeps its delay when the delay grows.
	l.Enqueue(at(2*time.Second), c)
	require.NoError(t, l.SetDelay(at(2*time.Second+6*time.Millisecond), 100*time.Millisecond))
	require.Same(t, c, l.Poll(at(3*time.Second)))
	require.Equal(t, at(2*time.Second+25*time.Millisecond), c.ArrivedAt)
	// A shorter delay does not let a later packet overtake.
	d, e := pkt(4, 1500), pkt(5, 1500)
	l.Enqueue(at(4*time.Second), d) // leaves at +5 ms, arrives at +105 ms
	require.NoError(t, l.SetDelay(at(4*time.Second+5*time.Millisecond), time.Millisecond))
	l.Enqueue(at(4*time.Second+5*time.Millisecond), e) // would arrive at +11 ms
	require.Same(t, d, l.Poll(at(5*time.Second)))
	require.Same(t, e, l.Poll(at(5*time.Second)))
	require.Equal(t, d.ArrivedAt, e.ArrivedAt)
	require.Equal(t, at(4*time.Second+105*time.Millisecond), e.ArrivedAt)
	require.Error(t, l.SetRate(at(6*time.Second), 0))
	require.Error(t, l.SetDelay(at(6*time.Second), -1))
	require.Error(t, l.SetJitter(at(6*time.Second), -1))
	require.Error(t, l.SetLoss(at(6*time.Second), 1.5))
}

func TestLinkApplyChange(t *testing.T) {
	l := newLink(t, LinkConfig{Rate: cc.MbitPerSecond, Delay: 50 * time.Millisecond, Queue: QueueConfig{Discipline: DisciplineCake}}, nil)
	rate := scenario.Rate(3 * cc.MbitPerSecond)
	delay := scenario.Duration(10 * time.Millisecond)
	loss := 0.5
	require.NoError(t, l.ApplyChange(at(0), scenario.PathChange{Rate: &rate, Delay: &delay, Loss: &loss}))
	cfg := l.Config()
	require.Equal(t, 3*cc.MbitPerSecond, cfg.Rate)
	require.Equal(t, 10*time.Millisecond, cfg.Delay)
	require.Equal(t, 0.5, cfg.Loss)
	bad := 2.0
	require.ErrorIs(t, l.ApplyChange(at(0), scenario.PathChange{Rate: &rate, Loss: &bad}), ErrInvalidConfig)
	require.Equal(t, 0.5, l.Config().Loss, "nothing changed")
}

func TestLinkBusyTime(t *testing.T) {
	l := newLink(t, LinkConfig{Rate: 1200 * cc.KbitPerSecond}, nil)
	for i := 0; i < 10; i++ {
		now := at(time.Duration(i) * 20 * time.Millisecond)
		l.Enqueue(now, pkt(0, 1500))
		for l.Poll(now) != nil {
		}
	}
	// The 10th packet started at 180 ms; at 184 ms it has been on the
	// wire for 4 ms.
	l.Poll(at(184 * time.Millisecond))
	require.Equal(t, 94*time.Millisecond, l.Stats().BusyTime)
	l.Poll(at(200 * time.Millisecond))
	s := l.Stats()
	require.Equal(t, 100*time.Millisecond, s.BusyTime, "10 × 10 ms")
	require.InDelta(t, 0.5, float64(s.BusyTime)/float64(200*time.Millisecond), 1e-9)
}

// drive runs traffic through a fresh link, calling the link either at
// every event (NextEvent) or only at the coarse instants given, and records
// what came out and what was dropped.
type trace struct {
	delivered []Packet
	dropped   []Packet
	reasons   []DropReason
	stats     LinkStats
}

func drive(t *testing.T, cfg LinkConfig, arrivals []*Packet, times []clock.Mono, stepEvents bool, coarse time.Duration) trace {
	t.Helper()
	var tr trace
	l := newLink(t, cfg, func(_ clock.Mono, p *Packet, why DropReason) {
		tr.dropped = append(tr.dropped, *p)
		tr.reasons = append(tr.reasons, why)
	})
	drain := func(now clock.Mono) {
		for p := l.Poll(now); p != nil; p = l.Poll(now) {
			require.LessOrEqual(t, p.ArrivedAt, now)
			tr.delivered = append(tr.delivered, *p)
		}
	}
	next := 0
	end := times[len(times)-1].Add(10 * time.Second)
	for now := times[0]; ; {
		for next < len(arrivals) && times[next] == now {
			l.Enqueue(now, arrivals[next])
			next++
		}
		drain(now)
		// The next instant to call the link.
		var cand []clock.Mono
		if next < len(arrivals) {
			cand = append(cand, times[next])
		}
		if ev, ok := l.NextEvent(); ok {
			if stepEvents {
				cand = append(cand, ev)
			} else {
				cand = append(cand, now.Add(coarse))
			}
		}
		if len(cand) == 0 || now > end {
			break
		}
		n := cand[0]
		for _, c := range cand[1:] {
			n = min(n, c)
		}
		require.GreaterOrEqual(t, n, now)
		now = n
	}
	// Stats at one instant for every call pattern: a trace link's busy
	// time is a share of the elapsed time, idle or not.
	for p := l.Poll(end.Add(time.Minute)); p != nil; p = l.Poll(end.Add(time.Minute)) {
		tr.delivered = append(tr.delivered, *p)
	}
	tr.stats = l.Stats()
	return tr
}

// TestLinkExactWhateverTheCallPattern: the same arrivals give the same
// deliveries (times, queue delays), drops and stats whether the driver
// steps through every NextEvent or only looks in every 37 ms.
func TestLinkExactWhateverTheCallPattern(t *testing.T) {
	uplink, err := traces.Load("../traces/ATT-LTE-driving-2016.up") // 1.9 Mbit/s mean
	require.NoError(t, err)
	capacities := []struct {
		name string
		set  func(*LinkConfig)
	}{
		{"rate", func(c *LinkConfig) { c.Rate = 2 * cc.MbitPerSecond }},
		{"trace", func(c *LinkConfig) { c.Trace, c.TraceStartRandom = uplink, true }},
		{"walk", func(c *LinkConfig) {
			c.RateWalk = &RateWalk{Min: 1e6, Max: 4e6, HoldMin: scenario.Duration(50 * time.Millisecond), HoldMax: scenario.Duration(150 * time.Millisecond)}
		}},
	}
	for _, capa := range capacities {
		for _, disc := range []string{DisciplineFIFO, DisciplineCoDel, DisciplineFQCoDel, DisciplineCake, DisciplineWMM} {
			if capa.name == "trace" && disc == DisciplineCake {
				continue // refused: cake needs a rate
			}
			t.Run(capa.name+"/"+disc, func(t *testing.T) { exactWhateverTheCallPattern(t, disc, capa.set) })
		}
	}
}

func exactWhateverTheCallPattern(t *testing.T, disc string, capacity func(*LinkConfig)) {
	{
		{
			cfg := LinkConfig{
				Delay: 20 * time.Millisecond, Jitter: 3 * time.Millisecond,
				Loss: 0.01, Seed: 11, Queue: QueueConfig{Discipline: disc, Limit: 200},
			}
			capacity(&cfg)
			if disc == DisciplineWMM {
				cfg.Queue.ACQueue = WMMCoDel // so that AQM acts in it too
			}
			mk := func() ([]*Packet, []clock.Mono) {
				var ps []*Packet
				var ts []clock.Mono
				// 3 Mbit/s of bulk in 4 flows (one AF11, one CS1: other
				// classes for cake and wmm) plus a CS7 update every 10 ms
				// for 3 s: overload, so the queue builds and AQM acts.
				for us := 0; us < 3_000_000; us += 4000 {
					now := at(time.Duration(us) * time.Microsecond)
					for f, dscp := range []uint8{0, 0, 10, 8} {
						ps = append(ps, &Packet{FlowKey: uint64(f), Size: 375 * 4, DSCP: dscp, Handle: uint64(len(ps))})
						ts = append(ts, now)
					}
					if us%10000 == 0 {
						ps = append(ps, &Packet{FlowKey: 9, Size: 200, DSCP: 56, Handle: uint64(len(ps))})
						ts = append(ts, now)
					}
				}
				return ps, ts
			}
			ps, ts := mk()
			fine := drive(t, cfg, ps, ts, true, 0)
			ps, ts = mk()
			coarse := drive(t, cfg, ps, ts, false, 37*time.Millisecond)
			require.NotEmpty(t, fine.delivered)
			require.Equal(t, fine.delivered, coarse.delivered)
			require.Equal(t, fine.dropped, coarse.dropped)
			require.Equal(t, fine.reasons, coarse.reasons)
			require.Equal(t, fine.stats, coarse.stats)
			require.NotZero(t, fine.stats.DroppedRandom)
			if disc != DisciplineFIFO {
				require.NotZero(t, fine.stats.DroppedAQM)
			}
			require.Equal(t, fine.stats.Enqueued,
				fine.stats.Delivered+fine.stats.DroppedRandom+fine.stats.DroppedOverflow+fine.stats.DroppedAQM)
		}
	}
}

func TestLinkNextEvent(t *testing.T) {
	l := newLink(t, LinkConfig{Rate: 1200 * cc.KbitPerSecond, Delay: 5 * time.Millisecond}, nil)
	_, ok := l.NextEvent()
	require.False(t, ok, "idle and empty")
	l.Enqueue(at(0), pkt(0, 1500))
	l.Enqueue(at(0), pkt(1, 1500))
	var events []clock.Mono
	for {
		ev, ok := l.NextEvent()
		if !ok {
			break
		}
		events = append(events, ev)
		for l.Poll(ev) != nil {
		}
	}
	ms := func(x int) clock.Mono { return at(time.Duration(x) * time.Millisecond) }
	// tx a ends 10; a arrives 15 (before tx b ends 20); b arrives 25.
	require.Equal(t, []clock.Mono{ms(10), ms(15), ms(20), ms(25)}, events)
}

func TestLinkNowNeverGoesBack(t *testing.T) {
	l := newLink(t, LinkConfig{Rate: 1200 * cc.KbitPerSecond}, nil)
	l.Enqueue(at(100*time.Millisecond), pkt(0, 1500))
	// A call with an earlier now is taken at the latest now.
	p := pkt(1, 1500)
	l.Enqueue(at(0), p)
	require.Equal(t, at(100*time.Millisecond), p.EnqueuedAt)
	require.Nil(t, l.Poll(at(0)))
	l.Poll(at(time.Second))
	require.Equal(t, at(120*time.Millisecond), p.ArrivedAt)
}

// TestLinkFQCoDelProtectsSparseFlow: the AQM paper's point in small: under
// a standing bulk queue, a sparse flow's queueing delay stays near zero with
// fq_codel and cake, and is the bulk queue's with fifo.
func TestLinkFQCoDelProtectsSparseFlow(t *testing.T) {
	meanDelays := func(disc string) (sparse, bulk time.Duration) {
		return sparseBesideBulk(t, QueueConfig{Discipline: disc, Limit: 1000}, 56) // sparse CS7
	}
	oneBulk := TxTime(1500, 10*cc.MbitPerSecond)
	for _, disc := range []string{DisciplineFQCoDel, DisciplineCake} {
		sparse, bulk := meanDelays(disc)
		require.LessOrEqual(t, sparse, oneBulk, "%s: sparse waits at most for the packet on the wire", disc)
		require.Greater(t, bulk, DefaultTarget, "%s: bulk has a standing queue", disc)
	}
	sparse, bulk := meanDelays(DisciplineFIFO)
	require.Greater(t, sparse, 100*time.Millisecond, "fifo: sparse waits behind the bulk queue")
	require.InEpsilon(t, float64(bulk), float64(sparse), 0.1)
}

func TestNewLinkErrors(t *testing.T) {
	ok := LinkConfig{Rate: cc.MbitPerSecond}
	tests := []struct {
		name string
		mod  func(*LinkConfig)
	}{
		{"no rate", func(c *LinkConfig) { c.Rate = 0 }},
		{"negative delay", func(c *LinkConfig) { c.Delay = -1 }},
		{"negative jitter", func(c *LinkConfig) { c.Jitter = -1 }},
		{"loss > 1", func(c *LinkConfig) { c.Loss = 1.1 }},
		{"loss < 0", func(c *LinkConfig) { c.Loss = -0.1 }},
		{"ge r > 1", func(c *LinkConfig) { c.GE = &GilbertElliott{R: 2} }},
		{"unknown discipline", func(c *LinkConfig) { c.Queue.Discipline = "red" }},
		{"negative limit", func(c *LinkConfig) { c.Queue.Limit = -1 }},
		{"negative quantum", func(c *LinkConfig) { c.Queue = QueueConfig{Discipline: DisciplineFQCoDel, Quantum: -1} }},
	}
	_, err := NewLink(ok, nil)
	require.NoError(t, err)
	for _, tc := range tests {
		cfg := ok
		tc.mod(&cfg)
		_, err := NewLink(cfg, nil)
		require.ErrorIs(t, err, ErrInvalidConfig, tc.name)
	}
}

func TestLinkConfigFromPath(t *testing.T) {
	s, err := scenario.Parse([]byte(`{"name":"x","duration":"10s","flows":[{"kind":"bulk"}],
		"forward":{"rate":"1.5Mbps","delay":"50ms","loss":0.01,"jitter":"2ms",
			"queue":{"discipline":"fq_codel","limit":50,"quantum":300,"target":"10ms"},
			"gilbert_elliott":{"p":0.1,"r":0.5,"loss_bad":0.9}},
		"reverse":{"rate":"1Mbps"}}`))
	require.NoError(t, err)
	cfg := LinkConfigFromPath(s.Forward, 7)
	require.Equal(t, LinkConfig{
		Rate: 1500 * cc.KbitPerSecond, Delay: 50 * time.Millisecond, Jitter: 2 * time.Millisecond, Loss: 0.01,
		GE:    &GilbertElliott{P: 0.1, R: 0.5, LossBad: 0.9},
		Queue: QueueConfig{Discipline: DisciplineFQCoDel, Limit: 50, Quantum: 300, Target: 10 * time.Millisecond},
		Seed:  7,
	}, cfg)
	_, err = NewLink(cfg, nil)
	require.NoError(t, err)
	rev := LinkConfigFromPath(s.Reverse, 8)
	require.Equal(t, DisciplineFIFO, rev.Queue.Discipline)
	require.Equal(t, 1000, rev.Queue.Limit)
}
