// Package transport is fresh's UDP endpoint: a connection carrying a
// reliable, ordered byte stream under any cc.Controller, and status updates
// paced by an age-of-information regulator (package acp), between an IoT
// agent and a monitor.
//
//	l, _ := transport.Listen("0.0.0.0:4433", transport.Config{TLS: serverTLS})
//	c, _ := l.Accept(ctx)                     // monitor side
//	c, _ := transport.Dial(ctx, addr, transport.Config{TLS: clientTLS}) // agent side
//	c.Write(p); c.Read(p)                     // the stream (a net.Conn, deadlines too)
//	c.SendUpdate(sample); c.ReadUpdate(ctx)   // freshest-only updates
//	c.Stats(); c.Close()
//
// Listen and Dial open a UDP socket of their own. Per-connection settings
// are in Config; the socket and what the connections on it share (the
// listener's address validation and admission limits) are in a Transport,
// as in quic-go, whose Listen and Dial take a socket of your own (any
// net.PacketConn; ListenUDP opens one with SO_REUSEPORT) and can serve a
// Listener and dialed connections on one port.
//
// # Stream
//
// Data frames carry (offset, bytes, FIN), as QUIC's STREAM frames (RFC 9000
// §19.8). Every packet has a new packet number; a retransmission re-sends
// the lost bytes in a new packet (RFC 9000 §13.3), so an ACK always says
// which transmission arrived and the RTT sample is never ambiguous (Karn's
// problem does not arise). Loss detection is RFC 9002 §6: a packet is lost
// when three later ones are acknowledged or after 9/8 of the RTT, and the
// retransmission timeout backs off exponentially (internal/recovery). The
// controller (Config.CC, "owd" by default) gates sending by its window and
// the pacer spaces packets at its PacingRate. Flow control is a single
// MaxData limit (RFC 9000 §4.1) advertised on every ACK: the receiver's
// ring holds exactly the window, so a slow reader closes the window and
// neither end's memory grows beyond Config.ReceiveWindow and
// Config.SendBuffer. Both start at 64 KiB and grow only as far as the path
// needs (the send buffer with the congestion window, the receive window
// with the reader's pace; see Config), not to the maximum.
//
// A Conn is a net.Conn: SetDeadline, SetReadDeadline and SetWriteDeadline
// bound Read and Write as the net package's connections do (an error
// wrapping os.ErrDeadlineExceeded, a net.Error whose Timeout is true), so
// bufio, io.Copy and other code written for a net.Conn run over the
// stream. The deadlines leave updates alone: SendUpdate never blocks and
// ReadUpdate takes a context.
//
// # Security
//
// Connections are secure by default: Config.TLS (or, for closed test
// networks, an explicit Config.Insecure) must be set. A TLS 1.3 handshake
// through crypto/tls's QUIC API (RFC 9001) authenticates the listener by
// its certificate, and the dialer too with mutual TLS; every packet after
// it is AEAD-protected with keys derived from the TLS secrets, its header
// authenticated, replays dropped (package internal/seal). Forged, altered
// and replayed packets are dropped and counted in Stats (Unauthenticated,
// Replayed) and never close a connection. ConnectionState gives the peer's
// certificates; Config.VerifyPeer refuses, inside the handshake, a peer
// whose verified certificate names something the application does not take
// (ErrPeerRefused). SECURITY.md has the threat model, what is and is not
// protected, and the limits with their defaults; package devcert makes
// throwaway credentials for first steps and tests.
//
// # Connecting
//
// Dial runs the TLS handshake in Initial and Crypto packets, resending its
// flight with exponential backoff until the server's Accept arrives, ctx
// ends or Config.HandshakeTimeout passes; its errors wrap ErrHandshake
// (with the TLS alert or certificate error). The handshake's first
// datagrams are sealed under keys derived from the connection ID (wire
// version 3, as QUIC's Initial packets): a corrupted one is dropped and
// counted like any unauthenticated packet, and the flight's retransmission
// repairs it. A Listener first answers an Initial with a Retry
// carrying an address-validation token and opens the connection only when
// the Initial comes back with it (one extra round trip; see
// Transport.DisableRetry), so a forged source address gets one small Retry
// and no state. A token the Listener refuses (expired, or from another
// address) draws a Close saying why, and Dial fails at once with
// ErrInvalidToken: a client takes one Retry per connection. A TLS
// Listener also gives each client, once its handshake completes, a token
// for its next connection (RFC 9000 §8.1.3's NEW_TOKEN); a dialer with a
// Config.TokenStore sends it in that connection's first Initial and, if
// the Listener can still open it (this process, under 24 h, the same IP
// address), skips the Retry; otherwise the Retry comes as without one.
// It also bounds connections in total, per source and per
// second (Transport.MaxConnections and the fields after it), moves a
// connection to a client's new address only for an authentic packet (see
// Connection migration), and counts what it drops (Listener.Stats). Accept hands
// out a connection only once its handshake has completed; one that fails
// is counted by reason (ListenerStats.HandshakeFailures) and logged once
// at warning level on Config.Logger. The client's
// socket is connected to the server's
// address, so when nothing listens there the kernel's ICMP port
// unreachable ends Dial at once with an error wrapping
// syscall.ECONNREFUSED ("connection refused"). On an open connection such
// an error is ignored, as TCP ignores it on an established connection (it
// is unauthenticated, and may be transient) and only counted
// (Stats.PortUnreachable); a peer that is gone is found by
// Config.IdleTimeout.
//
// A dialer that sets ClientSessionCache in its TLS config resumes: the
// listener sends a session ticket after each handshake, and the next Dial
// to it runs a PSK handshake without certificates (ConnectionState's
// DidResume). With Config.Allow0RTT on both ends a resumed connection can
// carry updates in 0-RTT: DialEarly returns before the handshake, and an
// update sent at once travels with the ClientHello and reaches the
// listener's application a round trip sooner than after Dial. Only
// updates go in 0-RTT, never stream bytes, because 0-RTT can be replayed
// (Config.Allow0RTT, SECURITY.md).
//
// # Updates
//
// SendUpdate hands the newest sample to the regulator (Config.UpdatePolicy,
// "acp" by default). When the regulator's next send time comes, the
// freshest unsent update goes out in an Update frame; a newer SendUpdate
// replaces one still waiting, and updates are never retransmitted: a
// lost update is superseded, not repaired. The monitor's ReadUpdate
// returns updates in increasing generation time, dropping any that arrive
// older than one already delivered, with the generation time in the
// monitor's clock and the age on arrival. Updates are marked CS7 by
// default (Config.UpdateDSCP, a dscp.Codepoint: dscp.Parse reads class names), the
// stream best effort.
//
// # One-way delay and clocks
//
// Every Data and Update packet carries the sender's wall-clock stamp. The
// receiver computes each packet's one-way delay with its own clock and the
// in-band offset estimate (clock.Inband), and returns it on the
// ACK together with the timestamps the estimator needs from the other
// direction (the four-timestamp exchange of NTP, RFC 5905 §8). The sender's
// controller gets the OWD with a flag saying whether the clocks are
// trustworthy; until they are, owd runs on RTT/2. Config.NTPServer
// corrects the local clock with NTP (ntpclock.Clock) first;
// Config.TrustPeerClock says the clocks are already synchronised.
//
// # Tracing
//
// Config.Tracer asks for a trace of each connection as it starts
// (qlog.ConnInfo: role, the client's connection ID, the peer's address) and
// closes it when the connection ends. The session calls it with its own
// time, never doing I/O itself: every packet sent and received with its
// one frame, every loss and its trigger (RFC 9002 §6.1's thresholds, or
// the timeout), the window, bytes in flight and RTTs when they change, the
// controller's state, and fresh's own OWD samples, clock-offset estimates
// and update ages. qlog.DirTracer(dir) writes them as one qlog file per
// connection (draft-ietf-quic-qlog-main-schema 0.3, JSON-SEQ, RFC 7464),
// which qvis (https://qvis.quictools.info) draws as a sequence diagram and
// congestion graph; qlog.FromEnv() does so into $QLOGDIR, as quic-go does.
// Untraced (nil, the default), an event costs one nil check.
//
// # Closing
//
// Close ends the stream (a FIN), waits up to Config.Linger for the peer to
// acknowledge every byte written, then sends a CLOSE frame. Code 0 (normal)
// promises the peer that all its bytes were acknowledged, so the peer ends
// its stream where its data ends even if the FIN itself is still paced or
// lost: its Read returns io.EOF, never an error after a complete stream.
// A Close with bytes still unacknowledged (linger expired, or Linger < 0)
// sends code 3 (abort), and the peer's Read reports ErrPeerClosed. Code 1
// is a protocol violation, code 2 an idle timeout (Config.IdleTimeout).
//
// CloseWithError(code, reason) closes with an application error instead:
// the code goes on the wire as 0x10000 + code (transport codes are below
// 0x100, TLS alerts 0x100–0x1FF), and the peer's calls end with an
// *ApplicationError carrying both; its stream is aborted (never io.EOF).
//
// # Committing
//
// An ACK only says stream bytes reached the peer's receive buffer. A
// receiver that has durably stored the stream up to offset n (written and
// synced) says so with Commit(n); the sender's Committed reports it and
// WaitCommitted(ctx, n) returns nil only then — or the connection's error
// if it ends first, never nil. Commit frames are sent reliably (the latest
// again until acknowledged) and only grow; one beyond the bytes sent is a
// protocol violation. A commit is the peer application's claim, not a
// proof (SECURITY.md).
//
// Updates end with the connection: after a normal close the peer's
// ReadUpdate returns io.EOF once it has taken what arrived (its Err says
// ErrPeerClosed), after any other close an error saying why.
//
// # Connection migration
//
// A connection survives its client's NAT rebinding (a new source port or
// address), as RFC 9000 §9 has QUIC's: the server takes the client's
// first packet from the new address, if it authenticates under the
// connection's keys and is the newest the client sent (a replayed or
// reordered old packet does not count), and sends there at once, at most
// three times what it received from there until the address echoes a
// challenge (RFC 9000 §8.1's anti-amplification limit). If it does not
// within three retransmission timeouts (at least 3 s), the connection goes
// back to the previous address. The congestion controller and RTT
// estimates carry over, unless the challenge's round trip shows another
// path (below half the old minimum RTT, or above twice the smoothed RTT
// plus 20 ms), when they start afresh (RFC 9000 §9.4). Conn.RemoteAddr
// follows the move, and Stats counts Migrations, MigrationsReverted,
// MigrationsRefused and PathResets. Without TLS (Insecure) nothing
// authenticates a packet and a connection never moves: datagrams from
// another address are dropped and counted (ListenerStats.WrongAddress),
// as are forged ones with TLS.
//
// Copies of the client's packets raced to the server from another address
// (RFC 9000 §9.3.3: whoever sees the client's packets can forward them
// from elsewhere, ahead of the originals) move the connection once per
// source address at most. The server also challenges the previous address; when that
// answers and the new one has not within three of its round trips, it
// goes back at once, and the new address is penalised: its packets no
// longer move the connection and are dropped unread (Stats.
// MigrationsRefused), while the server probes it, a challenge per
// retransmission timeout within three times what came from it. A client
// really at that address answers (and sends a PING after it) and is
// followed from then on, so a NAT that rebinds back to it loses a round
// trip or two. A connection lists at most 4 such addresses, each until
// 30 s after the last datagram from it; with all 4 listed every other new
// address is probed before it is followed.
// The previous address (the last one validated) is never penalised: a
// move back to it needs no validation, so a NAT that flaps between two
// bindings is followed each time. This state (768 bytes) is allocated for
// a connection when an authentic datagram first comes from another
// address, and kept for its life.
//
// Only the server follows: a client takes packets only from its server's
// address. A client opened with package Dial can move itself to a new
// local port with Conn.Migrate (a new socket, validated before the old
// one is closed); a client on a Transport of the caller's cannot, nor can
// one whose new address is on another network the old socket cannot
// reach (it must dial again).
//
// # Memory
//
// A connection holds its send buffer (up to twice the buffer's current
// size), its receive ring and a few KiB of state. The buffers start at
// 64 KiB and grow only as far as the path needs (Config.SendBuffer and
// Config.ReceiveWindow are the maxima), and none is allocated before it is
// used: the receive ring with the first stream byte, the send buffer with
// the first Write, update buffers as large as the updates themselves. A
// connection that carries only updates (an ACP source at a monitor) never
// holds a stream buffer.
//
// Sending needs a batch of datagram buffers (2 MiB with GSO), but only
// while a send is built: a Listener's connections share one, and client
// Conns take one from a process-wide pool for each send. On Linux a
// Listener's socket keeps 512 KiB of receive buffers for UDP_GRO; a client
// Conn's socket takes them from a pool only while it reads (not while it
// waits), so a process with thousands of mostly idle client Conns holds
// buffers for the few that are busy.
//
// A Listener's Transport runs two goroutines whatever its number of
// connections: one reads its socket, one (the driver) sends for and keeps the timers of
// every connection, an idle connection being an entry in a timer heap.
// On Linux a third reads the driver's timerfd, which holds the deadlines
// more than 50 ms away: a Go timer moved later wakes the process at its
// old time for nothing, after every status update of an idle device
// (waketimer.go).
// What an accepted connection holds: the session's state, the packet
// protection keys and TLS state, the age histogram (acp.AgeMeter: 9
// bytes per bin between the lowest and highest age seen), the in-band
// clock estimator's 60 s of history (clock.Inband: 120 windows of 16
// bytes) and the Conn; no congestion controller, which a connection builds
// when it first sends stream data, no update regulator, built with the
// first SendUpdate, and no goroutine. TLS lets go of its handshake state
// when the handshake completes (the peer's certificates are kept as DER
// and parsed again by ConnectionState): an idle mutual-TLS connection
// holds a few KB of heap at a listener with 10,000 (TestMeasureMemory;
// bench/results/fleet.md, "10,000 agents again, after the fixes, on a
// quiet machine"). A handshake in progress holds crypto/tls's state and
// goroutine, several times that (bench/results/security.md,
// "Footprint"), until it completes or HandshakeTimeout passes; Transport.
// MaxHandshakes bounds how many a Listener runs at once, and
// MaxHandshakesPerSource how many of them one source may hold. bench/cmd/loadtest
// measures the heap per source of a monitor with thousands of ACP sources
// over TLS (bench/results has the numbers).
// A Conn of package Dial has a Transport, and so these goroutines, of
// its own; Transport.Dial puts many on one.
//
// examples/agent/measure.sh gives the agent's peak resident memory with
// defaults while it uploads as fast as loopback allows, most of it the
// binary's own pages rather than the Go heap; README's "Memory on small
// devices" has the measured numbers.
//
// On a device with little memory, set GOMEMLIMIT (or call
// runtime/debug.SetMemoryLimit): a soft limit on the memory the Go runtime
// manages (heap, goroutine stacks, runtime structures; not the binary's
// pages). Near it the garbage collector runs more often than GOGC alone
// would make it (by default it lets the heap grow to twice the live data
// before collecting); it is soft, so live data above it is not refused
// (collection then takes at most about half the CPU). It counts more than
// the heap, so leave room: for the agent with default buffers
// GOMEMLIMIT=12MiB costs nothing, while 8MiB made it collect over and
// over without lowering its peak (bench/results/z-agent.md,
// "GOMEMLIMIT"). Use about 12 MiB plus what larger buffers add, under what
// the device can give the process. It trims the collector's headroom only;
// live buffers stay, so lower Config.SendBuffer and Config.ReceiveWindow
// to bound those.
//
// # I/O
//
// The protocol is a sans-I/O state machine (session): the Conn and Listener
// goroutines feed it datagrams and timer expiries and send what it
// returns (a Listener's driver for all its connections, a client Conn's
// own goroutine for it). On Linux, datagrams are received with recvmmsg
// in batches, with UDP_GRO when the kernel allows (several datagrams of a flow in one buffer,
// split by the segment size it reports), and sent with sendmmsg, as
// UDP_SEGMENT (GSO) runs when the kernel allows; elsewhere with plain reads
// and writes. The DSCP is set per packet
// (IP_TOS / IPV6_TCLASS control messages), so the stream and the updates can
// share one socket.
//
// # Scale-out
//
// One Listener is one socket, read by one goroutine and sent on by another,
// so the protocol work of one monitor process runs on about two cores at most.
// To use more, run several monitor processes on one port, each with a
// socket from ListenUDP(addr, true) (SO_REUSEPORT) in its Transport.Conn:
// each has its own socket, and the kernel
// hands each arriving datagram to one of them by a hash of its source and
// destination addresses and ports. A source therefore stays with the process
// that accepted it while its address and port stay the same, which is what
// a connection needs: its state lives in that process alone.
//
// The hash knows nothing of connection IDs. Adding or removing a process
// reshuffles it (Linux spreads by hash over the current number of
// sockets), so some sources land on a process that does not know their
// connection ID. That process cannot tell a connection its owner lost
// from one it still holds, so it sends no reset for it (see Stateless
// reset): those sources time out (IdleTimeout) and dial again. A
// source whose address changes is cut off the same way when the kernel
// hands its new address to another process (a single Listener migrates
// it, see Connection migration). Routing by connection ID, so that
// connections stay put while processes come and go and while their
// clients' addresses change, takes an eBPF program attached to the socket
// group (SO_ATTACH_REUSEPORT_EBPF) that reads the server ID from the
// header and picks the socket registered under it: package steer of the
// fresh-monitor module (github.com/fresh-udp/fresh/cmd/fresh-monitor/steer,
// Linux, root; kept out of this module for its cilium/ebpf dependency)
// is one, and fresh-monitor's -steer and -server-id flags use it.
//
// What is done is the ID such a program, or a load balancer in front of
// several hosts, routes by. A Listener chooses the connection ID its
// clients address it by (the client's Initial and handshake carry the
// client's own; from the server's Accept on, every client packet carries
// the server's), laid out as the IETF QUIC-LB draft's plaintext
// algorithm: set Transport.ServerID (1 to 3 bytes, distinct per process
// or host) and ConfigRotation, and configure the load balancer with the
// same server ID length; ServerIDOf reads an ID back. A 4-tuple load
// balancer (or the kernel's hash) keeps a connection only while the
// client's address stays; a CID-routing one keeps it across the client's
// address changes, except for the handshake's packets, which carry the
// client's ID and are routed by the 4-tuple.
//
// # Stateless reset
//
// A server that restarts loses its connections' state, and its clients
// would send into the void until IdleTimeout. With TLS, a Listener gives
// each client a token (RFC 9000 §10.3) for the server's connection ID,
// and a Transport with a Listener answers any datagram of a connection it
// does not hold with a StatelessReset carrying the token it would have
// given: the client's Conn ends at once with ErrStatelessReset. Across a
// restart this works only with the same Transport.StatelessResetKey in
// both lives (nil draws a random key per Transport); ResetKeyFromTLS
// derives one from the server's TLS key, so every life and every process
// of a server with one certificate shares it with no file of its own. Plaintext
// connections (Insecure) get no token and are never reset. A reset is
// smaller than the datagram that drew it and sent at a bounded rate
// (Transport.StatelessResetRate).
//
// A Transport answers only the connection IDs its own Listener issues,
// those with its Transport.ServerID (ListenerStats.StatelessResetsWithheld
// counts the others): RFC 9000 §21.11 forbids servers that share a key to
// reset a connection ID that could be live on any of them, since anyone
// who saw a live connection's ID and can get a datagram for it to
// another server (another source port, under SO_REUSEPORT's hash) would
// get the token that ends it. So servers that share a key each need a
// ServerID of their own, kept across restarts: the processes of one
// port (Listen refuses a key on an SO_REUSEPORT socket without one),
// the hosts behind one load balancer. A restarted process then resets
// the connections of its previous life that reach it (all of them when
// routed by connection ID, as package steer does; those the hash gives it
// otherwise); the connections of a server that does not come back end at
// their idle timeout.
//
// # Versions
//
// The wire format is version 3 (internal/wire): version 1 had no server
// IDs, version 2 sent the handshake's first datagrams (the Initials, the
// ServerHello, a Retry) without an integrity check, so a corrupted
// ServerHello hung the handshake until its timeout. An end speaks one
// version, with no transition: version 2 and 3 ends answer an
// Initial-sized datagram of another version with a VersionNegotiation, so
// each fails the other's Dial within a second with ErrVersionMismatch
// naming both versions (upgrade the monitor and its devices together); a
// version 1 server answers a newer client nothing (Dial fails at
// HandshakeTimeout), as version 1 predates negotiation. A VersionNegotiation is not authenticated, so a
// client that gets one keeps its handshake going for a second (RFC 9002's
// first PTO) and fails Dial with ErrVersionMismatch, naming both ends'
// versions, only if the server sent nothing else meanwhile; one forged on
// the path, ahead of the server's answer or after it (RFC 9000 §6.2), is
// ignored and counted (Stats.VersionNegotiationsIgnored). Inside the TLS
// handshake both ends confirm the version in a version_information
// transport parameter (RFC 9368: the version chosen and the versions
// spoken); a contradiction (the version rewritten on the way, or a client
// that left its first choice after a VersionNegotiation finding that the
// server speaks a version it prefers) fails the handshake with
// ErrVersionDowngrade. Ends built before version_information omit it and
// still work with those that send it.
//
// # Datagram size
//
// Datagram sizes follow path MTU discovery (RFC 8899 DPLPMTUD): a
// connection starts at 1200 bytes and probes with padding packets up to
// Config.MaxDatagram (default 1452), with the IPv4 Don't Fragment bit set
// on Linux; Stats.DatagramSize is the size reached.
// Config.DisablePathMTUDiscovery keeps it fixed at MaxDatagram.
package transport
