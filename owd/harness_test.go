package owd

import (
	"testing"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

const mss = 1000

// harness drives one controller with a manual clock: every ack() sends one
// packet and acknowledges it, carrying the given delay samples.
type harness struct {
	c   *Controller
	now clock.Mono
	pn  cc.PacketNumber
	// step is how far the clock moves per ACK.
	step time.Duration
	// appLimited makes ACKs report a nearly empty pipe.
	appLimited bool
	// t and onModeChange are for the drives of mode_test.go.
	t            *testing.T
	onModeChange func(modeChange)
}

func newHarness(c *Controller) *harness {
	return &harness{c: c, step: time.Millisecond}
}

// ack acknowledges one fresh packet with a trusted OWD and the given RTT.
func (h *harness) ack(owd, rtt time.Duration) {
	h.ackSample(cc.AckSample{OWD: owd, OWDValid: true, ClockSynced: true, RTT: rtt})
}

func (h *harness) ackSample(s cc.AckSample) {
	h.now = h.now.Add(h.step)
	h.pn++
	inFlight := h.c.Window()
	if h.appLimited {
		inFlight = mss
	}
	h.c.OnPacketSent(h.now, h.pn, max(s.Bytes, mss), inFlight)
	s.PacketNumber = h.pn
	if s.Bytes == 0 {
		s.Bytes = mss
	}
	s.SentTime = h.now
	s.PriorInFlight = inFlight
	h.c.OnAck(h.now, s)
}

// ackN acknowledges n packets with the same samples.
func (h *harness) ackN(n int, owd, rtt time.Duration) {
	for range n {
		h.ack(owd, rtt)
	}
}

// lose declares the next packet number lost (sent now, lost now).
func (h *harness) lose() {
	h.pn++
	h.c.OnPacketSent(h.now, h.pn, mss, h.c.Window())
	h.c.OnLoss(h.now, cc.LossEvent{PacketNumber: h.pn, Bytes: mss, SentTime: h.now, PriorInFlight: h.c.Window()})
}

// toAvoidance takes a fresh controller out of slow start through the early
// OWD exit: base delay 50 ms, then 4 samples at 60 ms (10 ms queueing >
// clamp(50/8, 4, 16) = 6.25 ms). OWDv_max is then 0.2 and μ = 0.1.
func (h *harness) toAvoidance() {
	h.ackN(8, 50*time.Millisecond, 100*time.Millisecond)
	h.ackN(4, 60*time.Millisecond, 110*time.Millisecond)
}

func (h *harness) cwndPackets() float64 { return h.c.cwnd / mss }
