package recovery

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// Skips come at unpredictable intervals around skipPeriod, are remembered,
// are never handed out as packet numbers, and differ between seeds.
func TestSkippedNumbers(t *testing.T) {
	sent := func(seed uint64) (*Tracker, map[cc.PacketNumber]bool) {
		tr := New()
		tr.EnableSkipping(seed)
		got := map[cc.PacketNumber]bool{}
		for i := range 20_000 {
			pn := tr.OnSent(at(i), 100, 0, 0, 0)
			got[pn] = true
			tr.Ack(pn)
			tr.Compact()
		}
		return tr, got
	}
	tr, got := sent(1)
	// 20 000 packets, one skip per 128..383: 52..156 skips; the last
	// keepSkipped are remembered (everything else is acknowledged).
	require.Len(t, tr.Skipped(), keepSkipped)
	n := int(tr.Next()) - len(got)
	require.InDelta(t, 20_000/skipPeriod, n, 30, "skips")
	prev := cc.PacketNumber(-1)
	for _, s := range tr.Skipped() {
		require.False(t, got[s], "skipped %d was sent", s)
		require.Greater(t, s-prev, cc.PacketNumber(skipPeriod/2), "gap")
		prev = s
		require.True(t, tr.SkippedIn(s, s))
		require.True(t, tr.SkippedIn(s-10, s+10))
		require.False(t, tr.SkippedIn(s+1, s+skipPeriod/2))
	}
	tr2, _ := sent(2)
	require.NotEqual(t, tr.Skipped(), tr2.Skipped(), "another seed, other skips")

	plain := New()
	for i := range 1000 {
		require.Equal(t, cc.PacketNumber(i), plain.OnSent(at(i), 100, 0, 0, 0), "no skipping unless enabled")
	}
}

// A skipped number is not a packet: it is never declared lost, and it does
// not count towards the packet threshold (RFC 9002 §6.1.1), which counts
// packets sent after the one in question. Packets p, (skip), p+2, p+3:
// when p+3 is acknowledged only 2 packets were sent after p, so p is not
// yet lost; counting numbers instead would have declared it.
func TestSkipIsNoLoss(t *testing.T) {
	tr := New()
	tr.EnableSkipping(7)
	tr.RTT().Update(100 * time.Millisecond) // 100 ms: the time threshold stays out of it
	var skip cc.PacketNumber = -1
	for i := 0; skip < 0; i++ {
		pn := tr.OnSent(at(0), 100, 0, 0, 0)
		if pn != cc.PacketNumber(i) {
			skip = cc.PacketNumber(i)
		}
		i = int(pn)
	}
	// Everything before p = skip−1 is acknowledged; p, skip+1, skip+2 follow.
	p := skip - 1
	for pn := tr.Base(); pn < p; pn++ {
		tr.Ack(pn)
	}
	for tr.Next() <= skip+2 {
		tr.OnSent(at(0), 100, 0, 0, 0)
	}
	var lost []cc.PacketNumber
	rec := func(_ clock.Mono, pn cc.PacketNumber, _ *Packet) { lost = append(lost, pn) }
	_, ok := tr.Ack(skip + 2)
	require.True(t, ok)
	tr.DetectLost(at(1), rec)
	require.Empty(t, lost, "only 2 packets were sent after p")
	_, ok = tr.Ack(skip)
	require.False(t, ok, "a skipped number is not in flight")
	// One more packet later acknowledged: now 3 were sent after p.
	q := tr.OnSent(at(0), 100, 0, 0, 0)
	tr.Ack(q)
	tr.DetectLost(at(1), rec)
	require.Equal(t, []cc.PacketNumber{p}, lost, "skip+1 has only 2 packets after it")
	// The RTO declares only packets lost, never the skip.
	lost = lost[:0]
	tr.OnSent(at(2), 100, 0, 0, 0)
	tr.OnRTO(at(5000), rec)
	require.NotContains(t, lost, skip)
}
