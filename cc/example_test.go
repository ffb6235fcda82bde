package cc_test

import (
	"fmt"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// A controller is built by name and driven with events that carry the
// time: here CUBIC over a 50-ms path that acknowledges every packet one
// round trip after it was sent (slow start doubles the window from 10
// packets each round trip), then loses one (β = 0.7, RFC 9438 §4.6).
func ExampleNew() {
	const mss = 1200
	c, err := cc.New("cubic", mss)
	if err != nil {
		panic(err)
	}
	var now clock.Mono
	var pn cc.PacketNumber
	rtt := 50 * time.Millisecond
	for range 4 { // four round trips, each sending what the window allows
		var inFlight cc.ByteCount
		var sent []cc.PacketNumber
		for c.CanSend(inFlight) {
			pn++
			inFlight += mss
			c.OnPacketSent(now, pn, mss, inFlight)
			sent = append(sent, pn)
		}
		sentAt, prior := now, inFlight
		now = now.Add(rtt)
		for _, p := range sent { // one ACK frame for the round
			c.OnAck(now, cc.AckSample{PacketNumber: p, Bytes: mss, SentTime: sentAt, RTT: rtt, PriorInFlight: prior})
		}
	}
	fmt.Printf("%s after 4 round trips: %d packets, slow start %v\n", c.Name(), c.Window()/mss, c.Metrics().InSlowStart)
	c.OnLoss(now, cc.LossEvent{PacketNumber: pn, Bytes: mss, SentTime: now.Add(-rtt), PriorInFlight: c.Window()})
	fmt.Printf("after a loss: %d packets\n", c.Window()/mss)
	// Output:
	// cubic after 4 round trips: 160 packets, slow start true
	// after a loss: 112 packets
}
