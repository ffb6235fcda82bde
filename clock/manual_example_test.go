package clock_test

import (
	"fmt"
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// Tests drive fresh's sans-I/O code on a Manual clock: time passes only
// when the test says so, and a deliberately wrong wall clock (WallOffset)
// is one field away.
func ExampleManual() {
	c := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	start := c.Now()
	c.Advance(1500 * time.Millisecond)
	fmt.Println(c.Now().Sub(start), c.Wall().Format(time.TimeOnly))
	c.WallOffset = -2 * time.Second // a clock 2 s behind
	fmt.Println(c.Wall().Format(time.TimeOnly))
	// Output:
	// 1.5s 00:00:01
	// 23:59:59
}
