package cc

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestHystartThreshold(t *testing.T) {
	tests := []struct {
		lastRoundMin, want time.Duration
	}{
		{10 * time.Millisecond, 4 * time.Millisecond},      // 1.25 ms raised to 4 ms
		{32 * time.Millisecond, 4 * time.Millisecond},      // exactly 4 ms
		{100 * time.Millisecond, 12500 * time.Microsecond}, // RTT/8
		{400 * time.Millisecond, 16 * time.Millisecond},    // 50 ms capped at 16 ms
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, hystartThreshold(tc.lastRoundMin), "lastRoundMinRTT %v", tc.lastRoundMin)
	}
}

// hystartRound feeds one round of n ACKs with RTT rtt to h, numbering the
// packets from *pn; the round's packets are "sent" as they are acked, so the
// next round starts with the ACK after the last one.
func hystartRound(h *hystart, pn *PacketNumber, n int, rtt time.Duration) (exit bool) {
	end := *pn + PacketNumber(n) - 1
	for range n {
		if h.onAck(*pn, rtt, end) {
			exit = true
		}
		*pn++
	}
	return exit
}

func TestHystartRules(t *testing.T) {
	t.Run("needs N_RTT_SAMPLE samples", func(t *testing.T) {
		h := newHystart()
		var pn PacketNumber
		hystartRound(&h, &pn, 10, 100*time.Millisecond)
		end := pn + 9 // a round of 10 packets at 200 ms
		for range 7 {
			h.onAck(pn, 200*time.Millisecond, end)
			pn++
		}
		require.False(t, h.inCSS, "7 < N_RTT_SAMPLE samples")
		h.onAck(pn, 200*time.Millisecond, end)
		require.True(t, h.inCSS, "8th sample")
	})
	t.Run("increase below the threshold", func(t *testing.T) {
		h := newHystart()
		var pn PacketNumber
		hystartRound(&h, &pn, 10, 100*time.Millisecond)
		hystartRound(&h, &pn, 10, 112*time.Millisecond) // +12 ms < 12.5 ms
		require.False(t, h.inCSS)
		hystartRound(&h, &pn, 10, 125*time.Millisecond) // +13 ms < 112/8 = 14 ms
		require.False(t, h.inCSS)
		hystartRound(&h, &pn, 10, 141*time.Millisecond) // +16 ms >= 125/8 = 15.6 ms
		require.True(t, h.inCSS)
		require.Equal(t, 141*time.Millisecond, h.cssBaselineMinRTT)
	})
	t.Run("spurious exit resumes slow start", func(t *testing.T) {
		h := newHystart()
		var pn PacketNumber
		hystartRound(&h, &pn, 10, 100*time.Millisecond)
		hystartRound(&h, &pn, 10, 120*time.Millisecond)
		require.True(t, h.inCSS)
		hystartRound(&h, &pn, 10, 119*time.Millisecond) // below the 120 ms baseline
		require.False(t, h.inCSS)
	})
	t.Run("CSS lasts CSS_ROUNDS rounds", func(t *testing.T) {
		h := newHystart()
		var pn PacketNumber
		hystartRound(&h, &pn, 10, 100*time.Millisecond)
		require.False(t, hystartRound(&h, &pn, 10, 120*time.Millisecond)) // CSS, partial round 1
		for round := 2; round <= 5; round++ {
			require.False(t, hystartRound(&h, &pn, 10, 120*time.Millisecond), "round %d", round)
			require.True(t, h.inCSS)
		}
		require.True(t, h.onAck(pn, 120*time.Millisecond, pn+10), "5 CSS rounds complete")
	})
}

func TestHystartOffByDefault(t *testing.T) {
	r, h := newTestReno(t, 10)
	rtt := testRTT
	for _, want := range []ByteCount{20, 40, 80, 160} {
		h.roundTrip(rtt)
		rtt += 50 * time.Millisecond // a growing queue: HyStart++ would stop
		require.Equal(t, want*testMSS, r.Window())
	}
}

// TestCubicHystart: a CUBIC flow with HyStart++ doubles per round at the base
// RTT, grows by a quarter per round in CSS once the RTT rises by more than
// 12.5 ms, enters congestion avoidance after 5 CSS rounds without a loss and
// starts its epoch with K = 0 and W_max = cwnd_epoch (RFC 9438 §4.10).
func TestCubicHystart(t *testing.T) {
	c := NewCubic(CubicConfig{MSS: testMSS, HyStart: true})
	h := newHarness(t, c, testMSS)
	for _, want := range []ByteCount{20, 40, 80} {
		h.roundTrip(testRTT)
		require.Equal(t, want*testMSS, c.Window())
	}
	// The RTT rises by 20 ms > 100/8 ms. The round's first ACK starts a new
	// HyStart++ round; CSS starts at its 8th sample, so this round grows 7
	// packets at the full rate and 73 at a quarter.
	rtt := 120 * time.Millisecond
	h.roundTrip(rtt)
	require.True(t, c.lw.hystart.inCSS)
	require.Equal(t, 80*testMSS+7*testMSS+73*testMSS/4, c.Window())
	require.True(t, c.Metrics().InSlowStart)
	// That partial round is CSS round 1; rounds 2–5 are whole.
	for range 4 {
		before := len(h.sent)
		win := c.Window()
		h.roundTrip(rtt)
		require.Equal(t, win+ByteCount(before)*testMSS/4, c.Window(), "CSS: +MSS/4 per ACK")
	}
	cssEnd := c.Window()
	// The next round's first ACK completes 5 CSS rounds: ssthresh = cwnd,
	// and that ACK already starts the CUBIC epoch.
	h.advance(rtt)
	h.ack(1, rtt)
	m := c.Metrics()
	require.False(t, m.InSlowStart)
	require.False(t, m.InRecovery)
	require.Equal(t, cssEnd, m.Ssthresh)
	require.False(t, c.lw.useHyStart)
	require.True(t, c.inEpoch)
	require.Zero(t, c.k)
	cwndEpoch := float64(cssEnd) / float64(testMSS)
	require.InDelta(t, cwndEpoch, c.wMax, 1e-9, "W_max = cwnd_epoch")
	require.InDelta(t, cwndEpoch, c.cwndPrior, 1e-9, "cwnd_prior = cwnd_epoch")
}

func TestHystartDisabledByLoss(t *testing.T) {
	r := NewReno(RenoConfig{MSS: testMSS, HyStart: true})
	h := newHarness(t, r, testMSS)
	h.roundTrip(testRTT)
	h.roundTrip(120 * time.Millisecond) // into CSS
	require.True(t, r.lw.hystart.inCSS)
	h.lose(1)
	require.False(t, r.lw.useHyStart)
	require.Equal(t, r.Metrics().Ssthresh, r.Window())

	// After a timeout, slow start is standard: full doubling at rising RTT.
	r.OnRetransmissionTimeout(h.now())
	h.lose(len(h.sent))
	for _, want := range []ByteCount{2, 4, 8} {
		h.roundTrip(200 * time.Millisecond)
		require.Equal(t, want*testMSS, r.Window())
	}
}
