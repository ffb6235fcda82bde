package owd

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

func TestDispersionPacketPair(t *testing.T) {
	var d dispersion
	// Packets sent 10 ms apart into a queue that serves one per 87 ms: the
	// receiver sees them 87 ms apart, each queued longer than the last.
	const pt = 87 * time.Millisecond
	sent, arr := clock.Mono(0), 100*time.Millisecond
	for pn := cc.PacketNumber(1); pn <= 20; pn++ {
		sent = sent.Add(10 * time.Millisecond)
		arr += pt
		d.onSample(sent, pn, sent, arr-time.Duration(sent), true)
	}
	require.Equal(t, pt, d.packetTime())
}

func TestDispersionIgnoresOneStep(t *testing.T) {
	var d dispersion
	// A path that gets 100 ms longer: one pair 101 ms apart, the rest at
	// their send spacing. Not a packet time.
	sent := clock.Mono(0)
	owd := 50 * time.Millisecond
	for pn := cc.PacketNumber(1); pn <= 100; pn++ {
		sent = sent.Add(time.Millisecond)
		if pn == 50 {
			owd += 100 * time.Millisecond
		}
		d.onSample(sent, pn, sent, owd, pn >= 50)
	}
	require.Zero(t, d.packetTime())
}

func TestDispersionNeedsConsecutivePackets(t *testing.T) {
	var d dispersion
	sent, arr := clock.Mono(0), 100*time.Millisecond
	for i := 1; i <= 20; i++ {
		sent = sent.Add(10 * time.Millisecond)
		arr += 87 * time.Millisecond
		// Every other number: another packet (lost, or skipped) came between.
		d.onSample(sent, cc.PacketNumber(2*i), sent, arr-time.Duration(sent), true)
	}
	require.Zero(t, d.packetTime())
}

// runThin drives c through a 100 kbit/s bottleneck (87 ms a packet, 20 ms
// each way) for n ACKs, as the session does: the sender sends while its
// window allows, at its pacing rate; the bottleneck serves packets in
// order; each ACK returns 20 ms after its packet arrives. It returns the
// 95th percentile of the packets' queueing over the second half, in
// packet times, and the smallest window (bytes) of the second half.
func runThin(c *Controller, n int) (p95, minCwnd float64) {
	const pt = 87 * time.Millisecond
	const prop = 20 * time.Millisecond
	type pkt struct {
		pn   cc.PacketNumber
		sent clock.Mono
		arr  clock.Mono
	}
	var flight []pkt
	var now, free, next clock.Mono // free: bottleneck idle; next: pacer
	var pn cc.PacketNumber
	var queued []float64
	minCwnd = math.Inf(1)
	for acked := 0; acked < n; {
		if acked > n/2 {
			minCwnd = math.Min(minCwnd, c.cwnd)
		}
		canSend := cc.ByteCount(len(flight))*mss < c.Window()
		if canSend && (len(flight) == 0 || !next.After(flight[0].arr.Add(prop))) {
			now = max(now, next)
			pn++
			c.OnPacketSent(now, pn, mss, cc.ByteCount(len(flight))*mss)
			start := max(now.Add(prop), free)
			free = start.Add(pt)
			if acked > n/2 {
				queued = append(queued, float64(start.Sub(now.Add(prop)))/float64(pt))
			}
			flight = append(flight, pkt{pn, now, free})
			if rate := c.PacingRate(); rate > 0 {
				next = now.Add(time.Duration(float64(mss*8) / float64(rate) * float64(time.Second)))
			}
			continue
		}
		p := flight[0]
		flight = flight[1:]
		prior := cc.ByteCount(len(flight)+1) * mss
		now = max(now, p.arr.Add(prop))
		c.OnAck(now, cc.AckSample{PacketNumber: p.pn, Bytes: mss, SentTime: p.sent, OWD: p.arr.Sub(p.sent),
			OWDValid: true, ClockSynced: true, RTT: now.Sub(p.sent), PriorInFlight: prior})
		acked++
	}
	slices.Sort(queued)
	return queued[len(queued)*95/100], minCwnd
}

func TestThinLinkRules(t *testing.T) {
	c := mustNew(New(Config{MSS: mss}))
	p95, minCwnd := runThin(c, 2000)
	pt := c.thinPacketTime(c.active())
	require.InDelta(t, float64(87*time.Millisecond), float64(pt), float64(time.Millisecond), "packet time from dispersion")
	a := c.active()
	tg := c.targets(0)
	require.LessOrEqual(t, tg.mu*float64(a.floored()), thinQueuePackets*float64(pt)+1, "μ is a quarter packet of queueing")
	require.Equal(t, thinGrowthPackets, tg.growth)
	// The bandwidth-delay product is about 1.5 packets (the minimum RTT,
	// 40 ms of propagation and a packet's 87 ms, over 87 ms): the delay
	// floor is 1.2 of it and a slowdown holds half of it.
	bdp := c.rtt.Min().Seconds() / pt.Seconds() * mss
	require.InDelta(t, 1.5*mss, bdp, 0.1*mss)
	require.InDelta(t, thinFloorBDP*bdp, tg.floor, 0.1*mss, "the paced window may fall below 2 packets")
	require.InDelta(t, bdp/2, tg.probe, 0.1*mss)
	require.Less(t, minCwnd, float64(cc.MinWindowPackets*mss), "and it does: the window paces below 2 packets")
	require.GreaterOrEqual(t, c.Window(), cc.ByteCount(cc.MinWindowPackets*mss), "the sending window never goes below 2 packets")

	cfg := Config{MSS: mss}
	cfg.Tuning.DisableThinLink = true
	off := mustNew(New(cfg))
	p95Off, _ := runThin(off, 2000)
	require.Zero(t, off.thinPacketTime(off.active()))
	require.Equal(t, 1.0, off.targets(0).growth)
	require.Equal(t, float64(cc.MinWindowPackets*mss), off.targets(0).floor)
	t.Logf("p95 queueing over the second half: %.2f packet times with the thin-link rules, %.2f without", p95, p95Off)
	require.Less(t, p95, p95Off)
	require.LessOrEqual(t, p95, 2.0)
}

func TestThinLinkNotOnFastLink(t *testing.T) {
	c := mustNew(New(Config{MSS: mss}))
	var d dispersion
	// 1.5 Mbit/s: 5.8 ms per packet, under 4 × MuFloorDelay.
	sent, arr := clock.Mono(0), 100*time.Millisecond
	for pn := cc.PacketNumber(1); pn <= 20; pn++ {
		sent = sent.Add(time.Millisecond)
		arr += 5800 * time.Microsecond
		d.onSample(sent, pn, sent, arr-time.Duration(sent), true)
	}
	c.disp = d
	require.Zero(t, c.thinPacketTime(c.active()))
}

func TestSlowStartDrain(t *testing.T) {
	run := func(disable bool) float64 {
		cfg := noProbe()
		cfg.Tuning.DisableSlowStartDrain = disable
		h := newHarness(mustNew(New(cfg)))
		h.ackN(8, 50*time.Millisecond, 100*time.Millisecond)
		before := h.cwndPackets()
		h.ackN(4, 100*time.Millisecond, 150*time.Millisecond) // OWDcur twice OWDmin: exit
		require.False(t, h.c.Metrics().InSlowStart)
		return h.cwndPackets() / before
	}
	require.InDelta(t, 0.5*(22.0/18), run(false), 0.1, "cut by OWDmin/OWDcur")
	require.Greater(t, run(true), 1.0)
}

func TestFirstSlowdownWithoutRTTSample(t *testing.T) {
	// Slow start ends on a loss before any RTT sample (a long queue ahead
	// of the flow's first packets); the first slowdown must still come.
	h := newHarness(mustNew(New(Config{MSS: mss})))
	h.lose()
	require.False(t, h.c.Metrics().InSlowStart)
	require.False(t, h.c.probe.armed)
	h.ackN(20, 50*time.Millisecond, 100*time.Millisecond)
	require.True(t, h.c.probe.armed)
	h.ackN(400, 50*time.Millisecond, 100*time.Millisecond)
	require.True(t, h.c.probe.done || h.c.mode == modeProbe, "a slowdown ran")
}
