// Package transport is fresh's UDP endpoint: a connection carrying a
// reliable, ordered byte stream under any cc.Controller, and status updates
// paced by an age-of-information regulator (package acp), between an IoT
// agent and a monitor.
//
//	l, _ := transport.Listen("0.0.0.0:4433", transport.Config{})
//	c, _ := l.Accept(ctx)                     // monitor side
//	c, _ := transport.Dial(ctx, addr, cfg)    // agent side
//	c.Write(p); c.Read(p)                     // the stream (a net.Conn, deadlines too)
//	c.SendUpdate(sample); c.ReadUpdate(ctx)   // freshest-only updates
//	c.Stats(); c.Close()
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
// ring is Config.ReceiveWindow bytes, so a slow reader closes the window
// and neither end's memory grows.
//
// A Conn is a net.Conn: SetDeadline, SetReadDeadline and SetWriteDeadline
// bound Read and Write as the net package's connections do (an error
// wrapping os.ErrDeadlineExceeded, a net.Error whose Timeout is true), so
// bufio, io.Copy and other code written for a net.Conn run over the
// stream. The deadlines leave updates alone: SendUpdate never blocks and
// ReadUpdate takes a context.
//
// # Connecting
//
// Dial sends Initial packets with exponential backoff until the server's
// Accept arrives, ctx ends or Config.HandshakeTimeout passes; its errors
// wrap ErrHandshake. The client's socket is connected to the server's
// address, so when nothing listens there the kernel's ICMP port
// unreachable ends Dial at once with an error wrapping
// syscall.ECONNREFUSED ("connection refused"). On an open connection such
// an error is ignored, as TCP ignores it on an established connection (it
// is unauthenticated, and may be transient); a peer that is gone is found
// by Config.IdleTimeout.
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
// default (Config.UpdateDSCP, a DSCP: ParseDSCP reads class names), the
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
// Updates end with the connection: after a normal close the peer's
// ReadUpdate returns io.EOF once it has taken what arrived (its Err says
// ErrPeerClosed), after any other close an error saying why.
//
// # I/O
//
// The protocol is a sans-I/O state machine (session): the Conn and Listener
// goroutines feed it datagrams and timer expiries and send what it
// returns. On Linux, datagrams are received with recvmmsg in batches, with
// UDP_GRO when the kernel allows (several datagrams of a flow in one buffer,
// split by the segment size it reports), and sent with sendmmsg, as
// UDP_SEGMENT (GSO) runs when the kernel allows; elsewhere with plain reads
// and writes. DSCP is set per packet
// (IP_TOS / IPV6_TCLASS control messages), so the stream and the updates can
// share one socket.
//
// The wire format (version 1, internal/wire) keeps room for a stateless
// retry, a pre-shared-key AEAD mode and version negotiation without
// changing the header; none is implemented yet. There is no path-MTU
// discovery: datagrams are Config.MaxDatagram (1200) bytes.
package transport
