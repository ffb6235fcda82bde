// Package emu runs the emulated bottleneck in real time, in two forms:
// Relay, for our UDP endpoints, and TUN, for every IP packet between two
// network namespaces (see "TUN router" below). Relay is a
// userspace UDP relay between loopback sockets: clients send to its front
// address instead of the server's, and every datagram crosses a
// bench/netem link (rate, trace or rate walk, queue discipline, delay,
// jitter, loss) before it
// goes on. No root, TUN device or qdisc is needed, so it is the embedded
// default for the demo, the examples and the end-to-end tests of
// transport. The link model is the simulator's (the same netem.Link, built
// by netem.LinkConfigFromPath from the same scenario.Path), so a scenario
// means the same thing in bench/sim and here.
//
// LoadBalancer is a third, smaller form: a UDP load balancer in front of
// several servers, routing by the 4-tuple or by the server ID in the
// connection ID, for tests of what each kind keeps across a client's
// rebinding (no link emulation).
//
// # Topology
//
//	client A ─┐                      forward link (client → server)
//	client B ─┼─▶ front socket ──▶ [ loss → queue → serialise → delay ] ──▶ back socket A ─┐
//	   …      │   (Addr)                                                    back socket B ─┼─▶ server
//	          │                                                                           │  (Target)
//	          └── front socket ◀── [ loss → queue → serialise → delay ] ◀── back sockets ◀─┘
//	                                 reverse link (server → client)
//
// For each distinct client address seen on the front socket the relay
// opens one back socket (an ephemeral port, connected to Target), so the
// server sees one source address per client and its replies map back to
// that client. Both directions are each one link shared by all clients:
// one bottleneck, as a dumbbell. Each client's datagrams form one flow for
// the flow-queueing disciplines (FlowKey = a hash of the client's address,
// low bit = direction), as a kernel fq_codel hashes the 5-tuple.
//
// Packet.Size is the UDP payload plus 28 bytes of IPv4+UDP header (48 for
// IPv6), as bench/sim counts headers: at 2 Mbit/s a 1200-byte datagram
// takes (1200+28)·8/2e6 = 4.91 ms.
//
// # Timing
//
// One goroutine per socket reads datagrams, stamps them with the injected
// clock, copies them into a pooled buffer and hands them to a single
// scheduler goroutine, which owns both links (netem is not safe for
// concurrent use; a mutex lets Stats and SetPath in). The scheduler
// enqueues arrivals at their stamp, polls both links at clock.Now(),
// writes every due packet, and sleeps on one reused time.Timer until the
// earlier of the links' NextEvent and the next arrival. netem replays its
// own events at their exact times whenever it is called, so a late wake-up
// does not change queueing, drops or the average rate; it delays the
// moment a due packet is written, and packets due together leave in a
// burst. (An arrival is enqueued at its stamp, or at the latest instant
// the links have seen if that is later: by at most the time it waited
// for the scheduler.)
//
// How late: Go's runtime sleeps in epoll_wait, whose timeout is in whole
// milliseconds, so on Linux a timer fires up to ~1 ms late (measured on
// the development VM, Linux 6.18, Go 1.26: a 50 µs timer p50 1.06 ms late,
// a 4.8 ms one p50 0.42 ms, p90 0.53 ms). Through the relay an emulated
// 40 ms RTT measures 41.0–41.5 ms. That is fine for what the relay is for:
// at 2 Mbit/s a 1200-byte datagram serialises in 4.9 ms, and the RTTs of
// our scenarios are tens of ms. RelayConfig.Spin trades CPU for precision:
// the scheduler sleeps until Spin before an event and then busy-waits
// (with runtime.Gosched, so other goroutines run); with Spin = 2 ms a
// 20 ms RTT measures 20.2 ms. Spinning costs up to a core while packets are
// in the links, so it is off by default.
//
// A trace-driven link (a scenario path with "trace") is paced the same
// way: while something is queued its NextEvent is the next delivery
// opportunity, and the scheduler sleeps until then (an opportunity comes
// at most every millisecond or so, and several at one millisecond are
// served in one wake-up); an idle trace link has no event at all, so the
// relay does not wake up for opportunities it would waste. A trace, or a
// rate walk, starts when the relay (or the TUN router) is created.
//
// The clock is injected (clock.Clock, default the system clock) so that
// the relay's timestamps share an origin with the endpoints', but it must
// advance in real time: the relay sleeps on real timers. For virtual time
// use bench/sim.
//
// # DSCP
//
// On Linux the relay reads each datagram's TOS byte (IP_RECVTOS; the
// traffic class, IPV6_RECVTCLASS, on IPv6 sockets) and gives its DSCP to
// the link, so the CAKE-like queue puts CS7 in its voice tin; it sends the
// datagram on marked with the same TOS byte, per packet, through an
// IP_TOS / IPV6_TCLASS control message on sendmsg (golang.org/x/net/ipv4
// has no TOS control message, so the relay builds it; ipv4.SetTOS is per
// socket, not per packet). If the kernel refuses the control message the
// relay logs it once and stops re-marking. Elsewhere than Linux every
// datagram is best effort and leaves unmarked.
//
// # Limits
//
//   - Loopback (or a local network) only: one process, no routing; the
//     server must be reachable from the back sockets' ephemeral ports.
//   - One bottleneck shared by every client and one client per source
//     address; at most MaxClients (default 64) client slots; datagrams
//     from further clients are dropped and counted
//     (RelayStats.DroppedNoClientSlot). A slot is freed once its client
//     has sent nothing for ClientIdle (default 30 s, conntrack's UDP
//     timeout), so spoofed datagrams from MaxClients source ports lock
//     later clients out for ClientIdle, not for the relay's lifetime. A
//     flood that keeps sending from MaxClients ports holds the slots as
//     long as it lasts, as it would a NAT's or conntrack's table.
//   - Datagrams above MaxDatagram (default 65535 bytes) are dropped and
//     counted (DirectionStats.Oversize); anything IPv4 UDP can carry fits
//     the default.
//   - Kernel socket buffers sit before and after the link: a sender that
//     bursts faster than the reader can be dropped by the kernel before
//     the relay sees it. ReadBuffer/WriteBuffer ask for 4 MiB; Linux caps
//     that at net.core.rmem_max / wmem_max.
//   - Close drops the packets still in the links.
//   - The steady state allocates nothing: buffers are recycled from a free
//     list (2 KiB, and MaxDatagram-sized for larger datagrams), the links'
//     rings only grow. BenchmarkRelayThroughput: 0 allocs per datagram.
//
// # Use
//
// Tests and examples start a server, put a relay in front of it and point
// the client at Addr:
//
//	r, err := emu.NewRelay(emu.RelayConfig{
//		Target:  server.LocalAddr().String(),
//		Forward: scenario.Path{Rate: scenario.Rate(2e6), Delay: scenario.Duration(20 * time.Millisecond)},
//		Reverse: scenario.Path{Rate: scenario.Rate(2e6), Delay: scenario.Duration(20 * time.Millisecond)},
//	})
//	if err != nil { … }
//	defer r.Close()
//	conn, err := net.DialUDP("udp", nil, r.Addr().(*net.UDPAddr))
//
// A scenario's scheduled changes are applied with SetPath at their time;
// SetBlackout drops everything in both directions until it is turned off
// (an outage, for fault tests); Rebind and RebindTo give every client a
// new source port, or a new address and port, at the server (a NAT that
// rebinds); RelayConfig.Filter drops chosen datagrams and Observe sees
// those that cross; Stats reports both links' counters and the relay's
// own.
//
// # TUN router
//
// TUN (Linux, root) carries every IP packet, not only our UDP, across the
// same emulated bottleneck: kernel TCP, our UDP endpoints and ICMP share
// it, as they would share a real one. NewTUN makes two network
// namespaces, one for the client side and one for the server side, with a
// TUN device in each, and a router that moves each packet read from one
// device through the forward or reverse netem link into the other:
//
//	client namespace                                            server namespace
//	(kernel TCP, UDP, ICMP,                                     (kernel TCP, UDP, ICMP,
//	 processes) 10.199.0.1                                       processes) 10.199.0.2
//	     │   ▲                                                        ▲   │
//	     ▼   │            forward link (client → server)              │   ▼
//	  fresh0 (TUN) ──▶ [ loss → queue → serialise → delay ] ──▶ fresh0 (TUN)
//	               ◀── [ loss → queue → serialise → delay ] ◀──
//	                      reverse link (server → client)
//	               ╰─── the router, in this process: one reader ───╯
//	                    per device, the relay's scheduler
//
// Each device has a point-to-point address (10.199.0.1 peer 10.199.0.2
// and back), so the peer is routed with no forwarding or extra route;
// 10.199.0.0/24 exists only inside the namespaces. IPv6 is disabled in
// both; anything that is not IPv4 is dropped and counted
// (DirectionStats.NotIPv4). So that the only queue that matters is the
// emulated one, the devices' transmit queues are 10000 packets long (the
// kernel's 500 drops outside the emulated queue at high rates) and
// net.ipv4.tcp_rmem / tcp_wmem go up to 16 MiB. net.core.rmem_max /
// wmem_max are raised to 16 MiB too where the kernel lets a namespace set
// them (Linux 6.18 shows them read-only there, at 4 MiB on the
// development VM, which then caps UDP socket buffers). The kernel needs
// no netem, fq_codel or cake qdisc: all emulation is netem.Link's.
//
// Packet.Size is the IP packet's length (the kernel's headers are real
// here; layer-2 framing is not counted). FlowKey is a hash of the 5-tuple
// (protocol, addresses and, for TCP, UDP, UDP-Lite, SCTP and DCCP, ports;
// protocol and addresses for ICMP and the rest), low bit = direction, as
// a kernel fq_codel hashes it. DSCP comes from the IPv4 TOS byte, so the
// CAKE-like queue classifies kernel TCP and our UDP alike; the packet is
// written out unchanged. Timing is the relay's (the same scheduler, Spin
// included: ICMP echo over a 20 ms RTT measures 20.6 ms, 20.2 ms with
// Spin = 2 ms), and so are Stats (one "datagram" per IP packet) and
// SetPath.
// Observe, if set, sees every packet that crossed a link, with when the
// router read it and wrote it and its time in the queue.
//
// Code runs in a namespace through InClient and InServer: fn runs on a
// locked OS thread that has entered the namespace, so sockets it opens
// (net.Listen, net.Dial, transport.Listen, transport.Dial) stay in that
// namespace after it returns, and processes it starts with os/exec run
// there:
//
//	tn, err := emu.NewTUN(emu.TUNConfig{Forward: fwd, Reverse: rev})
//	if errors.Is(err, emu.ErrNoTUN) { … } // not root, no /dev/net/tun, not Linux
//	defer tn.Close()
//	var l *transport.Listener
//	err = tn.InServer(func() (err error) {
//		l, err = transport.Listen(netip.AddrPortFrom(tn.ServerAddr(), 0).String(), cfg)
//		return err
//	})
//	cmd := exec.Command("iperf3", "-c", tn.ServerAddr().String())
//	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
//	err = tn.InClient(cmd.Start)
//
// Tear-down. Close closes both devices (non-persistent: they disappear
// with their fd) and the namespace handles. The namespaces are anonymous,
// never bind-mounted under /var/run/netns, so they are held only by our
// handles and by whatever sockets and processes are in them: a process
// that is killed, even by SIGKILL, leaks neither devices nor namespaces.
// Two rules for callers: close the sockets you opened in a namespace
// (each one keeps it alive), and give every child process started in a
// namespace SysProcAttr.Pdeathsig = syscall.SIGKILL, so that it dies with
// this process instead of keeping the namespace. CloseOnSignal closes the
// router on SIGINT or SIGTERM before the signal takes its course.
//
// Limits: IPv4 only; one client namespace and one server namespace (one
// address each); root (CAP_SYS_ADMIN, CAP_NET_ADMIN) and /dev/net/tun are
// required, otherwise NewTUN's error wraps ErrNoTUN and says what is
// missing. The router copies each packet once into a pooled buffer and
// allocates nothing per packet in the steady state. Keep emulated rates
// at or below 500 Mbit/s: the router, the kernel's TCP and the
// applications share the host's cores (BenchmarkTUNTCP, one kernel TCP
// connection over 500 Mbit/s links with 1 ms delay on the 2-core
// development VM: 479 Mbit/s of goodput, 0.0004 heap allocations per
// routed packet for the whole process).
package emu
