package owd

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// pulseLink is a fluid FIFO bottleneck for the pulse test: it serves mu
// bytes/s, holds a standing backlog, and takes cross traffic at z(t)
// bytes/s besides the flow's packets; each packet's one-way delay is prop
// plus the time it waited. The flow sends at its pacing rate.
type pulseLink struct {
	mu   float64
	prop time.Duration
	z    func(t clock.Mono) float64
	dep  clock.Mono // when the flow's last packet left the bottleneck
	last clock.Mono // when it arrived there
}

// drive runs c's pulse test to its verdict over l, for at most d.
func (l *pulseLink) drive(t *testing.T, h *harness, d time.Duration) {
	t.Helper()
	type pending struct {
		at clock.Mono
		s  cc.AckSample
	}
	var acks []pending
	c := h.c
	end := h.now.Add(d)
	next := h.now
	for c.elastic.active && h.now.Before(end) {
		if len(acks) > 0 && !acks[0].at.After(next) {
			h.now = acks[0].at
			c.OnAck(h.now, acks[0].s)
			acks = acks[1:]
			continue
		}
		h.now = next
		h.pn++
		c.OnPacketSent(h.now, h.pn, mss, 0)
		// The cross traffic that came since the flow's last packet is
		// served between the two.
		cross := l.z(h.now) * h.now.Sub(l.last).Seconds()
		l.dep = max(l.dep, h.now).Add(time.Duration((mss + cross) / l.mu * float64(time.Second)))
		l.last = h.now
		owd := l.prop + l.dep.Sub(h.now)
		acks = append(acks, pending{l.dep.Add(l.prop), cc.AckSample{PacketNumber: h.pn, Bytes: mss, SentTime: h.now,
			OWD: owd, OWDValid: true, ClockSynced: true, RTT: 2*l.prop + l.dep.Sub(h.now)}})
		next = h.now.Add(time.Duration(mss * 8 / float64(c.PacingRate()) * float64(time.Second)))
	}
	require.False(t, c.elastic.active, "the test gave its verdict")
}

// pulseConfig turns the pulse test on and the slowdowns off.
func pulseConfig() Config {
	cfg := noProbe()
	cfg.Tuning.ElasticityTest = true
	return cfg
}

// startPulse takes h's controller to congestion avoidance (base one-way
// delay 50 ms) and starts its pulse test, the controller believing the
// bottleneck serves mu bytes/s and the flow gets a twentieth of it. The
// link it returns holds a standing backlog of 50 ms the pulse never
// drains; the caller sets its rate and cross traffic.
func startPulse(h *harness, mu float64) *pulseLink {
	h.toAvoidance()
	h.ackN(200, 50*time.Millisecond, 100*time.Millisecond)
	h.c.quietCopa(h.now) // Copa's test has asked already: it may not start a slowdown mid-test
	h.c.startElasticity(h.now, mu, mu/20, 100*time.Millisecond)
	return &pulseLink{prop: 50 * time.Millisecond, last: h.now, dep: h.now.Add(50 * time.Millisecond)}
}

func pulseHarness(t *testing.T, mu float64) (*harness, *pulseLink) {
	h := newHarness(mustNew(New(pulseConfig())))
	l := startPulse(h, mu)
	require.Equal(t, modeAvoidance, h.c.mode)
	return h, l
}

// ackClocked is cross traffic that takes what h's flow leaves at the
// bottleneck, a round trip (150 ms) later: a buffer filler's window.
func ackClocked(h *harness) func(clock.Mono) float64 {
	return func(now clock.Mono) float64 { return max(pulseMu-h.c.pulseRate(now.Add(-150*time.Millisecond)), 0) }
}

const pulseMu = 1.25e6 // bytes/s: 10 Mbit/s

// Beside ACK-clocked cross traffic, which takes what the flow leaves one
// round trip later (a buffer filler's window), the test answers and the
// flow turns competitive; beside unresponsive traffic at 90 % of the
// link, it does not.
func TestElasticityTellsAFillerFromUnresponsiveTraffic(t *testing.T) {
	for _, tc := range []struct {
		name    string
		z       func(h *harness) func(clock.Mono) float64
		elastic bool
	}{
		{"ACK-clocked", ackClocked, true},
		{"unresponsive", func(*harness) func(clock.Mono) float64 {
			return func(clock.Mono) float64 { return 0.9 * pulseMu }
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, l := pulseHarness(t, pulseMu)
			l.mu, l.z = pulseMu, tc.z(h)
			l.drive(t, h, 10*time.Second)
			t.Logf("H %.2f, share %.2f, SNR %.1f", h.c.elastic.h, h.c.elastic.share, h.c.elastic.snr)
			require.Equal(t, tc.elastic, h.c.mode == modeCompetitive)
			if tc.elastic {
				require.Equal(t, "elastic", h.c.LastModeChange().Reason)
			}
		})
	}
}

// A bottleneck rate that is not the link's rate now (a cellular link
// below its peak) makes the estimator scale the cross traffic with the
// flow's own rate: an answer in phase with the pulse, which Nimbus's
// magnitude test takes for elastic traffic and the phase test does not.
func TestElasticityIgnoresAnInPhaseAnswer(t *testing.T) {
	h, l := pulseHarness(t, 2*pulseMu) // the flow believes the link twice as fast
	l.mu = pulseMu
	l.z = func(clock.Mono) float64 { return 0.9 * pulseMu }
	l.drive(t, h, 10*time.Second)
	t.Logf("H %.2f, share %.2f, SNR %.1f", h.c.elastic.h, h.c.elastic.share, h.c.elastic.snr)
	require.Greater(t, abs(h.c.elastic.h), elasticEta, "an answer as large as the pulse")
	require.NotEqual(t, modeCompetitive, h.c.mode)
}

func abs(x complex128) float64 { return max(real(x), -real(x), imag(x), -imag(x)) }

// A loss during the pulse, with the delay window at the floor, is the
// pulse's own overflow, not a starved loss (two of which switch to CUBIC:
// under CoDel alone the pulses' drops did).
func TestLossDuringThePulseIsNotStarved(t *testing.T) {
	h, _ := pulseHarness(t, pulseMu)
	h.ackN(10, 90*time.Millisecond, 180*time.Millisecond) // a queue: the loss is congestive
	h.c.cwnd = cc.MinWindowPackets * mss                  // the delay window at the floor, as a latecomer's
	h.lose()
	require.True(t, h.c.elastic.active)
	require.True(t, h.c.comp.pendingOverflow, "the buffer did overflow")
	require.False(t, h.c.comp.pendingStarved)
}

// Off by default: the default controller never pulses.
func TestElasticityOffByDefault(t *testing.T) {
	h := newHarness(mustNew(New(Config{MSS: mss})))
	h.toAvoidance()
	h.ackN(1000, 50*time.Millisecond, 100*time.Millisecond)
	h.standingQueue(30*time.Second, 40*time.Millisecond, 80*time.Millisecond, time.Second)
	require.Zero(t, h.c.elastic.start)
}

// The pulse test is the second opinion: it runs only once Copa's test has
// asked for its drain test (comp.quiet), the queue did not empty in the
// last window, and the flow gets under a quarter of the link. Before
// Copa's test asks, a pulse would stand in the way of the drain test the
// switch beside a buffer filler in a short buffer relies on (gap-cubic-1
// in bench/RESULTS.md).
func TestPulseWaitsForCopasTest(t *testing.T) {
	h := newHarness(mustNew(New(pulseConfig())))
	h.toAvoidance()
	h.ackN(200, 50*time.Millisecond, 100*time.Millisecond)
	c := h.c
	c.probe.done = true
	c.disp.old, c.disp.nOld = 800*time.Microsecond, dispersionPairs // 10 Mbit/s for 1000-byte packets
	c.comp.empty.full = 1
	c.cwnd = cc.MinWindowPackets * mss
	c.maybeStartElasticity(h.now)
	require.False(t, c.elastic.active, "Copa's test has not asked")
	c.quietCopa(h.now)
	c.maybeStartElasticity(h.now)
	require.True(t, c.elastic.active)
	require.InDelta(t, 1.25e6, c.elastic.mu, 1)
}

// Under delay noise the packet pairs' smallest gap can make μ far above
// the link's rate; the pulse stays within elasticMaxPulse times the
// flow's own rate (four owd flows with 10 ms of jitter switched on the
// bursts of an uncapped pulse: bench/RESULTS.md).
func TestPulseCappedByTheFlowsRate(t *testing.T) {
	h := newHarness(mustNew(New(pulseConfig())))
	h.toAvoidance()
	h.ackN(200, 50*time.Millisecond, 100*time.Millisecond)
	c := h.c
	c.probe.done, c.comp.empty.full = true, 1
	c.quietCopa(h.now)
	c.disp.old, c.disp.nOld = 8*time.Microsecond, dispersionPairs // a μ of 1 Gbit/s
	c.cwnd = cc.MinWindowPackets * mss
	c.maybeStartElasticity(h.now)
	require.True(t, c.elastic.active)
	require.InDelta(t, elasticMaxPulse*c.elastic.s0, c.elastic.amp, 1)
	require.Less(t, c.elastic.amp, c.elastic.mu/100)
}
