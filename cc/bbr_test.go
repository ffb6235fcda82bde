package cc

import (
	"math"
	"testing"
	"time"

	"github.com/fresh-udp/fresh/clock"
	"github.com/stretchr/testify/require"
)

// bbrPath is a small scenario harness for BBR: one sender, a bottleneck of
// rate bits/s with a FIFO of queueLimit packets (0 = unlimited) and a fixed
// round-trip propagation delay, an ACK per packet, in virtual time advanced
// in steps of bbrStep. The sender obeys cwnd and the pacing rate as the
// session does (no burst allowance). A packet the FIFO drops is declared lost
// when its ACK would have arrived.
type bbrPath struct {
	t          testing.TB
	b          *BBR
	clk        *clock.Manual
	mss        ByteCount
	rate       Bandwidth
	prop       time.Duration
	queueLimit int

	nextPN   PacketNumber
	inFlight ByteCount
	linkFree clock.Mono  // when the bottleneck finishes the last queued packet
	events   []pathEvent // ACKs and losses, in arrival order
	nextSend clock.Mono
	appLimit bool         // the application has nothing to send
	police   *tokenBucket // drops what exceeds its rate (nil = none)
	sent     int
	lost     int
}

type pathEvent struct {
	pn   PacketNumber
	sent clock.Mono
	at   clock.Mono
	lost bool
}

const bbrStep = 100 * time.Microsecond

// tokenBucket is a traffic policer: tokens (bytes) accrue at rate up to
// burst; a packet passes if it finds enough, else it is dropped.
type tokenBucket struct {
	rate   Bandwidth
	burst  ByteCount
	tokens ByteCount
	last   clock.Mono
}

func (tb *tokenBucket) admit(now clock.Mono, size ByteCount) bool {
	tb.tokens = min(tb.burst, tb.tokens+bytesAt(tb.rate, now.Sub(tb.last)))
	tb.last = now
	if tb.tokens < size {
		return false
	}
	tb.tokens -= size
	return true
}

func newBBRPath(t testing.TB, b *BBR, rate Bandwidth, prop time.Duration) *bbrPath {
	return &bbrPath{t: t, b: b, clk: clock.NewManual(time.Unix(0, 0)), mss: b.mss, rate: rate, prop: prop}
}

func (p *bbrPath) now() clock.Mono { return p.clk.Now() }

// queued is the number of packets waiting in (or being sent by) the FIFO.
func (p *bbrPath) queued() int {
	ser := time.Duration(float64(p.mss*8) / float64(p.rate) * float64(time.Second))
	backlog := p.linkFree.Sub(p.now())
	if backlog <= 0 {
		return 0
	}
	return int((backlog + ser - 1) / ser)
}

func (p *bbrPath) sendOne() {
	now := p.now()
	pn := p.nextPN
	p.nextPN++
	p.inFlight += p.mss
	p.sent++
	p.b.OnPacketSent(now, pn, p.mss, p.inFlight)
	ser := time.Duration(float64(p.mss*8) / float64(p.rate) * float64(time.Second))
	if (p.police != nil && !p.police.admit(now, p.mss)) || (p.queueLimit > 0 && p.queued() >= p.queueLimit) {
		p.events = append(p.events, pathEvent{pn: pn, sent: now, at: now.Add(p.prop + ser), lost: true})
	} else {
		depart := max(p.linkFree, now).Add(ser)
		p.linkFree = depart
		p.events = append(p.events, pathEvent{pn: pn, sent: now, at: depart.Add(p.prop)})
	}
	if r := p.b.PacingRate(); r > 0 {
		// The session's pacer counts the packet with fresh's overhead.
		gap := time.Duration(float64((p.mss+p.b.overhead)*8) / float64(r) * float64(time.Second))
		p.nextSend = max(p.nextSend, now).Add(gap)
	}
}

// step advances one bbrStep: arrivals first, then sends.
func (p *bbrPath) step() {
	p.clk.Advance(bbrStep)
	now := p.now()
	// Arrival order can differ from send order only for drops (earlier "at");
	// deliver everything due, in packet-number order.
	i := 0
	for _, e := range p.events {
		if e.at.After(now) {
			break
		}
		i++
	}
	due := p.events[:i]
	for _, e := range due {
		prior := p.inFlight
		p.inFlight -= p.mss
		if e.lost {
			p.lost++
			p.b.OnLoss(now, LossEvent{PacketNumber: e.pn, Bytes: p.mss, SentTime: e.sent, PriorInFlight: prior})
			continue
		}
		p.b.OnAck(now, AckSample{PacketNumber: e.pn, Bytes: p.mss, SentTime: e.sent, RTT: now.Sub(e.sent), PriorInFlight: prior})
	}
	p.events = p.events[i:]
	for !p.appLimit && p.b.CanSend(p.inFlight) && !now.Before(p.nextSend) {
		p.sendOne()
	}
}

// run steps for d, calling each (if not nil) after every step.
func (p *bbrPath) run(d time.Duration, each func()) {
	for end := p.now().Add(d); p.now().Before(end); {
		p.step()
		if each != nil {
			each()
		}
	}
}

// runUntil steps until cond holds or max passes; it reports whether cond held.
func (p *bbrPath) runUntil(max time.Duration, cond func() bool) bool {
	for end := p.now().Add(max); p.now().Before(end); {
		p.step()
		if cond() {
			return true
		}
	}
	return false
}

// Test path: 10 Mbit/s, 40 ms, 1000-byte packets: BDP 50 packets.
const (
	testBBRRate = 10 * MbitPerSecond
	testBBRRTT  = 40 * time.Millisecond
	testBBRBDP  = ByteCount(50 * 1000)
)

func newTestBBR() *BBR { return NewBBR(BBRConfig{MSS: testMSS}) }

func TestBBRRegistered(t *testing.T) {
	c, err := New("bbr", 0)
	require.NoError(t, err)
	require.Equal(t, "bbr", c.Name())
	require.Equal(t, InitialWindowPackets*DefaultMSS, c.Window())
	m := c.Metrics()
	require.Equal(t, ModeStartup, m.Mode)
	require.True(t, m.InSlowStart)
	require.Positive(t, c.PacingRate(), "Linux paces the initial window at high_gain·cwnd/1 ms")
}

// Startup paces at 2/ln2 of the measured rate (less the 1 % margin) and
// grows cwnd by every byte acknowledged: it doubles per round.
func TestBBRStartupGainAndGrowth(t *testing.T) {
	b := newTestBBR()
	p := newBBRPath(t, b, testBBRRate, testBBRRTT)
	require.InDelta(t, 2.885, bbrHighGain, 0.001)
	// Three rounds in: still in Startup, the pipe (50 packets) not yet full.
	p.run(3*testBBRRTT+5*time.Millisecond, nil)
	require.Equal(t, ModeStartup, b.Metrics().Mode)
	require.True(t, b.Metrics().InSlowStart)
	bw := b.BtlBw()
	require.Positive(t, bw)
	wire := float64(testMSS+DefaultBBRPacketOverhead) / float64(testMSS)
	require.InDelta(t, float64(bw)*2.885*0.99*wire, float64(b.PacingRate()), float64(bw)*0.01, "pacing = high gain · btlBw, in the pacer's bytes")
	// cwnd grew by every byte acknowledged (the app never limited it).
	require.Equal(t, InitialWindowPackets*testMSS+b.rate.delivered, b.Window())
}

// The full-pipe rule, table-driven on the filter's value per round: the pipe
// is full after 3 rounds in a row in which btlBw grew by less than 25 %;
// app-limited rounds do not count.
func TestBBRFullPipeAfterThreeFlatRounds(t *testing.T) {
	type round struct {
		bw         Bandwidth
		appLimited bool
	}
	cases := []struct {
		name   string
		rounds []round
		fullAt int // round index at which the pipe is full; -1 never
	}{
		{"three flat rounds", []round{{100, false}, {200, false}, {400, false}, {400, false}, {450, false}, {480, false}}, 5},
		{"25 % growth resets the count", []round{{100, false}, {110, false}, {120, false}, {125, false}, {130, false}, {140, false}, {150, false}}, 6},
		{"24 % growth does not", []round{{100, false}, {124, false}, {124, false}, {124, false}}, 3},
		{"app-limited rounds do not count", []round{{100, false}, {100, true}, {100, true}, {100, false}, {100, false}}, -1},
		{"two flat rounds are not enough", []round{{100, false}, {100, false}, {100, false}}, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newTestBBR()
			got := -1
			for i, r := range tc.rounds {
				b.btlBw.reset(uint64(i), r.bw)
				b.roundStart = true
				b.checkFullBwReached(rateSample{valid: true, isAppLimited: r.appLimited})
				if b.fullBwReached && got < 0 {
					got = i
				}
			}
			require.Equal(t, tc.fullAt, got)
		})
	}
}

// On a clean path Startup ends about three rounds after the rate stopped
// growing, Drain paces at ln2/2 until inflight is down to the BDP target,
// then ProbeBW.
func TestBBRDrainToBDP(t *testing.T) {
	b := newTestBBR()
	p := newBBRPath(t, b, testBBRRate, testBBRRTT)
	require.True(t, p.runUntil(2*time.Second, func() bool { return b.mode != bbrStartup }), "Startup ends")
	require.Equal(t, bbrDrain, b.mode)
	require.InDelta(t, bbrDrainGain, b.pacingGain, 1e-9)
	require.InDelta(t, math.Ln2/2, b.pacingGain, 1e-9)
	require.InDelta(t, float64(testBBRRate), float64(b.BtlBw()), 0.05*float64(testBBRRate), "btlBw found")
	target := b.inflightTarget(b.btlBw.get(), 1)
	require.Greater(t, b.inFlight, target, "Startup left a queue to drain")
	require.True(t, p.runUntil(time.Second, func() bool { return b.mode != bbrDrain }))
	require.Equal(t, bbrProbeBW, b.mode)
	require.LessOrEqual(t, b.inFlight, b.inflightTarget(b.btlBw.get(), 1), "Drain ends at the BDP target")
	require.Greater(t, b.inFlight, b.inflightTarget(b.btlBw.get(), 1)-2*testMSS, "... not below it")

	// The drain rule on its own: inflight one byte above the target stays.
	d := newTestBBR()
	d.minRTT = testBBRRTT
	d.btlBw.reset(0, testBBRRate)
	d.fullBwReached = true
	tgt := d.inflightTarget(testBBRRate, 1)
	d.inFlight = tgt + 1
	d.checkDrain()
	require.Equal(t, bbrDrain, d.mode)
	require.Equal(t, tgt, d.ssthresh, "ssthresh is the BDP target, as Linux sets it")
	d.inFlight = tgt
	d.checkDrain()
	require.Equal(t, bbrProbeBW, d.mode)
}

// The starting phase is random but never 0.75 (index 1), drawn from the seed.
func TestBBRProbeBWStartingPhase(t *testing.T) {
	seen := map[int]bool{}
	for seed := range uint64(200) {
		b := NewBBR(BBRConfig{MSS: testMSS, Seed: seed})
		b.enterProbeBW()
		require.NotEqual(t, 1, b.cycleIndex, "seed %d", seed)
		seen[b.cycleIndex] = true
		again := NewBBR(BBRConfig{MSS: testMSS, Seed: seed})
		again.enterProbeBW()
		require.Equal(t, b.cycleIndex, again.cycleIndex, "deterministic from the seed")
	}
	require.Len(t, seen, 7, "every phase but 0.75 is drawn")
}

// The phase-advance rule, table-driven: gain-1 phases last one minRTT; the
// 1.25 phase also needs inflight at 1.25·BDP (or a loss); the 0.75 phase
// ends at minRTT or as soon as inflight is down to the BDP.
func TestBBRGainCyclePhaseAdvance(t *testing.T) {
	b := newTestBBR()
	b.minRTT = testBBRRTT
	b.btlBw.reset(0, testBBRRate)
	b.mode = bbrProbeBW
	target := func(gain float64) ByteCount { return b.inflightTarget(testBBRRate, gain) }
	cases := []struct {
		name     string
		index    int
		elapsed  time.Duration
		inflight func() ByteCount
		losses   ByteCount
		want     bool
	}{
		{"cruise before minRTT", 2, testBBRRTT - time.Millisecond, func() ByteCount { return 0 }, 0, false},
		{"cruise after minRTT", 2, testBBRRTT + time.Millisecond, func() ByteCount { return 0 }, 0, true},
		{"probe after minRTT, inflight short", 0, 2 * testBBRRTT, func() ByteCount { return testBBRBDP }, 0, false},
		{"probe after minRTT, inflight reached", 0, 2 * testBBRRTT, func() ByteCount { return target(1.25) }, 0, true},
		{"probe after minRTT, a loss", 0, 2 * testBBRRTT, func() ByteCount { return testBBRBDP }, testMSS, true},
		{"probe before minRTT, inflight reached", 0, testBBRRTT / 2, func() ByteCount { return 2 * target(1.25) }, 0, false},
		{"drain before minRTT, queue left", 1, testBBRRTT / 2, func() ByteCount { return target(1) + testMSS }, 0, false},
		{"drain before minRTT, queue gone", 1, testBBRRTT / 2, func() ByteCount { return target(1) }, 0, true},
		{"drain after minRTT", 1, testBBRRTT + time.Millisecond, func() ByteCount { return 2 * target(1) }, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b.cycleIndex = tc.index
			b.updateGains()
			b.cycleStamp = 0
			b.rate.deliveredTime = clock.Mono(0).Add(tc.elapsed)
			require.Equal(t, tc.want, b.isNextCyclePhase(tc.inflight(), tc.losses))
		})
	}
}

// In ProbeBW the pacing gain walks 1.25, 0.75, 1×6, each phase about one
// minRTT, and cwnd is 2·BDP plus the budget.
func TestBBRGainCycleOnAPath(t *testing.T) {
	b := newTestBBR()
	p := newBBRPath(t, b, testBBRRate, testBBRRTT)
	require.True(t, p.runUntil(3*time.Second, func() bool { return b.mode == bbrProbeBW }))
	var gains []float64
	last := -1
	p.run(2*time.Second, func() {
		if b.cycleIndex != last {
			last = b.cycleIndex
			gains = append(gains, b.pacingGain)
		}
	})
	// Find a full cycle starting at the probe phase.
	start := -1
	for i, g := range gains {
		if g == 1.25 {
			start = i
			break
		}
	}
	require.GreaterOrEqual(t, start, 0, "the probe phase came: %v", gains)
	require.GreaterOrEqual(t, len(gains)-start, 9, "a whole cycle: %v", gains)
	require.Equal(t, []float64{1.25, 0.75, 1, 1, 1, 1, 1, 1, 1.25}, gains[start:start+9])
	// 2 s is about 50 rounds: 8 phases of ~1 minRTT each make ~6 cycles.
	require.InDelta(t, 2*time.Second/testBBRRTT, len(gains), 12)
	bdp := b.bdp(b.btlBw.get(), 2)
	require.LessOrEqual(t, b.Window(), b.quantizationBudget(bdp+b.ackAggregationCwnd()))
	require.GreaterOrEqual(t, b.Window(), bdp)
	require.Zero(t, p.lost, "an unlimited FIFO loses nothing")
}

// When minRTT has not been refreshed for 10 s, ProbeRTT holds cwnd at 4
// packets for max(200 ms, one round), then returns to ProbeBW with the cwnd
// from before; minRTT takes the new (higher) path RTT.
func TestBBRProbeRTT(t *testing.T) {
	b := newTestBBR()
	p := newBBRPath(t, b, testBBRRate, testBBRRTT)
	p.run(time.Second, nil)
	require.InDelta(t, testBBRRTT, b.minRTT, float64(2*time.Millisecond), "propagation + serialisation")
	// A route change: the path's RTT rises by 20 ms, so no sample refreshes
	// the minimum any more.
	p.prop = testBBRRTT + 20*time.Millisecond
	stamp := b.minRTTStamp
	var entered, left clock.Mono
	var before ByteCount
	maxCwnd := ByteCount(0)
	require.True(t, p.runUntil(15*time.Second, func() bool {
		if entered == 0 && b.mode == bbrProbeRTT {
			entered = p.now()
			before = b.priorCwnd
		}
		if entered != 0 && b.mode == bbrProbeRTT {
			maxCwnd = max(maxCwnd, b.Window())
		}
		if entered != 0 && b.mode != bbrProbeRTT {
			left = p.now()
			return true
		}
		return false
	}))
	since := entered.Sub(stamp)
	// The spec's numbers, not the constants, so a changed constant fails.
	require.Greater(t, since, 10*time.Second, "not before the minimum is 10 s old")
	require.Less(t, since, 10*time.Second+100*time.Millisecond, "and right after")
	require.Equal(t, 4*testMSS, maxCwnd, "cwnd 4 packets in ProbeRTT")
	dur := left.Sub(entered)
	require.Greater(t, dur, 200*time.Millisecond, "at least 200 ms")
	require.Less(t, dur, 200*time.Millisecond+3*p.prop, "200 ms after inflight reached 4 packets and a round")
	require.Equal(t, bbrProbeBW, b.mode, "the pipe was full: back to ProbeBW")
	require.GreaterOrEqual(t, b.Window(), before, "cwnd restored")
	require.InDelta(t, p.prop, b.minRTT, float64(2*time.Millisecond), "minRTT follows the path after expiry")
}

// ProbeRTT needs one round at 4 packets as well as 200 ms. On a thin link
// (100 kbit/s: 80 ms per packet) the 4 packets in flight when ProbeRTT's
// 200 ms start are still being acknowledged 240–320 ms later; the round
// ends only when a packet sent after that moment is acknowledged, about
// 4 serialisations + the propagation delay later.
func TestBBRProbeRTTLastsARound(t *testing.T) {
	b := newTestBBR()
	p := newBBRPath(t, b, 100*KbitPerSecond, 100*time.Millisecond)
	p.run(5*time.Second, nil)
	b.minRTTStamp = p.now().Add(-10*time.Second - time.Millisecond)
	p.prop += 10 * time.Millisecond // no sample refreshes the minimum
	var atFour clock.Mono           // when inflight reached 4 packets and the 200 ms began
	require.True(t, p.runUntil(10*time.Second, func() bool {
		if atFour == 0 && b.mode == bbrProbeRTT && b.probeRTTDoneSet {
			atFour = p.now()
		}
		return atFour != 0 && b.mode != bbrProbeRTT
	}))
	t.Logf("ProbeRTT at 4 packets for %v", p.now().Sub(atFour))
	require.Greater(t, p.now().Sub(atFour), 400*time.Millisecond, "a round at 4 packets, well over 200 ms here")
}

func TestBBRMinRTTUpdate(t *testing.T) {
	b := newTestBBR()
	b.start(0)
	at := func(d time.Duration) clock.Mono { return clock.Mono(0).Add(d) }
	b.updateMinRTT(at(time.Second), 50*time.Millisecond, testMSS)
	require.Equal(t, 50*time.Millisecond, b.minRTT, "the first sample")
	b.updateMinRTT(at(2*time.Second), 60*time.Millisecond, testMSS)
	require.Equal(t, 50*time.Millisecond, b.minRTT, "a higher sample within 10 s does not replace it")
	b.updateMinRTT(at(3*time.Second), 40*time.Millisecond, testMSS)
	require.Equal(t, 40*time.Millisecond, b.minRTT, "a lower one does at once")
	require.Equal(t, at(3*time.Second), b.minRTTStamp)
	b.updateMinRTT(at(13*time.Second), 70*time.Millisecond, testMSS)
	require.Equal(t, 40*time.Millisecond, b.minRTT, "exactly 10 s old is not expired")
	b.updateMinRTT(at(13*time.Second+time.Millisecond), 70*time.Millisecond, testMSS)
	require.Equal(t, 70*time.Millisecond, b.minRTT, "expired: any sample replaces it")
	require.Equal(t, bbrProbeRTT, b.mode, "and the expiry starts ProbeRTT")
}

// The btlBw filter keeps the max over 10 rounds: after the path's rate
// halves, the old estimate holds for the window, then gives way.
func TestBBRBtlBwFilterExpires(t *testing.T) {
	b := newTestBBR()
	p := newBBRPath(t, b, testBBRRate, testBBRRTT)
	require.True(t, p.runUntil(3*time.Second, func() bool { return b.mode == bbrProbeBW }))
	p.run(time.Second, nil)
	old := b.BtlBw()
	require.InDelta(t, float64(testBBRRate), float64(old), 0.05*float64(testBBRRate))
	p.rate = testBBRRate / 2
	changed := b.roundCount
	require.True(t, p.runUntil(5*time.Second, func() bool { return b.BtlBw() < old*3/4 }))
	rounds := b.roundCount - changed
	require.GreaterOrEqual(t, rounds, uint64(9), "held for the 10-round window")
	require.LessOrEqual(t, rounds, uint64(14), "then expired")
	p.run(2*time.Second, nil)
	require.InDelta(t, float64(testBBRRate/2), float64(b.BtlBw()), 0.1*float64(testBBRRate/2), "the new rate")
}

// App-limited samples may raise btlBw but never lower it, however long.
func TestBBRAppLimitedSamplesDoNotLowerBtlBw(t *testing.T) {
	for _, appLimited := range []bool{true, false} {
		b := newTestBBR()
		b.btlBw.reset(0, testBBRRate)
		for range 3 * bbrBwRounds {
			b.nextRoundDelivered = 0
			b.updateBw(rateSample{valid: true, deliveryRate: testBBRRate / 10, isAppLimited: appLimited}, 0)
		}
		if appLimited {
			require.Equal(t, testBBRRate, b.BtlBw(), "app-limited samples are ignored")
		} else {
			require.Equal(t, testBBRRate/10, b.BtlBw(), "the others replace the expired max")
		}
		b.updateBw(rateSample{valid: true, deliveryRate: 2 * testBBRRate, isAppLimited: true}, 0)
		require.Equal(t, 2*testBBRRate, b.BtlBw(), "a higher app-limited sample counts")
	}
}

// The app-limited inference at send: a packet that leaves long after the
// pacer allowed it and not right after an ACK marks the flight app-limited;
// one sent right after an ACK, or on the pacer's schedule, does not.
func TestBBRAppLimitedInference(t *testing.T) {
	cases := []struct {
		name       string
		sinceSend  time.Duration
		sinceAck   time.Duration
		appLimited bool
	}{
		{"on the pacer's schedule", time.Millisecond, 5 * time.Millisecond, false},
		{"right after an ACK", 50 * time.Millisecond, 100 * time.Microsecond, false},
		{"long after both: the application wrote", 50 * time.Millisecond, 20 * time.Millisecond, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newTestBBR()
			b.pacingRate = testBBRRate // 0.8 ms per packet
			h := newHarness(t, b, testMSS)
			h.send(2)
			h.advance(testBBRRTT)
			h.ack(1, testBBRRTT)
			b.rate.appLimited = 0 // the first flight's mark, cleared
			// The next send comes sinceAck after the ACK and sinceSend
			// after the previous send.
			b.lastSend = h.now().Add(tc.sinceAck - tc.sinceSend)
			h.advance(tc.sinceAck)
			h.send(1)
			require.Equal(t, tc.appLimited, b.rate.appLimited != 0)
		})
	}
}

// An application sending well below the path's rate leaves BBR's model at
// the rate it measured before, and marks its samples app-limited.
func TestBBRAppLimitedFlowKeepsBtlBw(t *testing.T) {
	b := newTestBBR()
	p := newBBRPath(t, b, testBBRRate, testBBRRTT)
	require.True(t, p.runUntil(3*time.Second, func() bool { return b.mode == bbrProbeBW }))
	p.run(time.Second, nil)
	bw := b.BtlBw()
	// One packet every 8 ms: a tenth of the link.
	p.appLimit = true
	for range 500 {
		p.run(8*time.Millisecond, nil)
		p.sendOne()
	}
	require.InDelta(t, float64(bw), float64(b.BtlBw()), 0.05*float64(bw), "4 s (100 rounds) of app-limited samples leave btlBw")
}

// recoveryBBR is BBR in ProbeBW with a 50-packet BDP model, driven by the
// plain harness: n packets sent, an RTT later `acked` of them acknowledged
// and replaced (so packets in flight carry different delivered counts, as
// in a running flow), then 1 ms more.
func recoveryBBR(t *testing.T, n, acked int) (*BBR, *harness) {
	b := newTestBBR()
	h := newHarness(t, b, testMSS)
	b.minRTT = testBBRRTT
	b.btlBw.reset(0, testBBRRate)
	b.fullBwReached = true
	b.enterProbeBW()
	b.updateGains()
	b.pacingRate = b.pacingOf(testBBRRate, 1)
	h.send(n)
	h.advance(testBBRRTT)
	for range acked {
		h.ack(1, testBBRRTT)
		h.send(1)
	}
	h.advance(time.Millisecond)
	return b, h
}

// Recovery: the first loss saves cwnd and sets it to what is in flight;
// during the first round cwnd follows packet conservation (one packet out
// per packet acknowledged, no growth), a further loss comes off cwnd, and
// when recovery ends the saved cwnd is restored.
func TestBBRRecoveryConservationAndRestore(t *testing.T) {
	b, h := recoveryBBR(t, 80, 10)
	b.cwnd = 80 * testMSS
	h.lose(1)
	require.True(t, b.Metrics().InRecovery)
	require.Equal(t, 80*testMSS, b.priorCwnd, "cwnd saved")
	require.Equal(t, 79*testMSS, b.Window(), "cwnd = inflight")
	for range 30 {
		h.ack(1, testBBRRTT)
		require.Equal(t, 79*testMSS, b.Window(), "packet conservation")
		h.send(1)
	}
	h.lose(1)
	require.Equal(t, 78*testMSS, b.Window(), "a loss comes off cwnd")
	require.Equal(t, 80*testMSS, b.priorCwnd, "no second save in one episode")
	// Everything sent before the loss: still recovering.
	h.ack(48, testBBRRTT)
	require.True(t, b.Metrics().InRecovery)
	w := b.Window()
	h.ack(1, testBBRRTT) // the first packet sent during recovery
	require.False(t, b.Metrics().InRecovery)
	target := b.quantizationBudget(b.bdp(b.bw(), b.cwndGain))
	require.Equal(t, min(max(w, 80*testMSS)+testMSS, target), b.Window(), "the saved cwnd is restored (and grows by the ACK)")
}

// When the first round of recovery ends (a packet sent after the loss was
// detected... or at it, delivered count-wise, is acknowledged) cwnd grows by
// the bytes acknowledged again, towards the target.
func TestBBRRecoveryGrowsAfterFirstRound(t *testing.T) {
	b, h := recoveryBBR(t, 60, 5)
	h.lose(30) // a burst loss
	require.Equal(t, 30*testMSS, b.Window(), "cwnd = inflight")
	for range 29 {
		h.ack(1, testBBRRTT)
		require.True(t, b.packetConservation)
		require.Equal(t, 30*testMSS, b.Window())
		h.send(1) // sent in recovery
	}
	h.ack(1, testBBRRTT) // the last packet sent before the loss: the round ends
	require.False(t, b.packetConservation, "the round is over")
	require.True(t, b.Metrics().InRecovery, "recovery is not")
	require.Equal(t, 31*testMSS, b.Window(), "cwnd grows by the bytes acknowledged")
}

// A retransmission timeout: cwnd 1 packet until the next ACK, the full-pipe
// count restarts, and an ACK of a packet sent after the timeout restores
// the cwnd from before it.
func TestBBRRetransmissionTimeout(t *testing.T) {
	b := newTestBBR()
	p := newBBRPath(t, b, testBBRRate, testBBRRTT)
	require.True(t, p.runUntil(3*time.Second, func() bool { return b.mode == bbrProbeBW }))
	p.run(500*time.Millisecond, nil)
	before := b.Window()
	b.fullBw = 1
	// Everything in flight is declared lost, then the timeout fires.
	now := p.now()
	for _, e := range p.events {
		p.inFlight -= p.mss
		b.OnLoss(now, LossEvent{PacketNumber: e.pn, Bytes: p.mss, SentTime: e.sent})
	}
	p.events = nil
	b.OnRetransmissionTimeout(now)
	require.Equal(t, testMSS, b.Window(), "1 packet, as tcp_enter_loss")
	require.True(t, b.Metrics().InRecovery)
	require.Zero(t, b.fullBw, "full-pipe detection restarts its count")
	require.Equal(t, ModeProbeBW, b.Metrics().Mode, "the mode stays")
	// The first ACK after the timeout: cwnd back to the floor at least,
	// and once a packet sent after the timeout is acknowledged, restored.
	require.True(t, p.runUntil(time.Second, func() bool { return !b.Metrics().InRecovery }))
	// Restored, then capped by the target as every ACK is (bbr_set_cwnd).
	target := b.quantizationBudget(b.bdp(b.bw(), b.cwndGain) + b.ackAggregationCwnd())
	require.GreaterOrEqual(t, b.Window(), min(before, target))
	require.Greater(t, b.Window(), 10*testMSS)
}

// A second timeout with no ACK in between keeps the first saved cwnd.
func TestBBRRepeatedTimeoutKeepsSavedCwnd(t *testing.T) {
	b := newTestBBR()
	b.cwnd = 40 * testMSS
	b.OnRetransmissionTimeout(0)
	b.OnRetransmissionTimeout(clock.Mono(time.Second))
	require.Equal(t, 40*testMSS, b.priorCwnd)
}

// On a path with a FIFO of one BDP, BBR keeps the link busy and loses few
// packets after Startup.
func TestBBRFillsABDPFifo(t *testing.T) {
	b := newTestBBR()
	p := newBBRPath(t, b, testBBRRate, testBBRRTT)
	p.queueLimit = 50
	p.run(2*time.Second, nil)
	sent, lost := p.sent, p.lost
	start := p.rate
	p.run(8*time.Second, nil)
	delivered := float64(p.sent-sent-(p.lost-lost)-len(p.events)) * float64(testMSS*8)
	util := delivered / (8 * float64(start))
	require.Greater(t, util, 0.9, "utilisation")
	require.Less(t, float64(p.lost-lost), 0.01*float64(p.sent-sent), "under 1 % loss in steady state")
}

// The policer detector (lt_bw): two lossy intervals at a consistent rate
// mean a policer; the flow then paces at their average with gain 1 and
// probes again after 48 rounds. Inconsistent rates are not a policer.
func TestBBRLongTermBandwidth(t *testing.T) {
	b := newTestBBR()
	b.mode = bbrProbeBW
	b.ltIntervalDone(2 * MbitPerSecond)
	require.False(t, b.ltUseBw, "one interval is not enough")
	b.ltIntervalDone(3 * MbitPerSecond)
	require.False(t, b.ltUseBw, "50 % apart: not consistent")
	b.ltIntervalDone(3*MbitPerSecond + 300*KbitPerSecond)
	require.True(t, b.ltUseBw, "10 % apart: policed")
	require.Equal(t, (3*MbitPerSecond+3*MbitPerSecond+300*KbitPerSecond)/2, b.BtlBw())
	b.updateGains()
	require.Equal(t, 1.0, b.pacingGain)
	for i := range 48 {
		require.True(t, b.ltUseBw, "round %d", i)
		b.roundStart = true
		b.ltSample(false, 0)
	}
	require.False(t, b.ltUseBw, "48 rounds later it probes again")

	// Sampling starts only at a loss: before it a policer's bucket still
	// holds tokens and the rate measured would be the burst's.
	w := newTestBBR()
	w.roundStart = true
	w.ltSample(false, 0)
	require.False(t, w.ltIsSampling, "no loss yet")
	w.ltSample(false, testMSS)
	require.True(t, w.ltIsSampling)
	w.ltSample(true, 0)
	require.False(t, w.ltIsSampling, "an app-limited sample restarts it")

	off := NewBBR(BBRConfig{MSS: testMSS, NoLongTermBandwidth: true})
	off.ltSample(false, testMSS)
	require.False(t, off.ltIsSampling)
}

// A token-bucket policer at 2 Mbit/s on a 10 Mbit/s path: BBR finds it and
// paces near the policed rate.
func TestBBRFindsAPolicer(t *testing.T) {
	b := newTestBBR()
	p := newBBRPath(t, b, testBBRRate, testBBRRTT)
	p.queueLimit = 100
	// Police by dropping what exceeds a 2 Mbit/s token bucket with a
	// 10-packet burst: emulate it with a send-side filter on the path.
	policer := &tokenBucket{rate: 2 * MbitPerSecond, burst: 10 * testMSS, tokens: 10 * testMSS}
	p.police = policer
	found := p.runUntil(20*time.Second, func() bool { return b.ltUseBw })
	require.True(t, found, "the policer is found")
	require.InDelta(t, float64(2*MbitPerSecond), float64(b.BtlBw()), 0.25*float64(2*MbitPerSecond))
}

func TestBBRWindowedMaxFilter(t *testing.T) {
	type sample struct {
		t    uint64
		v    Bandwidth
		want Bandwidth
	}
	cases := []struct {
		name    string
		samples []sample
	}{
		{"a new max replaces everything", []sample{{0, 5, 5}, {1, 3, 5}, {2, 8, 8}, {3, 1, 8}}},
		{"the max expires after the window", []sample{{0, 10, 10}, {3, 4, 10}, {10, 3, 10}, {11, 3, 4}}},
		// Nichols' filter keeps three samples, not all: one in the first
		// quarter of the best's window is not kept.
		{"approximate: early samples are dropped", []sample{{0, 10, 10}, {1, 4, 10}, {10, 3, 10}, {11, 3, 3}}},
		{"the second best takes over", []sample{{0, 10, 10}, {3, 7, 10}, {6, 5, 10}, {11, 2, 7}, {14, 2, 5}}},
		{"all too old: the new sample alone", []sample{{0, 10, 10}, {30, 1, 1}}},
		{"a better second-best replaces second and third", []sample{{0, 10, 10}, {3, 4, 10}, {4, 6, 10}, {11, 1, 6}}},
		{"equal samples refresh", []sample{{0, 10, 10}, {8, 10, 10}, {15, 1, 10}, {19, 1, 1}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var f maxFilter
			for _, s := range tc.samples {
				require.Equal(t, s.want, f.update(10, s.t, s.v), "at t=%d", s.t)
				require.Equal(t, s.want, f.get())
			}
		})
	}
}

// ACK aggregation: ACKs at btlBw's pace leave about one packet of excess;
// a burst after a silence counts whole as excess, and once the pipe is full
// it raises the cwnd target, capped at 100 ms of btlBw.
func TestBBRAckAggregation(t *testing.T) {
	b := newTestBBR()
	b.start(0)
	b.minRTT = testBBRRTT
	b.btlBw.reset(0, testBBRRate) // 1000 bytes per 0.8 ms
	b.cwnd = 200 * testMSS
	valid := rateSample{valid: true}
	at := func(d time.Duration) { b.rate.deliveredTime = clock.Mono(0).Add(d) }
	for i := range 20 {
		at(time.Duration(i) * 800 * time.Microsecond)
		b.updateAckAggregation(valid, testMSS)
	}
	require.Equal(t, testMSS, b.extraAcked[b.extraAckedWinSlot], "ACKs at the bottleneck rate")
	// 10 ms of silence, then 29 packets acknowledged at once.
	at(26 * time.Millisecond)
	for range 29 {
		b.updateAckAggregation(valid, testMSS)
	}
	require.Equal(t, 29*testMSS, b.extraAcked[b.extraAckedWinSlot])
	// One more 1 ms later: btlBw would have delivered 1250 bytes since the
	// burst began; the excess is 28.75 packets, below the max kept.
	at(27 * time.Millisecond)
	b.updateAckAggregation(valid, testMSS)
	require.Equal(t, 29*testMSS, b.extraAcked[b.extraAckedWinSlot])
	require.Zero(t, b.ackAggregationCwnd(), "not before the pipe is full")
	b.fullBwReached = true
	require.Equal(t, 29*testMSS, b.ackAggregationCwnd())
	// Capped at 100 ms of btlBw (125 kB).
	b.extraAcked[0] = 1 << 30
	require.Equal(t, ByteCount(125000), b.ackAggregationCwnd())
	off := NewBBR(BBRConfig{MSS: testMSS, NoAckAggregation: true})
	off.fullBwReached = true
	off.extraAcked[0] = 1 << 20
	require.Zero(t, off.ackAggregationCwnd())
}

// The rate sampler: a flight delivered at the bottleneck's pace gives the
// bottleneck's rate, and the longer of the send and ACK phases is used.
func TestBBRRateSampler(t *testing.T) {
	r := newRateSampler()
	ms := func(n int) clock.Mono { return clock.Mono(0).Add(time.Duration(n) * time.Millisecond) }
	// 10 packets sent at once at t=0, acknowledged 1 ms apart from 40 ms.
	for i := range 10 {
		r.onSent(ms(0), PacketNumber(i), ByteCount(i)*testMSS)
	}
	var last rateSample
	for i := range 10 {
		last = r.onAck(ms(40+i), PacketNumber(i), testMSS, 10*time.Millisecond)
	}
	require.True(t, last.valid)
	require.True(t, last.isAppLimited, "the initial flight is marked app-limited")
	// Delivered 10 packets over 49 ms since the flight began (ACK phase
	// longer than the zero-length send phase).
	require.Equal(t, 49*time.Millisecond, last.interval)
	require.Equal(t, rateOf(10*testMSS, 49*time.Millisecond), last.deliveryRate)
	// A packet whose ACK interval is below minRTT is not a sample.
	r.onSent(ms(50), 10, 0)
	rs := r.onAck(ms(51), 10, testMSS, 10*time.Millisecond)
	require.False(t, rs.valid)
	// Unknown (never sent, or lost) packets are no sample either.
	r.onSent(ms(60), 11, 0)
	r.onLost(11, testMSS)
	require.False(t, r.onAck(ms(100), 11, testMSS, 0).valid)
	require.Equal(t, testMSS, r.lost)
}

// The ring grows when more packets are outstanding than it holds, and the
// records survive the growth.
func TestBBRRateSamplerRingGrows(t *testing.T) {
	r := newRateSampler()
	n := 3 * rateRingInitial
	for i := range n {
		r.onSent(clock.Mono(i), PacketNumber(2*i), ByteCount(i)*testMSS) // gaps in the numbers
	}
	require.GreaterOrEqual(t, len(r.ring), 2*n)
	for i := range n {
		_, ok := r.take(PacketNumber(2 * i))
		require.True(t, ok, "packet %d", 2*i)
	}
}

func TestBBRDeterministic(t *testing.T) {
	trace := func(seed uint64) []ByteCount {
		b := NewBBR(BBRConfig{MSS: testMSS, Seed: seed})
		p := newBBRPath(t, b, testBBRRate, testBBRRTT)
		var w []ByteCount
		for range 30 {
			p.run(50*time.Millisecond, nil)
			w = append(w, b.Window(), ByteCount(b.PacingRate()))
		}
		return w
	}
	require.Equal(t, trace(3), trace(3))
}

func BenchmarkBBROnAck(b *testing.B) { benchOnAck(b, newTestBBR()) }

func BenchmarkBBROnPacketSent(b *testing.B) { benchOnPacketSent(b, newTestBBR()) }
