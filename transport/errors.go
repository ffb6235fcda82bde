package transport

import (
	"errors"

	"github.com/fresh-udp/fresh/internal/session"
)

// Errors, in one place. Match them with errors.Is: the errors returned
// wrap them with context.
var (
	// ErrInvalidConfig wraps every configuration error of Listen and
	// Dial; the message names the field. It is the same value as every
	// other fresh package's ErrInvalidConfig (owd, acp, clock,
	// quichook), so it also matches a controller's Config refused
	// inside this one.
	ErrInvalidConfig = session.ErrInvalidConfig
	// ErrClosed: the connection was closed locally (Close), or Close's
	// linger expired with bytes unacknowledged (Close's error says how
	// many).
	ErrClosed = session.ErrClosed
	// ErrPeerClosed: the peer closed the connection. Err returns it as is
	// after a normal close (when ReadUpdate returns io.EOF); it is wrapped
	// with ErrProtocol when the peer closed because of our protocol
	// violation, or with ErrStreamAborted when its stream was not whole.
	ErrPeerClosed = session.ErrPeerClosed
	// ErrStreamAborted: the peer's stream ended before its end — the peer
	// called Conn.Abort, or closed with bytes it never saw acknowledged
	// (its linger expired). Read returns it (wrapped with ErrPeerClosed)
	// after the bytes that did arrive, which are a prefix of the stream,
	// never the whole; io.EOF means the whole stream arrived.
	ErrStreamAborted = session.ErrStreamAborted
	// ErrIdleTimeout: nothing was heard from the peer for IdleTimeout.
	ErrIdleTimeout = session.ErrIdleTimeout
	// ErrHandshake: Dial did not complete the handshake. The error wraps
	// the cause too: context.DeadlineExceeded (HandshakeTimeout), ctx's
	// error, or syscall.ECONNREFUSED when nothing listens at the address;
	// one that ends at a deadline or the idle timeout says what came from
	// the server (nothing; a Retry, then nothing; silence mid-handshake).
	ErrHandshake = session.ErrHandshake
	// ErrProtocol: the peer broke the protocol (data beyond the window, a
	// contradicting FIN).
	ErrProtocol = session.ErrProtocol
	// ErrUpdateTooLarge: SendUpdate's payload does not fit one datagram.
	ErrUpdateTooLarge = session.ErrUpdateTooLarge
	// ErrWriteAfterClose: Write after CloseWrite (after Close, Write
	// returns why the connection ended: ErrClosed).
	ErrWriteAfterClose = session.ErrWriteAfterClose
	// ErrOptimisticAck: the peer acknowledged a packet this end never
	// sent (a packet number it skipped on purpose, or one not sent yet),
	// so it claims packets it did not receive to make us send faster
	// (RFC 9000 §21.4); the connection is closed.
	ErrOptimisticAck = session.ErrOptimisticAck
	// ErrVersionMismatch: Dial reached a server that speaks none of this
	// end's protocol versions: it answered with a VersionNegotiation and
	// nothing else within a second (a forged VersionNegotiation that races
	// a real server's answer is ignored); the error names the versions of
	// both ends. It comes wrapped with ErrHandshake. A server of a version
	// older than negotiation (1) answers nothing: Dial then fails at
	// HandshakeTimeout.
	ErrVersionMismatch = session.ErrVersion
	// ErrVersionDowngrade: the version the peer confirmed inside the TLS
	// handshake (its version_information transport parameter, RFC 9368)
	// contradicts the version the connection runs: the version
	// negotiation was tampered with on the path. It comes wrapped with
	// ErrHandshake.
	ErrVersionDowngrade = session.ErrVersionDowngrade
	// ErrInvalidToken: the server refused the address-validation token
	// its Retry gave this Dial (RFC 9000 §8.1.3's INVALID_TOKEN), and said
	// why: it expired before an Initial carrying it got through (a lossy
	// path, and a Dial's HandshakeTimeout longer than the server's), or
	// the client's address changed since the Retry (its NAT rebound). A
	// client takes one Retry per connection, so Dial fails at once: dial
	// again. It comes wrapped with ErrHandshake.
	ErrInvalidToken = session.ErrInvalidToken
	// ErrStatelessReset: the server lost the connection — it restarted,
	// or dropped the connection's state — and said so with a stateless
	// reset (RFC 9000 §10.3) carrying the token it gave this connection
	// in the TLS handshake, which only it can compute (see
	// Transport.StatelessResetKey). The connection ended at once, without
	// waiting for IdleTimeout; every call returns it. Dial again: the
	// server is there. Plaintext connections never end with it.
	ErrStatelessReset = session.ErrStatelessReset
	// ErrCommitBeyondRead: Conn.Commit(n) with n beyond the stream bytes
	// Read returned: the application cannot have stored them.
	ErrCommitBeyondRead = session.ErrCommitBeyondRead
	// ErrPeerRefused: Config.VerifyPeer refused the peer's handshake;
	// the error wraps the hook's error too (and ErrHandshake, from Dial).
	ErrPeerRefused = errors.New("peer refused (Config.VerifyPeer)")
	// ErrListenerClosed: Accept after the Listener's Close.
	ErrListenerClosed = errors.New("transport: listener closed")
)
