package netem

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/cc"
	"github.com/stretchr/testify/require"
)

// TestACOf: every code point RFC 8325 §4 names, its user priority and
// access category; then a few unnamed ones that take the three high bits.
func TestACOf(t *testing.T) {
	tests := []struct {
		name string
		dscp uint8
		up   uint8
		ac   AC
	}{
		{"CS7", 56, 7, ACVoice},
		{"CS6", 48, 7, ACVoice},
		{"EF", 46, 6, ACVoice},
		{"VA", 44, 6, ACVoice},
		{"CS5", 40, 5, ACVideo},
		{"AF41", 34, 4, ACVideo},
		{"AF42", 36, 4, ACVideo},
		{"AF43", 38, 4, ACVideo},
		{"CS4", 32, 4, ACVideo},
		{"AF31", 26, 4, ACVideo},
		{"AF32", 28, 4, ACVideo},
		{"AF33", 30, 4, ACVideo},
		{"CS3", 24, 4, ACVideo},
		{"AF21", 18, 3, ACBestEffort},
		{"AF22", 20, 3, ACBestEffort},
		{"AF23", 22, 3, ACBestEffort},
		{"CS2", 16, 0, ACBestEffort},
		{"AF11", 10, 0, ACBestEffort},
		{"AF12", 12, 0, ACBestEffort},
		{"AF13", 14, 0, ACBestEffort},
		{"CS0", 0, 0, ACBestEffort},
		{"CS1", 8, 1, ACBackground},
		{"LE", 1, 1, ACBackground},
		// Unnamed: the three high bits.
		{"2", 2, 0, ACBestEffort},
		{"9", 9, 1, ACBackground},
		{"17", 17, 2, ACBackground},
		{"42", 42, 5, ACVideo},
		{"50", 50, 6, ACVoice},
		{"63", 63, 7, ACVoice},
	}
	for _, tc := range tests {
		require.Equal(t, tc.up, UPOf(tc.dscp), tc.name)
		require.Equal(t, tc.ac, ACOf(tc.dscp), tc.name)
		// The two ECN bits are not part of the DSCP; a caller passing a
		// 6-bit DSCP with garbage above bit 5 still classifies the same.
		require.Equal(t, tc.ac, ACOf(tc.dscp|0xc0), tc.name)
	}
	for up, want := range []AC{ACBestEffort, ACBackground, ACBackground, ACBestEffort, ACVideo, ACVideo, ACVoice, ACVoice} {
		require.Equal(t, want, ACOfUP(uint8(up)), "UP %d", up)
	}
}

func newWMM(t *testing.T, cfg WMMConfig, d *drops) *WMM {
	t.Helper()
	var fn DropFunc
	if d != nil {
		fn = d.fn
	}
	q, err := NewWMM(cfg, fn)
	require.NoError(t, err)
	return q
}

// TestWMMStrictPriorityOrder: whatever the arrival order, voice leaves
// first, then video, best effort and background; FIFO within a category.
func TestWMMStrictPriorityOrder(t *testing.T) {
	q := newWMM(t, WMMConfig{}, nil)
	var in []*Packet
	for i := 0; i < 3; i++ {
		for _, dscp := range []uint8{8, 0, 34, 56} { // BK, BE, VI, VO
			p := dscpPkt(uint64(i), 100+i, dscp)
			in = append(in, p)
			q.Enqueue(at(0), p)
		}
	}
	require.Equal(t, 12, q.Len())
	require.Equal(t, 4*(100+101+102), q.Bytes())
	for _, a := range []AC{ACVoice, ACVideo, ACBestEffort, ACBackground} {
		require.Equal(t, 3, q.ACLen(a), a)
		require.Equal(t, 100+101+102, q.ACBytes(a), a)
	}
	var got []*Packet
	for p := q.Dequeue(at(time.Millisecond)); p != nil; p = q.Dequeue(at(time.Millisecond)) {
		got = append(got, p)
	}
	// in is [BK0 BE0 VI0 VO0 BK1 ...]: category k of round i is in[4i+k].
	var want []*Packet
	for _, k := range []int{3, 2, 1, 0} {
		for i := 0; i < 3; i++ {
			want = append(want, in[4*i+k])
		}
	}
	require.Equal(t, want, got)
	require.Zero(t, q.Len())
	require.Zero(t, q.Bytes())
}

// TestWMMStarvation: a backlogged best-effort category gets nothing while
// voice stays backlogged, and is served as soon as voice empties.
func TestWMMStarvation(t *testing.T) {
	q := newWMM(t, WMMConfig{}, nil)
	be := make([]*Packet, 5)
	for i := range be {
		be[i] = dscpPkt(1, 1000, 0)
		q.Enqueue(at(0), be[i])
	}
	q.Enqueue(at(0), dscpPkt(2, 200, 56))
	now := at(0)
	for i := 0; i < 1000; i++ {
		now = now.Add(time.Millisecond)
		// Keep voice backlogged: one new voice packet per dequeue.
		q.Enqueue(now, dscpPkt(2, 200, 56))
		p := q.Dequeue(now)
		require.Equal(t, ACVoice, ACOf(p.DSCP), "dequeue %d", i)
	}
	require.Equal(t, 5, q.ACLen(ACBestEffort), "best effort starved")
	require.Equal(t, 1, q.ACLen(ACVoice))
	// Voice stops: its last packet goes, then best effort in order.
	require.Equal(t, ACVoice, ACOf(q.Dequeue(now).DSCP))
	for i := range be {
		require.Same(t, be[i], q.Dequeue(now))
	}
	require.Nil(t, q.Dequeue(now))
}

// TestWMMOverflowPerCategory: each category has its own limit; a full
// category tail-drops only its own arrivals.
func TestWMMOverflowPerCategory(t *testing.T) {
	var d drops
	q := newWMM(t, WMMConfig{Limit: 3}, &d)
	for i := 0; i < 3; i++ {
		q.Enqueue(at(0), dscpPkt(1, 1500, 0))
	}
	extra := dscpPkt(1, 1500, 0)
	q.Enqueue(at(0), extra)
	require.Equal(t, []*Packet{extra}, d.pkts)
	require.Equal(t, []DropReason{DropOverflow}, d.reasons)
	// Voice, video and background still take their full limit each.
	for _, dscp := range []uint8{46, 40, 8} {
		for i := 0; i < 3; i++ {
			q.Enqueue(at(0), dscpPkt(2, 100, dscp))
		}
	}
	require.Len(t, d.pkts, 1)
	require.Equal(t, 12, q.Len())
	require.Equal(t, 3*1500+9*100, q.Bytes())
	// And one more voice packet is dropped, nothing else is touched.
	vo := dscpPkt(2, 100, 56)
	q.Enqueue(at(0), vo)
	require.Same(t, vo, d.pkts[1])
	require.Equal(t, 3, q.ACLen(ACBestEffort))
	require.Equal(t, 3, q.ACLen(ACVoice))
}

func TestWMMByteLimitPerCategory(t *testing.T) {
	var d drops
	q := newWMM(t, WMMConfig{LimitBytes: 3000}, &d)
	q.Enqueue(at(0), dscpPkt(1, 1500, 0))
	q.Enqueue(at(0), dscpPkt(1, 1500, 0))
	q.Enqueue(at(0), dscpPkt(1, 1, 0))
	q.Enqueue(at(0), dscpPkt(2, 3000, 56))
	require.Len(t, d.pkts, 1)
	require.Equal(t, 1, d.pkts[0].Size)
	require.Equal(t, 3000, q.ACBytes(ACVoice))
}

// TestWMMCoDelInCategory: with ac_queue codel, a standing queue in one
// category is controlled as RFC 8289 CoDel controls it (first drop one
// interval after the sojourn first exceeds target), while a lightly
// loaded higher category sees no AQM drop; with ac_queue fifo nothing is
// dropped.
func TestWMMCoDelInCategory(t *testing.T) {
	for _, tc := range []struct {
		kind    WMMQueue
		wantAQM bool
	}{{WMMCoDel, true}, {WMMFIFO, false}} {
		t.Run(string(tc.kind), func(t *testing.T) {
			var d drops
			q := newWMM(t, WMMConfig{ACQueue: tc.kind, Limit: 100000}, &d)
			for i := 0; i < 30000; i++ {
				q.Enqueue(at(0), dscpPkt(1, 1500, 0))
			}
			const tick = 100 * time.Microsecond
			voice := 0
			for now := at(tick); now < at(time.Second); now = now.Add(tick) {
				// A light voice flow: one packet every 10 ms, served at
				// once (it never builds a queue).
				if now.Sub(at(0))%(10*time.Millisecond) == 0 {
					q.Enqueue(now, dscpPkt(2, 200, 46))
				}
				p := q.Dequeue(now)
				require.NotNil(t, p)
				if ACOf(p.DSCP) == ACVoice {
					voice++
					require.Equal(t, now, p.EnqueuedAt, "voice waits for nothing")
				}
			}
			require.Equal(t, 99, voice)
			if !tc.wantAQM {
				require.Empty(t, d.pkts)
				return
			}
			require.Greater(t, d.count(DropAQM), 20)
			require.Equal(t, len(d.pkts), d.count(DropAQM))
			// Sojourn reaches target 5 ms at the 50th tick: first drop an
			// interval later (as TestCoDelControlLaw).
			require.Equal(t, at(105*time.Millisecond), d.times[0])
			for _, p := range d.pkts {
				require.Equal(t, ACBestEffort, ACOf(p.DSCP))
			}
		})
	}
}

// TestWMMDropFuncSeesEveryDrop: under a random mix of categories, sizes
// and dequeue times, with small limits and CoDel, every packet offered is
// either dequeued, reported dropped exactly once, or still queued.
func TestWMMDropFuncSeesEveryDrop(t *testing.T) {
	for _, kind := range []WMMQueue{WMMFIFO, WMMCoDel} {
		t.Run(string(kind), func(t *testing.T) {
			var d drops
			q := newWMM(t, WMMConfig{ACQueue: kind, Limit: 20, LimitBytes: 15000}, &d)
			rng := rand.New(rand.NewPCG(1, 2))
			dscps := []uint8{56, 46, 34, 24, 18, 0, 10, 8, 1}
			seen := map[*Packet]int{}
			offered, out := 0, 0
			now := at(0)
			for i := 0; i < 50000; i++ {
				now = now.Add(time.Duration(rng.IntN(400)) * time.Microsecond)
				for k := rng.IntN(3); k > 0; k-- {
					p := dscpPkt(uint64(i), 64+rng.IntN(1437), dscps[rng.IntN(len(dscps))])
					q.Enqueue(now, p)
					offered++
				}
				if rng.IntN(2) == 0 {
					if p := q.Dequeue(now); p != nil {
						seen[p]++
						out++
					}
				}
			}
			for _, p := range d.pkts {
				seen[p]++
			}
			for p, n := range seen {
				require.Equal(t, 1, n, "packet %p seen %d times", p, n)
			}
			require.Equal(t, offered, out+len(d.pkts)+q.Len())
			require.NotZero(t, d.count(DropOverflow))
			if kind == WMMCoDel {
				require.NotZero(t, d.count(DropAQM))
			} else {
				require.Zero(t, d.count(DropAQM))
			}
			sum, bytes := 0, 0
			for a := ACVoice; a < numACs; a++ {
				sum += q.ACLen(a)
				bytes += q.ACBytes(a)
			}
			require.Equal(t, q.Len(), sum)
			require.Equal(t, q.Bytes(), bytes)
		})
	}
}

// TestWMMOneCategoryIsItsQueue: with every packet in one category, WMM is
// exactly a FIFO (ac_queue fifo) or a CoDel (ac_queue codel) of the same
// limit: same packets out at the same times, same drops.
func TestWMMOneCategoryIsItsQueue(t *testing.T) {
	for _, kind := range []WMMQueue{WMMFIFO, WMMCoDel} {
		t.Run(string(kind), func(t *testing.T) {
			var dw, dr drops
			w := newWMM(t, WMMConfig{ACQueue: kind, Limit: 50}, &dw)
			var ref Queue
			var err error
			if kind == WMMFIFO {
				ref, err = NewFIFO(FIFOConfig{Limit: 50}, dr.fn)
			} else {
				ref, err = NewCoDel(CoDelConfig{Limit: 50}, dr.fn)
			}
			require.NoError(t, err)
			rng := rand.New(rand.NewPCG(3, 4))
			now := at(0)
			for i := 0; i < 20000; i++ {
				now = now.Add(time.Duration(rng.IntN(1500)) * time.Microsecond)
				for k := rng.IntN(3); k > 0; k-- {
					size := 100 + rng.IntN(1400)
					w.Enqueue(now, dscpPkt(uint64(i), size, 8))
					ref.Enqueue(now, dscpPkt(uint64(i), size, 8))
				}
				if rng.IntN(10) >= 7 {
					continue // the transmitter is busy: the queue builds
				}
				pw, pr := w.Dequeue(now), ref.Dequeue(now)
				if pr == nil {
					require.Nil(t, pw, "step %d", i)
					continue
				}
				require.NotNil(t, pw, "step %d", i)
				require.Equal(t, pr.FlowKey, pw.FlowKey, "step %d", i)
			}
			require.Equal(t, dr.times, dw.times)
			require.Equal(t, dr.reasons, dw.reasons)
			require.NotZero(t, dw.count(DropOverflow))
			if kind == WMMCoDel {
				require.NotZero(t, dw.count(DropAQM))
			}
		})
	}
}

func TestWMMConfigErrors(t *testing.T) {
	for _, cfg := range []WMMConfig{
		{ACQueue: "red"},
		{Limit: -1},
		{LimitBytes: -1},
		{ACQueue: WMMCoDel, Target: -time.Millisecond},
	} {
		_, err := NewWMM(cfg, nil)
		require.ErrorIs(t, err, ErrInvalidConfig, "%+v", cfg)
	}
}

// TestLinkWMMPrioritisesSparseCS7: on the link, under a standing
// best-effort bulk queue, a sparse CS7 flow waits at most for the packet
// on the wire; the same flow marked best effort waits behind the whole
// bulk queue, as with a FIFO.
func TestLinkWMMPrioritisesSparseCS7(t *testing.T) {
	meanDelays := func(queue QueueConfig, sparseDSCP uint8) (sparse, bulk time.Duration) {
		return sparseBesideBulk(t, queue, sparseDSCP)
	}
	oneBulk := TxTime(1500, 10*cc.MbitPerSecond)
	for _, acq := range []WMMQueue{WMMFIFO, WMMCoDel} {
		wmm := QueueConfig{Discipline: DisciplineWMM, Limit: 1000, ACQueue: acq}
		sparse, bulk := meanDelays(wmm, 56)
		require.LessOrEqual(t, sparse, oneBulk, "%s: CS7 waits at most for the packet on the wire", acq)
		require.Greater(t, bulk, DefaultTarget, "%s: bulk has a standing queue", acq)
		sparse, bulk = meanDelays(wmm, 0)
		require.Greater(t, sparse, DefaultTarget, "%s: best effort shares the bulk queue", acq)
		require.InEpsilon(t, float64(bulk), float64(sparse), 0.1, acq)
	}
	fifo, _ := meanDelays(QueueConfig{Discipline: DisciplineFIFO, Limit: 1000}, 0)
	wmmBE, _ := meanDelays(QueueConfig{Discipline: DisciplineWMM, Limit: 1000}, 0)
	require.Equal(t, fifo, wmmBE, "all best effort: wmm with ac_queue fifo is the fifo")
}

func TestLinkConfigFromPathWMM(t *testing.T) {
	s, err := scenario.Parse([]byte(`{"name":"x","duration":"10s","flows":[{"kind":"bulk"}],
		"forward":{"rate":"1Mbps","queue":{"discipline":"wmm","limit":50,"ac_queue":"codel","ac_limit":3,"target":"10ms"}},
		"reverse":{"rate":"1Mbps","queue":{"discipline":"wmm"}}}`))
	require.NoError(t, err)
	cfg := LinkConfigFromPath(s.Forward, 7)
	require.Equal(t, QueueConfig{Discipline: DisciplineWMM, Limit: 50, ACQueue: WMMCoDel, ACLimit: 3, Target: 10 * time.Millisecond}, cfg.Queue)
	var d drops
	l := newLink(t, cfg, d.fn)
	// ac_limit 3 per category: the first best-effort packet goes on the
	// wire, three wait, the fifth is dropped; voice still takes three.
	for i := 0; i < 5; i++ {
		l.Enqueue(at(0), &Packet{Size: 1000})
	}
	for i := 0; i < 3; i++ {
		l.Enqueue(at(0), &Packet{Size: 100, DSCP: 46})
	}
	require.Equal(t, []DropReason{DropOverflow}, d.reasons)
	require.Equal(t, 6, l.Stats().Backlog)

	rev := LinkConfigFromPath(s.Reverse, 8)
	require.Equal(t, QueueConfig{Discipline: DisciplineWMM, Limit: 1000, ACQueue: WMMFIFO}, rev.Queue)
	_, err = NewLink(rev, nil)
	require.NoError(t, err)

	bad := cfg
	bad.Queue.ACQueue = "red"
	_, err = NewLink(bad, nil)
	require.ErrorIs(t, err, ErrInvalidConfig)
}
