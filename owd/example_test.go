package owd_test

import (
	"fmt"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	_ "github.com/fresh-udp/fresh/owd" // registers "owd"
)

// owd reads the one-way delays its receiver stamps on the ACKs: it grows
// its window while they stay at the path's floor and stops where the
// queue it builds passes its target. Here a 10 Mbit/s path, 20 ms each
// way (a bandwidth-delay product of about 42 packets of 1200 bytes), in
// a model where each round trip's packets queue behind the window's
// excess over that product.
func Example() {
	const mss = 1200
	const base = 40 * time.Millisecond
	perPacket := time.Duration(mss*8) * time.Second / 10_000_000 // serialisation at 10 Mbit/s
	bdp := cc.ByteCount(base / perPacket * mss)
	c, err := cc.New("owd", mss)
	if err != nil {
		panic(err)
	}
	var now clock.Mono
	var pn cc.PacketNumber
	var queue time.Duration
	for now < clock.Mono(10*time.Second) {
		var inFlight cc.ByteCount
		var sent []cc.PacketNumber
		for c.CanSend(inFlight) {
			pn++
			inFlight += mss
			c.OnPacketSent(now, pn, mss, inFlight)
			sent = append(sent, pn)
		}
		queue = time.Duration(max(inFlight-bdp, 0)/mss) * perPacket
		sentAt := now
		now = now.Add(base + queue)
		for _, p := range sent { // one ACK frame for the round
			c.OnAck(now, cc.AckSample{PacketNumber: p, Bytes: mss, SentTime: sentAt, RTT: base + queue,
				OWD: base/2 + queue, OWDValid: true, ClockSynced: true, PriorInFlight: inFlight})
		}
	}
	fmt.Printf("after 10 s: window %d packets (the path holds %d), queue %v, mode %s\n",
		c.Window()/mss, bdp/mss, queue.Round(time.Millisecond), c.Metrics().Mode)
	// Output: after 10 s: window 40 packets (the path holds 41), queue 0s, mode avoidance
}
