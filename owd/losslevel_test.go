package owd

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
)

func lossLevelCfg(on bool) Config {
	cfg := noProbe()
	cfg.Tuning.DisableLossLevelTest = !on
	cfg.Tuning.DisableCompetitiveMode = true
	return cfg
}

// driveLosses runs n packets with the queue empty (OWD 50 ms, RTT 100 ms),
// losing one in every 20 (5 %, above freeLossRate) of those sent while
// lossy says so, and returns what the last loss cost: the window after it
// ÷ the window before.
func driveLosses(h *harness, n int, lossy func(cwndPackets float64) bool) (cost float64) {
	cost = 1
	for i := range n {
		if i%20 == 19 && lossy(h.cwndPackets()) {
			before := h.cwndPackets()
			h.lose()
			cost = h.cwndPackets() / before
			continue
		}
		h.ack(50*time.Millisecond, 100*time.Millisecond)
	}
	return cost
}

// Random loss takes the same share of packets below the window at which
// losses cut it as above: once that is seen, a loss with the queue empty
// stays free above freeLossRate. Without the test every such loss costs
// ×0.9.
func TestRandomLossStaysFreeAboveTheRateCap(t *testing.T) {
	always := func(float64) bool { return true }

	h := newHarness(mustNew(New(lossLevelCfg(true))))
	h.toAvoidance()
	h.ackN(200, 50*time.Millisecond, 100*time.Millisecond)
	driveLosses(h, 6000, always)
	require.Greater(t, h.c.lossRate, freeLossRate, "5 % lost: above the cap")
	require.True(t, h.c.levels.random(), "as many lost below the level as above it")
	before := h.cwndPackets()
	require.Equal(t, 1.0, driveLosses(h, 20, always), "a random loss above the cap is free")
	require.False(t, h.c.Metrics().InRecovery)
	require.GreaterOrEqual(t, h.cwndPackets(), before)

	off := newHarness(mustNew(New(lossLevelCfg(false))))
	off.toAvoidance()
	off.ackN(200, 50*time.Millisecond, 100*time.Millisecond)
	driveLosses(off, 6000, always)
	require.InDelta(t, 0.9, driveLosses(off, 20, always), 1e-9, "without the test: ×0.9")
}

// A buffer too shallow to show as delay overflows only above the window
// the path holds: below the level losses cut it at, nothing is lost. Such
// losses keep costing ×0.9 above the rate cap.
func TestOverflowLossFollowsTheWindow(t *testing.T) {
	h := newHarness(mustNew(New(lossLevelCfg(true))))
	h.toAvoidance()
	h.ackN(200, 50*time.Millisecond, 100*time.Millisecond)
	full := h.cwndPackets() + 5 // the path (pipe and buffer) holds this many packets
	overflow := func(w float64) bool { return w >= full }
	cuts := 0
	for range 300 {
		if driveLosses(h, 20, overflow) < 1 {
			cuts++
		}
	}
	require.Positive(t, cuts)
	require.False(t, h.c.levels.random(), "nothing lost below the level: the losses follow the window")
	require.Less(t, h.cwndPackets(), full+3, "the window stays near what the path holds")
}

// A queue of one packet on a slow, long path stands above μ's floor; with
// the test on it is no queue a buffer overflows at, and a loss then is
// random (free while losses are rare), not a halving. While the packet
// time is unknown, μ alone decides.
func TestOnePacketOfQueueIsShort(t *testing.T) {
	for _, tc := range []struct {
		on, known bool
		factor    float64
	}{{true, true, 1}, {false, true, 0.5}, {true, false, 0.5}} {
		h := newHarness(mustNew(New(lossLevelCfg(tc.on))))
		h.step = 20 * time.Millisecond
		// Base 200 ms; slow start ends at 220 ms (μ = 0.05, 10 ms).
		h.ackN(8, 200*time.Millisecond, 400*time.Millisecond)
		h.ackN(4, 220*time.Millisecond, 440*time.Millisecond)
		h.ackN(40, 200*time.Millisecond, 400*time.Millisecond)
		if tc.known {
			// The packet pairs measured a 7 ms packet time (1.1 Mbit/s).
			h.c.disp.cur, h.c.disp.nCur = 7*time.Millisecond, dispersionPairs
		}
		// 12 ms of queue: above μ, under two packet times.
		h.ackN(4, 212*time.Millisecond, 412*time.Millisecond)
		before := h.cwndPackets()
		h.lose()
		require.InDelta(t, before*tc.factor, h.cwndPackets(), 1e-6, "loss level test %v, packet time known %v", tc.on, tc.known)
	}
}

// Once the losses are seen to be random, a loss costs nothing even with
// the queue above μ (the delay rule holds the queue), except at the
// window's floor, where the queue judges it as before (starved losses).
func TestRandomLossWithAQueueIsFreeAboveTheFloor(t *testing.T) {
	always := func(float64) bool { return true }
	for _, on := range []bool{true, false} {
		h := newHarness(mustNew(New(lossLevelCfg(on))))
		h.toAvoidance()
		h.ackN(200, 50*time.Millisecond, 100*time.Millisecond)
		driveLosses(h, 6000, always)
		require.Equal(t, on, h.c.levels.random())
		// 10 ms of queue: OWDv 0.2, above 2μ.
		h.ackN(4, 60*time.Millisecond, 110*time.Millisecond)
		before := h.cwndPackets()
		require.Greater(t, before, float64(cc.MinWindowPackets+competeFloorSlack))
		h.lose()
		if on {
			require.Equal(t, before, h.cwndPackets(), "a random loss is free whatever the queue")
			require.False(t, h.c.Metrics().InRecovery)
		} else {
			require.InDelta(t, before/2, h.cwndPackets(), 1e-6, "the queue judges: a halving")
		}
	}

	h := newHarness(mustNew(New(lossLevelCfg(true))))
	h.toAvoidance()
	h.ackN(200, 50*time.Millisecond, 100*time.Millisecond)
	driveLosses(h, 6000, always)
	require.True(t, h.c.levels.random())
	h.ackN(4, 60*time.Millisecond, 110*time.Millisecond)
	h.c.cwnd = (cc.MinWindowPackets + competeFloorSlack) * mss
	h.lose()
	require.True(t, h.c.Metrics().InRecovery, "at the floor the queue judges the loss")
}
