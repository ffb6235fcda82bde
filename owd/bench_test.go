package owd

import (
	"testing"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

func benchmarkOnAck(b *testing.B, c *Controller) {
	var now clock.Mono
	pn := cc.PacketNumber(0)
	b.ReportAllocs()
	for i := range b.N {
		now = now.Add(100 * time.Microsecond)
		pn++
		c.OnPacketSent(now, pn, mss, c.Window())
		// Queueing oscillates between 0 and 15 ms so every rule runs.
		owd := 50*time.Millisecond + time.Duration(i%16)*time.Millisecond
		c.OnAck(now, cc.AckSample{PacketNumber: pn, Bytes: mss, SentTime: now, RTT: 2 * owd,
			OWD: owd, OWDValid: true, ClockSynced: true, PriorInFlight: c.Window()})
		if i%1000 == 999 {
			pn++
			c.OnLoss(now, cc.LossEvent{PacketNumber: pn, Bytes: mss})
		}
	}
}

func BenchmarkOWDEq2OnAck(b *testing.B) { benchmarkOnAck(b, mustNew(NewEq2(Config{MSS: mss}))) }
func BenchmarkOWDEq7OnAck(b *testing.B) { benchmarkOnAck(b, mustNew(New(Config{MSS: mss}))) }

func BenchmarkOWDOnPacketSent(b *testing.B) {
	c := mustNew(New(Config{MSS: mss}))
	var now clock.Mono
	b.ReportAllocs()
	for i := range b.N {
		c.OnPacketSent(now, cc.PacketNumber(i), mss, c.Window())
	}
}

func BenchmarkOWDMetrics(b *testing.B) {
	c := mustNew(New(Config{MSS: mss}))
	b.ReportAllocs()
	for range b.N {
		_ = c.Metrics()
	}
}
