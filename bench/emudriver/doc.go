// Package emudriver runs a scenario (bench/scenario) in real time through
// one emulated bottleneck and reports it as bench/sim does (report.Run):
// with real fresh endpoints over loopback UDP through the userspace relay
// (bench/emu.Relay, driver "emu": `freshbench emu --relay`, no root), or
// with every flow between two network namespaces through the TUN router
// (bench/emu.TUN, driver "emu-tun": `freshbench emu --tun`, root only),
// where kernel TCP (iperf3 flows) and telemetry flows run too.
//
// The emulated path is a network (relayNet, tunNet): it opens the server
// side, connects each flow through the bottleneck, applies the scenario's
// changes and reports the links' busy time; the flows' endpoints and
// goroutines (bulk writers and readers, update sources and monitors, cbr
// senders and sinks), the clock, the sampling and the result are the
// driver's, the same for both. The sections below up to "The TUN router"
// describe the relay.
//
// # Topology
//
//	forward flows: client Conn ───────────▶ relay ─▶ shim ─▶ proxy ─▶ Listener (server Conns)
//	reverse flows: client Conn ─▶ tap ────▶ relay ─▶ shim ─▶ proxy ─▶ Listener
//	forward cbr:   UDP socket ────────────▶ relay ─▶ shim (sink)
//	reverse cbr:   UDP socket ◀─────────── relay ◀─ shim (source; the socket's hellos taught it where)
//
// One transport.Listener holds every server side. The relay forwards to
// one address, so the shim stands there (see shim): it passes fresh
// datagrams on to the Listener through one proxy socket per relay back
// socket, sinks forward cbr datagrams, and sends reverse cbr datagrams to
// the back socket the flow's client socket opened with a hello. A tap in
// front of a reverse flow's client sees its datagrams arrive. Every
// flow's Conns are dialled and accepted one at a time before the run's
// time zero (a handshake each, through the emulated path), so that the
// Initial the shim sees and the Conn Accept returns belong to the flow
// being set up; then the flows start at their start times and stop at
// their stops (both Conns closed, counters read just before).
//
// # What is measured how
//
// Both ends are in this process and read one host clock, so one-way
// delays and ages are exact, not estimated:
//
//   - owd_ms: per delivered data or update datagram, arrival time (wall
//     clock, µs) at the shim (forward) or the tap (reverse) minus the
//     sender's timestamp in the fresh header; for cbr, the receiver's
//     arrival minus the send time the driver wrote into the datagram.
//     These are the same packets bench/sim measures (data, updates, cbr;
//     not ACKs), delivered by the end of the run.
//   - queue_ms: the relay does not report per-packet queueing delay, so
//     per packet it is the OWD less the propagation delay the packet had
//     (the scenario's, or a change's if the packet left the serialiser
//     after the relay got the change) less the flow's smallest such
//     excess (serialisation and the fixed cost of the loopback hops).
//     Jitter counts as queueing here, unlike in bench/sim.
//   - goodput_bps, bytes: bulk — stream bytes the receiving Conn's reader
//     got within the flow's [start, end]; updates — the size of every
//     update read with ReadUpdate that lowered the age (as bench/sim:
//     fresh updates only); cbr — size × datagrams delivered by the flow's
//     end.
//   - age_ms: acp.AgeMeter over (generation, reception) pairs: the source
//     samples at 1 kHz (transport's default MaxUpdateRate), writing the
//     generation time into the first 8 bytes of each update; the
//     monitor's ReadUpdate loop takes its return time as the reception.
//     So age includes up to 1 ms of the sample waiting for the
//     regulator, where bench/sim generates at will.
//   - rate_hz: updates sent / active time (Stats.UpdatesSent), as bench/sim.
//   - sent, delivered, lost, retransmitted: bulk — the sender's
//     PacketsSent, the data datagrams observed arriving, PacketsLost and
//     Retransmitted (transport.Stats); updates — UpdatesSent,
//     UpdatesReceived, and their difference; cbr — datagrams sent,
//     delivered, and their difference (so datagrams still in the pipe
//     when the run ends count as lost, as in bench/sim).
//   - send_rate_bps: the sender's BytesSent plus 28 bytes of IPv4+UDP per
//     datagram, over the active time (cbr: size × sent).
//   - slow_start_s, signal_share: the bulk sender's Stats sampled every
//     10 ms while active (InSlowStart, Signal) — bench/sim counts per ACK.
//   - clock_error_ms: under clock_sync "inband", the mean |ClockOffset| of
//     the receiving Conn while it trusts its estimate (the truth is 0).
//   - utilization: the relay's per-direction Link.BusyTime over the run
//     (busy time of the setup's handshakes left out), so it includes every
//     datagram: ACKs, hellos, handshakes of nobody.
//   - jain: over the forward bulk flows' bytes read within the window
//     from the last start to the first stop, as bench/sim.
//   - Series (--plot): per SampleInterval, goodput and mean OWD of that
//     interval's deliveries, the sender's Stats.Window (bulk), the age and
//     the regulator's Stats.UpdateRate (updates).
//
// # Differences from bench/sim
//
//   - Real time: a 100 s scenario takes 100 s, plus a handshake per flow.
//     Runs are not reproducible bit for bit: the seed fixes the links'
//     random choices, not the scheduling of goroutines and the kernel.
//   - Headers: a fresh datagram carries 54 bytes of fresh header and frame
//     around the payload and the relay counts 28 more of IPv4+UDP, 82
//     bytes in all where bench/sim counts 40. A bulk flow's payload per
//     datagram is the scenario's mss (MaxDatagram = mss + 54, at least
//     256); an update's is its size. A cbr datagram is size bytes on the
//     link, as in bench/sim (UDP payload size − 28, at least 16).
//   - The server side has one transport.Config (the Listener's): reverse
//     bulk flows get their own controller (the Listener's NewController
//     follows the flow being set up), but every reverse update flow must
//     use the same policy, and reverse flows send with the Listener's
//     MaxDatagram, the largest any flow needs.
//   - DSCP: forward flows' datagrams carry their DSCP (transport marks
//     them; the relay reads it). The server side's datagrams pass the
//     shim, which does not carry the TOS byte: what crosses the reverse
//     link (ACKs of forward flows, data of reverse flows, reverse cbr)
//     is best effort. A reverse flow's ACKs leave its tap with the flow's
//     DSCP. This matters only for DSCP-aware queues (cake).
//   - clock_offset, clock_skew_ppm and clock_sync "none" are sim-only
//     (ErrUnsupported): the endpoints share the host clock. "perfect" sets
//     TrustPeerClock; "inband" lets the endpoints estimate the (zero)
//     offset.
//   - A flow's extra_delay and max_window are sim-only (ErrUnsupported):
//     the relay has one delay per path, and no receive window per flow.
//   - fixed flows run acp.NewFixed through Config.NewUpdatePolicy, as
//     sim does. iperf3 and telemetry flows need the TUN router:
//     ErrUnsupported under the relay.
//   - The shim, the taps and the relay each add a loopback hop, and Go's
//     timers wake the relay up to ~1 ms late (see bench/emu, "Timing"):
//     OWDs measure ~1 ms above the path's delay.
//
// # The TUN router (Options.TUN)
//
//	client namespace (10.199.0.1)          router               server namespace (10.199.0.2)
//	client Conns, cbr/telemetry  ──▶ TUN ─▶ forward link ─▶ TUN ──▶ Listener, sinks, iperf3 -s
//	sockets, iperf3 -c           ◀── TUN ◀─ reverse link ◀─ TUN ◀──
//
// emu.TUN makes the two namespaces and the router. The Listener of every
// fresh flow is opened in the server namespace (InServer), each flow's
// client Conn is dialled in the client namespace (InClient), one flow at
// a time as under the relay; a cbr flow is a UDP socket in the sending
// namespace connected to a sink in the receiving one; an iperf3 flow is
// an `iperf3 -s -1 -J` started at setup in the server namespace and an
// `iperf3 -c … -J -t T -C cc --cport P` started at the flow's start in the
// client namespace (Pdeathsig SIGKILL; killed at the end of the run);
// a telemetry flow is a TCP connection (from a fixed client port, so the
// router knows it from its SYN) or a pair of UDP sockets.
//
// The router's Observe callback sees every packet after the bottleneck.
// observe finds its flow by protocol and the client's and server's ports
// and keeps the flow's data packets in its data direction: fresh data and
// update datagrams (the fresh header), cbr data datagrams, TCP segments
// with payload (not pure ACKs), telemetry datagrams. Per such packet:
//
//   - owd_ms = Out − In: from the router reading the packet from the
//     sending side's TUN device to writing it into the receiving side's
//     (queueing, serialisation, propagation, jitter, and the router's
//     timer lateness, up to ~1 ms: see bench/emu). It leaves out the sender's stack before the TUN device, which the
//     router cannot see for kernel TCP, so every flow, kernel TCP or
//     fresh, has the same metric.
//   - queue_ms = Queue, the link's own queueing delay of the packet
//     (netem.Packet.QueueDelay): exact, unlike under the relay.
//
// Endpoints then only count deliveries (cbr) and bytes. Telemetry
// messages carry their write time (wall clock, ns) in their first 8 bytes:
// the router reads it from each message that starts in a packet (over
// TCP at stream offsets k·size, sequence number − ISN − 1, each message
// once) for write_to_router_ms = In − write time, and the receiver for
// end_to_end_ms = read time − write time. iperf3 flows report iperf3's
// own goodput, bytes, retransmissions and sending rate (end.sum_received,
// end.sum_sent of -J); their -t is the flow's active time in whole
// seconds, counted by iperf3 from when its control connection is up, and
// the run waits up to 5 s after its end for the reports. Utilisation is
// the router's links' busy time.
package emudriver
