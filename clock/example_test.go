package clock_test

import (
	"fmt"
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// The receiver of a flow records every data packet's (send stamp, arrival
// stamp) and every completed round trip, and asks for one-way delays. Here
// the receiver's clock is 500 ms ahead and the paths take 20 ms each way.
func ExampleInband() {
	est, err := clock.NewInband(clock.InbandConfig{})
	if err != nil {
		panic(err)
	}
	const ms = clock.Stamp(1000) // a Stamp is in µs
	start := clock.StampOf(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	for i := range clock.Stamp(1000) { // 10 s, a packet every 10 ms
		t1 := start + i*10*ms // data sent, sender clock
		t2 := t1 + 520*ms     // data received, receiver clock (+500 ms)
		t3 := t2 + 1*ms       // ACK sent, receiver clock
		t4 := t3 - 480*ms     // ACK received, sender clock
		if err := est.AddExchange(t1, t2, t3, t4); err != nil {
			panic(err)
		}
	}
	owd, ok := est.OWD(start+10_000*ms, start+10_525*ms) // a packet queued 5 ms
	fmt.Println(owd, ok, est.Offset(start+10_000*ms), est.Status().ErrorBound)
	// Output: 25ms true 500ms 20ms
}
