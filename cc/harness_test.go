package cc

import (
	"testing"
	"time"

	"github.com/fresh-udp/fresh/clock"
	"github.com/stretchr/testify/require"
)

// Test units: 1000-byte packets make window arithmetic readable.
const (
	testMSS ByteCount = 1000
	testRTT           = 100 * time.Millisecond
)

// harness drives one Controller the way a sender would: it numbers packets,
// keeps the outstanding ones in send order, counts bytes in flight and moves a
// manual clock. ACKs and losses always take the oldest outstanding packets.
type harness struct {
	t        testing.TB
	c        Controller
	mss      ByteCount
	clk      *clock.Manual
	nextPN   PacketNumber
	sent     []sentPacket // outstanding, oldest first
	inFlight ByteCount
}

type sentPacket struct {
	pn    PacketNumber
	bytes ByteCount
	at    clock.Mono
}

func newHarness(t testing.TB, c Controller, mss ByteCount) *harness {
	return &harness{t: t, c: c, mss: mss, clk: clock.NewManual(time.Unix(0, 0))}
}

func (h *harness) now() clock.Mono { return h.clk.Now() }

func (h *harness) advance(d time.Duration) { h.clk.Advance(d) }

// send sends n full-sized packets regardless of the window.
func (h *harness) send(n int) {
	for range n {
		p := sentPacket{pn: h.nextPN, bytes: h.mss, at: h.now()}
		h.nextPN++
		h.sent = append(h.sent, p)
		h.inFlight += p.bytes
		h.c.OnPacketSent(p.at, p.pn, p.bytes, h.inFlight)
	}
}

// sendWindow sends packets while the controller allows and returns how many.
func (h *harness) sendWindow() int {
	n := 0
	for h.c.CanSend(h.inFlight) {
		h.send(1)
		n++
		require.Less(h.t, n, 1<<20, "CanSend never says no")
	}
	return n
}

// ack acknowledges the n oldest outstanding packets, each with RTT sample rtt.
func (h *harness) ack(n int, rtt time.Duration) {
	require.LessOrEqual(h.t, n, len(h.sent), "acking more than outstanding")
	for range n {
		p := h.sent[0]
		h.sent = h.sent[1:]
		prior := h.inFlight
		h.inFlight -= p.bytes
		h.c.OnAck(h.now(), AckSample{
			PacketNumber:  p.pn,
			Bytes:         p.bytes,
			SentTime:      p.at,
			RTT:           rtt,
			PriorInFlight: prior,
		})
	}
}

// ackFull acknowledges the oldest outstanding packet as a window-limited
// sender would see it: PriorInFlight is at least the window, as if the rest
// of the window were outstanding too.
func (h *harness) ackFull(rtt time.Duration) {
	require.NotEmpty(h.t, h.sent, "nothing outstanding")
	p := h.sent[0]
	h.sent = h.sent[1:]
	prior := max(h.inFlight, h.c.Window())
	h.inFlight -= p.bytes
	h.c.OnAck(h.now(), AckSample{
		PacketNumber:  p.pn,
		Bytes:         p.bytes,
		SentTime:      p.at,
		RTT:           rtt,
		PriorInFlight: prior,
	})
}

// ackAll acknowledges everything outstanding.
func (h *harness) ackAll(rtt time.Duration) { h.ack(len(h.sent), rtt) }

// lose declares the n oldest outstanding packets lost.
func (h *harness) lose(n int) {
	require.LessOrEqual(h.t, n, len(h.sent), "losing more than outstanding")
	for range n {
		p := h.sent[0]
		h.sent = h.sent[1:]
		prior := h.inFlight
		h.inFlight -= p.bytes
		h.c.OnLoss(h.now(), LossEvent{PacketNumber: p.pn, Bytes: p.bytes, SentTime: p.at, PriorInFlight: prior})
	}
}

// roundTrip is one round of an ACK-clocked bulk sender: if nothing is
// outstanding it fills the window; then rtt passes and every packet that was
// outstanding is acknowledged with that RTT, each ACK immediately followed by
// as many new packets as the window allows (which the next round acknowledges).
func (h *harness) roundTrip(rtt time.Duration) {
	if len(h.sent) == 0 {
		h.sendWindow()
	}
	n := len(h.sent)
	h.advance(rtt)
	for range n {
		h.ack(1, rtt)
		h.sendWindow()
	}
}

var baselineNames = []string{"reno", "cubic", "htcp", "rttdelay", "bbr", "copa"}

func TestMetricsDoNotAllocate(t *testing.T) {
	for _, name := range baselineNames {
		c, err := New(name, 0)
		require.NoError(t, err)
		h := newHarness(t, c, DefaultMSS)
		h.roundTrip(testRTT)
		allocs := testing.AllocsPerRun(100, func() { _ = c.Metrics() })
		require.Zero(t, allocs, name)
	}
}

// TestEventsDoNotAllocate drives every event of every baseline directly
// (the harness itself allocates) and counts allocations.
func TestEventsDoNotAllocate(t *testing.T) {
	for _, name := range baselineNames {
		c, err := New(name, 0)
		require.NoError(t, err)
		var pn PacketNumber
		var now clock.Mono
		// Warm up past the first size of any ring a controller keeps
		// (BBR's rate samples).
		for range 1000 {
			now = now.Add(time.Millisecond)
			c.OnPacketSent(now, pn, DefaultMSS, DefaultMSS)
			c.OnAck(now, AckSample{PacketNumber: pn, Bytes: DefaultMSS, SentTime: now, RTT: testRTT, PriorInFlight: DefaultMSS})
			pn++
		}
		allocs := testing.AllocsPerRun(1000, func() {
			now = now.Add(time.Millisecond)
			for range 3 {
				c.OnPacketSent(now, pn, DefaultMSS, c.Window())
				pn++
			}
			c.OnAck(now, AckSample{PacketNumber: pn - 3, Bytes: DefaultMSS, RTT: testRTT, PriorInFlight: c.Window()})
			c.OnAck(now, AckSample{PacketNumber: pn - 2, Bytes: DefaultMSS, RTT: testRTT, PriorInFlight: c.Window()})
			if pn%300 == 0 {
				c.OnLoss(now, LossEvent{PacketNumber: pn - 1, Bytes: DefaultMSS})
			}
			if pn%3000 == 0 {
				c.OnRetransmissionTimeout(now)
			}
			_ = c.CanSend(c.Window()) && c.PacingRate() > 0
			_ = c.Metrics()
		})
		require.Zero(t, allocs, name)
	}
}

func benchOnAck(b *testing.B, c Controller) {
	// Bring the controller out of slow start: send a window, lose one.
	h := newHarness(b, c, DefaultMSS)
	h.sendWindow()
	h.lose(1)
	h.ackAll(testRTT)
	pn := h.nextPN
	now := h.now()
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(10 * time.Microsecond)
		c.OnAck(now, AckSample{
			PacketNumber:  pn,
			Bytes:         DefaultMSS,
			SentTime:      now.Add(-testRTT),
			RTT:           testRTT,
			PriorInFlight: c.Window(),
		})
		pn++
	}
}

func benchOnPacketSent(b *testing.B, c Controller) {
	b.ReportAllocs()
	var pn PacketNumber
	var now int64
	for b.Loop() {
		now += 10_000
		c.OnPacketSent(clock.Mono(now), pn, DefaultMSS, DefaultMSS)
		pn++
	}
}
