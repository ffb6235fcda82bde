// Command demo is fresh's main demonstration: in one process, an IoT agent
// uploads a file over a 2 Mbit/s, 40 ms bottleneck while it keeps a monitor
// updated with sensor readings, once with fresh's one-way-delay controller
// ("owd") and once with CUBIC, and compares what each costs the freshness of
// the readings.
//
//	go run ./examples/demo
//
// It needs no root and no network beyond loopback: the bottleneck is
// bench/emu's userspace relay, a UDP relay on 127.0.0.1 that passes every
// datagram through an emulated link (rate, FIFO queue, delay, loss), both
// ways. The topology of each phase:
//
//	agent (transport.Dial) ──▶ emu.Relay [2 Mbit/s, 20 ms, FIFO] ──▶ monitor (transport.Listen)
//	                       ◀──           [2 Mbit/s, 20 ms, FIFO] ◀──
//
// The connections are TLS 1.3 as fresh's always are unless told otherwise;
// both ends share a throwaway certificate for localhost made in memory at
// start (transport/devcert.Loopback), so the demo needs no files. The relay
// forwards the encrypted datagrams without reading them.
//
// In each phase the agent opens a new connection with one congestion
// controller and, for -duration:
//
//   - samples a sensor at -hz (200 Hz by default) and hands every reading, a
//     small JSON object, to Conn.SendUpdate. SendUpdate never blocks: the
//     newest reading replaces one not yet sent, and the Age Control Protocol
//     decides how many readings per second go out (at most -hz), marked CS7;
//   - writes random bytes to the stream as fast as the controller lets it
//     (a file upload that never ends).
//
// The monitor reads both. Once a second the demo prints, per phase: elapsed
// time, the upload's goodput as the monitor reads it, the agent's smoothed
// RTT, the one-way delays its controller sees (OWDmin/OWDcur, marked "rtt"
// while they are still derived from the RTT), the monitor's in-band estimate
// of the clock offset those one-way delays are corrected with (both ends
// share one clock here, so the truth is 0 and the column is the estimator's
// error), its congestion window, ACP's current rate, the updates the monitor
// received per second and their mean age over that second (the time average
// of now − generation time). The header gives the true minimum one-way delay
// of a full datagram (propagation plus serialisation) to compare with.
//
// Why 200 readings per second become some 25 updates: SendUpdate never
// queues. ACP sends only the freshest reading not yet sent, at the rate that
// keeps the monitor's view freshest on this path (a few per round trip); the
// readings in between are superseded (Stats.UpdatesSuperseded). The end of
// the run counts readings offered, sent, superseded and lost per phase.
//
// At the end a table puts the controllers side by side: goodput, mean and
// 95th-percentile age of the monitor's view (transport.Stats.Age), SRTT,
// packets lost and retransmitted, and the relay's forward queue (largest
// backlog, overflow drops, link utilisation).
//
// The queue is a FIFO of -queue packets; 0 sizes it to one bandwidth-delay
// product of full datagrams, which the demo states on its first line. With
// the defaults: 2e6 bit/s · 0.040 s / 8 / 1480 bytes ≈ 7 packets (a datagram
// is 1452 bytes of UDP payload, once path MTU discovery has reached the
// default ceiling, plus 28 of IPv4 and UDP headers).
//
// Flags:
//
//	-rate 2Mbps       bottleneck rate, each way, bits/s (2Mbps, 10M, 500k, 10 Mbit/s)
//	-rtt 40ms         round-trip propagation delay (half each way)
//	-queue 0          FIFO limit in packets, each way (0: one BDP)
//	-loss 0           random loss probability per packet, forward path (0..1)
//	-duration 12s     length of each phase
//	-cc owd,cubic     controllers to run, one phase each, in order
//	-hz 200           sensing rate: readings per second offered to SendUpdate
//	-seed 1           seed of the relay's random loss and of the upload's bytes
//	-v                debug logs (log/slog) of transport and relay on stderr
//
// Ctrl-C ends the current phase early; the table then covers what ran.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		os.Exit(2)
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(os.Stderr, "demo: interrupted")
		os.Exit(130)
	default:
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// errUsage marks a bad command line (the flag package has printed why).
var errUsage = errors.New("usage")
