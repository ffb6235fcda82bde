package acp_test

import (
	"fmt"
	"time"

	"github.com/fresh-udp/fresh/acp"
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// The regulator sets the rate of status updates that keeps the monitor's
// information freshest. Here a path serves one update every 10 ms (100
// a second) behind 20 ms each way; updates sent faster would only queue
// and age, slower would leave the monitor waiting. The source always has
// a new reading, and the regulator decides when to send it.
func ExampleNewPolicy() {
	p, err := acp.NewPolicy(acp.PolicyACP, acp.Config{})
	if err != nil {
		panic(err)
	}
	const service, oneWay = 10 * time.Millisecond, 20 * time.Millisecond
	type update struct {
		pn     cc.PacketNumber
		sent   clock.Mono
		ackAt  clock.Mono
		served clock.Mono
	}
	var (
		now      clock.Mono
		pn       cc.PacketNumber
		busy     clock.Mono // when the path's server is free
		inFlight []update
	)
	for now < clock.Mono(30*time.Second) {
		next := max(p.NextSendTime(), now)
		if len(inFlight) > 0 && inFlight[0].ackAt <= next {
			u := inFlight[0]
			inFlight = inFlight[1:]
			now = u.ackAt
			p.OnAck(now, cc.AckSample{PacketNumber: u.pn, Bytes: 100, SentTime: u.sent,
				RTT: u.ackAt.Sub(u.sent), OWD: u.served.Sub(u.sent) + oneWay, OWDValid: true, ClockSynced: true})
			continue
		}
		now = next
		pn++
		p.OnUpdateSent(now, pn, now)
		served := max(busy, now).Add(service)
		busy = served
		inFlight = append(inFlight, update{pn: pn, sent: now, served: served, ackAt: served.Add(2 * oneWay)})
	}
	fmt.Printf("%s settles near %.0f updates/s on a path that serves 100/s\n", p.Name(), float64(p.Rate()))
	// Output: acp settles near 98 updates/s on a path that serves 100/s
}
