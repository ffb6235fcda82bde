package session

import (
	"errors"

	"github.com/fresh-udp/fresh"
)

// Errors a connection can end with or a call can return. The transport
// package re-exports them (transport.ErrClosed is ErrClosed), so callers
// match them with errors.Is whichever package they import.
var (
	ErrInvalidConfig = fresh.ErrInvalidConfig
	ErrClosed        = errors.New("transport: connection closed")
	ErrPeerClosed    = errors.New("transport: closed by peer")
	// ErrStreamAborted: the peer ended the stream before its end (it
	// aborted, or closed with bytes it never saw acknowledged): what was
	// read is a prefix of what it meant to send, never the whole. It comes
	// wrapped with ErrPeerClosed.
	ErrStreamAborted   = errors.New("transport: stream aborted by the peer")
	ErrIdleTimeout     = errors.New("transport: idle timeout")
	ErrHandshake       = errors.New("transport: handshake failed")
	ErrProtocol        = errors.New("transport: protocol violation by peer")
	ErrUpdateTooLarge  = errors.New("transport: update larger than a datagram")
	ErrWriteAfterClose = errors.New("transport: write after CloseWrite")
	// ErrOptimisticAck: the peer acknowledged a packet number this end
	// skipped or has not sent yet, so it acknowledges packets it never
	// received, to make the sender send faster (RFC 9000 §21.4).
	ErrOptimisticAck = errors.New("transport: peer acknowledged a packet never sent: optimistic ACK")
	// ErrVersion: the server answered the client's Initial with a
	// VersionNegotiation: it speaks none of this end's protocol versions.
	ErrVersion = errors.New("transport: the server speaks another protocol version")
	// ErrVersionDowngrade: the version the peer confirmed inside the
	// authenticated handshake (its version_information transport
	// parameter, RFC 9368) is not the one the connection runs, or shows
	// that the VersionNegotiation this end acted on was forged. It comes
	// wrapped with ErrHandshake.
	ErrVersionDowngrade = errors.New("transport: version negotiation tampered with (downgrade)")
	// ErrInvalidToken: the server refused the address-validation token
	// its Retry gave this client (RFC 9000 §8.1.3's INVALID_TOKEN): it
	// expired before an Initial carrying it got through, or the client's
	// address changed since the Retry (its NAT rebound). A client takes
	// one Retry per connection, so the handshake is over. It comes
	// wrapped with ErrHandshake, and with the server's reason.
	ErrInvalidToken = errors.New("transport: the server refused the address-validation token of its Retry")
	// ErrStatelessReset: the server lost the connection (it restarted)
	// and said so with a stateless reset carrying the connection's token
	// (RFC 9000 §10.3).
	ErrStatelessReset = errors.New("transport: connection reset by the server (stateless reset): it no longer has the connection (it restarted, or closed it and its CLOSE was lost)")
	// ErrCommitBeyondRead: Commit(n) with n beyond the stream bytes the
	// application has read: it cannot have stored them.
	ErrCommitBeyondRead = errors.New("transport: commit beyond the bytes read")
)
