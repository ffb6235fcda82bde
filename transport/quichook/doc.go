// Package quichook drives upstream quic-go connections with fresh's
// congestion controllers (package cc's registry: "owd", "cubic", "reno",
// "htcp", "rttdelay", …) and receiver-stamped one-way delays, using only
// quic-go's public API.
//
// quic-go (v0.65) has no public congestion-control interface: its
// SendAlgorithm is internal and wired to CUBIC. What it does take from the
// outside is the socket, quic.Transport{Conn: …}. A PacketConn is that socket: a
// shim under quic-go on both ends.
//
//	hook, err := quichook.ListenPacket("0.0.0.0:4433", quichook.Config{CC: "owd"})
//	tr := &quic.Transport{Conn: hook}
//	ln, err := tr.Listen(tlsConf, quicConf) // or tr.Dial(ctx, addr, tlsConf, quicConf)
//	…
//	tr.Close()
//	hook.Close()
//
// # How it works
//
// Every QUIC datagram quic-go writes to a peer that has the hook gets a
// shim header (25 bytes: type, the receiver's cookie, a sequence number
// of its own, the send stamp in µs; 41 with the echo below) and waits in
// a bounded per-peer
// queue. A sender goroutine releases the queue as the peer's cc.Controller
// allows: while the bytes in flight are under its window, at its pacing
// rate. The receiving hook takes the header off before quic-go sees the
// datagram, stamps the arrival with its clock and sends feedback datagrams
// back on the same socket: the received sequence ranges, the ACK delay,
// and per datagram the one-way delay (arrival − send stamp − the clock
// offset). Feedback drives the controller through the same code that
// turns fresh's own ACKs into controller samples (package transport's
// sessions; internal/recovery), over shim sequence numbers: OnAck per
// newly acknowledged datagram in sequence order with the RTT (for the
// largest) and OWD samples, an impossible OWD sample dropped first (below
// zero, above the datagram's round trip, or below the smallest so far,
// each beyond the clocks' uncertainty; Stats.OWDDiscarded, as transport's
// Stats.OWDDiscarded counts them for fresh's peers); OnLoss for datagrams
// declared lost by RFC 9002 §6.1's thresholds (three later ones
// acknowledged, or 9/8 RTT); when feedback stops for an RTO, OnLoss for
// every datagram in flight and OnRetransmissionTimeout, which empties the
// flight so a silent peer cannot hold the window shut. These losses only
// inform the controller; quic-go retransmits its frames itself.
//
// The one-way delays use the clock machinery of package transport: the
// Config.Clock (an *ntpclock.Clock for NTP-corrected stamps), and the
// in-band offset estimator clock.Inband fed with every data datagram's
// stamps (forward) and the echo of the latest feedback's send and arrival
// stamps that the data sender puts in its next datagram (reverse), as an
// NTP exchange. Until the estimator is synchronised, samples go out marked
// unsynchronised and delay-based controllers use RTT/2 (package owd, "RTT
// fallback"); Config.TrustPeerClock skips the estimator when both clocks are
// synchronised already.
//
// # Telling the shim from QUIC
//
// Every shim datagram starts with a byte whose two top bits are clear. A
// QUIC v1 datagram never does: a long header has 0x80 set, a short header
// the fixed bit 0x40 (RFC 9000 §17.2, §17.3.1). So both travel on one
// socket and the first byte alone sorts them, whatever the peer runs. The
// hook relies on the fixed bit: it must not be used with a peer that
// greases it (RFC 9287; quic-go does not).
//
// # A peer without the hook
//
// The hook never shims to a peer before it knows the peer has the hook
// and receives at its address: it sends a hello (14 bytes; 22 once it
// can echo the peer's cookie) before each of its first 8 datagrams to a
// new address. A hello carries the sender's cookie for the receiver, and
// is answered with the receiver's cookie and the echo of the sender's;
// the address counts as hooked once it has shown this end's cookie (in a
// hello's echo, an answer, or a shimmed datagram) and told its own. Until
// then quic-go's datagrams go out plain, and plain QUIC is always
// accepted. So a hooked endpoint talks to plain quic-go (or any QUIC
// stack) as plain QUIC in either direction, controlled by quic-go's own
// CUBIC alone: the documented fallback, never a failed handshake or
// corrupt data. Stats and PeerStats.Hooked tell which it is. (A peer
// without the hook only ever gets the 14-byte hellos, shorter than 21
// bytes, so a QUIC endpoint that takes one for a short-header packet of
// an unknown connection does not answer with a stateless reset, RFC 9000
// §10.3; the 22-byte ones echo a cookie, which only a hook sends.)
//
// # Which window binds
//
// quic-go's CUBIC still runs above the hook: quic-go only hands the hook
// what its own window and pacer allow, and the hook's window binds only
// while it is the smaller one. Under random loss CUBIC backs off by 0.7
// per loss event and owd by 0.9, so there quic-go's window binds most of
// the time and the hook adds little (both goodputs in
// bench/results/quichook.md: quic-go's window, from its qlog, was the
// smaller in every sample at 1 % loss). Without random loss a delay-based
// controller keeps the bottleneck queue short and CUBIC's window, seeing
// no loss, grows past it: the hook binds (in no sample was quic-go's
// window the smaller).
// PeerStats.HookBound and QUICBound measure this from the queue: time
// with datagrams waiting for the hook's window or pacer, against time
// with the queue empty while datagrams were in flight. quic-go counts the
// hook's queueing in its RTT samples: its timers grow more patient, its
// pacing rate (window over smoothed RTT) falls, and its hybrid slow start
// may end sooner; each only makes quic-go's window bind less while the
// hook's does.
//
// The queue's wait is the back-pressure: a full queue blocks quic-go's
// write (for at most Config.QueueWait, then the datagram is dropped and
// counted in Stats.QueueDrops), quic-go's own send queue fills and it
// stops packing packets until there is room, so the packets it does pack
// carry fresh ACK information.
//
// # Why a shim and not quic-go's tracer
//
// The other design would keep the wire standard: quic-go's qlog events
// (Config.Tracer: packets sent, ACK frames received, losses) for the
// sender's bookkeeping, receiver reports in QUIC DATAGRAM frames (RFC 9221)
// and a PacketConn wrapper to gate the writes. It was not chosen because:
//
//   - The delay samples would be worse. A DATAGRAM-frame report is itself
//     paced and windowed by quic-go's CUBIC and queued behind stream data,
//     so feedback is late exactly when queues build; the receiver would
//     stamp arrivals when quic-go processes them, not at the socket; and the
//     sender would map packet numbers from events to its own send stamps.
//     The shim stamps at the socket and its feedback is not congestion
//     controlled (it is small, as ACKs are).
//   - It would take the application's DATAGRAM channel (quic-go has one
//     receive queue per connection) and need both ends to enable it.
//   - It would not be cheaper. Its information source alone, a qlog
//     recorder that receives quic-go's events and does nothing with them,
//     costs plain quic-go most of the CPU per GB on loopback that the
//     whole shim costs (bench/cmd/quicbench, bench/results/quichook.md),
//     and the tracer design would still need its own write gate and
//     reports.
//
// The shim's costs: the extra hop (a queue and a sender goroutine while
// the controller holds datagrams back; a datagram it lets go at once is
// written from quic-go's own write), the feedback datagrams (one per two
// data datagrams, at most one a millisecond unless 32 are waiting), 25
// bytes per datagram (quic-go's path MTU discovery finds the MTU with them
// included, since the socket sets don't-fragment; but the path must carry
// quic-go's 1200-byte Initial plus 41 bytes), a non-standard wire that
// needs the hook on both ends for any effect, and ECN: the hook marks
// datagrams with its own DSCP, so quic-go's ECN validation turns ECN off.
//
// # DSCP
//
// Config.DSCP marks quic-go's datagrams, Config.AckDSCP the feedback
// (per datagram on Linux, as package transport does). quic-go encrypts and
// coalesces frames, so the hook cannot tell a datagram carrying a DATAGRAM
// frame (a status update) from one carrying stream data: to give updates
// their own class (CS7), send them on a second connection over a second
// hook with that DSCP.
//
// # Security
//
// The shim is not encrypted or integrity-protected: QUIC's packet
// protection covers what quic-go puts in the datagram, not the header in
// front of it, the feedback or the hellos. What the hook protects is the
// off-path case (an attacker who can send with any source address but
// sees nothing sent between the hooks), with a cookie per address, as
// RFC 9000 §8.1 validates addresses with a token: each end derives its
// cookie for a peer address from a secret of its own (HMAC-SHA256) and
// sends it only to that address, in hellos and their answers; every data
// and feedback datagram carries the receiver's cookie for its sender.
//
//   - Data or feedback without the right cookie changes nothing
//     (Stats.Unauthenticated); a data datagram's QUIC payload still goes
//     to quic-go, which authenticates its own packets. So does shim data
//     from a peer the hook has forgotten: its cookie, which needs no
//     state, validates it again.
//   - An address counts as hooked only once it has shown the cookie, so a
//     spoofed hello never makes the hook shim to a peer without it.
//     Addresses that have not (hello only, or new to quic-go) are kept
//     apart from validated peers, Config.MaxPeers of each: spoofed
//     entries push out only each other.
//   - Replies to an address that has not shown the cookie (hello answers;
//     feedback never goes there) stay within three times the bytes
//     received from it (RFC 9000 §8.1; Stats.AmplificationLimited). The
//     hellos before quic-go's first datagrams to an address ride on
//     quic-go's own writes, which quic-go's limit bounds.
//   - A sequence number more than 2^16 above the largest received is not
//     recorded (Stats.OutOfWindow), and a feedback range acknowledging a
//     datagram never sent is dropped while the rest still counts
//     (Stats.Malformed).
//
// An on-path attacker sees the cookies: it can forge feedback (claim
// datagrams arrived, or report delays, within what the guard above finds
// possible), steering the hook's controller
// much as it could by delaying or dropping packets, or strip the shim so
// that the connection runs as plain QUIC; quic-go's own CUBIC still
// bounds what is sent, and its loss recovery and flow control are
// untouched. A hook of shim version 1 and one of version 2 do not
// understand each other's hellos (Stats.VersionMismatch on this side):
// both stay plain QUIC.
//
// # Limits
//
// Per peer address: one controller and clock state, one queue of
// Config.QueuePackets datagrams. Several quic-go connections to one peer
// address share them. Config.MaxPeers bounds the validated peers, and
// separately the unvalidated entries; at the bound a new validated peer
// takes the place of one idle for 30 s with nothing in flight (else it
// gets plain QUIC), a new unvalidated entry that of the unvalidated one
// heard from longest ago.
// Path migration is not followed: a new address is a new peer.
package quichook
