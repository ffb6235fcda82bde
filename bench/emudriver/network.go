package emudriver

import (
	"github.com/fresh-udp/fresh/bench/netem"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/transport"
)

// network is the emulated path a run's flows cross: the userspace relay
// (relayNet, loopback UDP) or the TUN router between two network
// namespaces (tunNet). The driver owns the flows' endpoints and
// goroutines; the network opens the server side, connects each flow
// through the bottleneck, applies path changes and says how busy the
// links were.
type network interface {
	// driverName labels the result (report.Run.Driver).
	driverName() string
	// open starts the emulator and the server side: the Listener of every
	// fresh flow (d.listener), with config lcfg.
	open(lcfg transport.Config) error
	// setupFlow connects one flow through the path before time zero.
	setupFlow(f *flowRun) error
	// startFlow starts the goroutines of the flow kinds the driver does
	// not run itself (iperf3, telemetry).
	startFlow(f *flowRun)
	// finish waits, after the scenario's end, for what still has to
	// report (iperf3 clients), briefly.
	finish()
	// setPath applies a scheduled change.
	setPath(forward, reverse *scenario.PathChange) error
	// busy is each direction's link counters so far (busy time:
	// LinkStats.BusySince).
	busy() [2]netem.LinkStats
	// close stops the emulator and whatever the network started.
	close()
}
