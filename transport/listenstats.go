package transport

import (
	"errors"
	"sync/atomic"
)

// ListenerStats is a snapshot of a Listener (Listener.Stats): the
// connections it holds, and the datagrams it dropped before they reached
// any connection, by cause. Counters count since Listen.
type ListenerStats struct {
	// Connections held now: handshaking, waiting for Accept, or accepted
	// and not yet ended. AcceptQueue of them wait for Accept.
	Connections int
	AcceptQueue int

	// RetriesSent: Initials without a token answered with a Retry (no
	// state kept for them), or with a NewToken token this listener could
	// not open.
	RetriesSent int64
	// NewTokensAccepted: Initials whose token, from a NewToken frame of
	// an earlier connection (RFC 9000 §8.1.3), validated the client's
	// address and spared it the Retry. NewTokensRefused: such tokens this
	// listener could not open (not its own, expired, or from another
	// address: the client moved, or the listener restarted and lost its
	// key), answered with a Retry instead.
	NewTokensAccepted, NewTokensRefused int64
	// VersionNegotiations: Initial-sized datagrams of another protocol
	// version answered with a VersionNegotiation (no state kept).
	VersionNegotiations int64
	// Initials dropped, by cause: a token that is not ours, expired, or
	// issued to another address or connection ID (InitialsBadToken; each
	// answered with a Close that says why, RFC 9000 §8.1.3's
	// INVALID_TOKEN, so its Dial fails at once with ErrInvalidToken);
	// MaxConnections reached (InitialsTotalLimit); the source's
	// MaxConnectionsPerSource reached (InitialsSourceLimit), its
	// handshake rate exceeded (InitialsRateLimited) or its
	// MaxHandshakesPerSource handshakes in progress
	// (InitialsSourceHandshakeLimit); the accept queue full
	// (InitialsBacklogFull: the application is not calling Accept).
	InitialsBadToken int64
	// InitialsUnauthenticated: sealed Initials that failed to open under
	// the Initial keys of their connection ID (RFC 9001 §5.2): corrupted
	// on the way (the client resends them), or forged by someone who has
	// not seen the connection ID; and, on a TLS listener, unsealed ones
	// carrying a ClientHello, which no TLS client of this version sends.
	InitialsUnauthenticated      int64
	InitialsTotalLimit           int64
	InitialsSourceLimit          int64
	InitialsRateLimited          int64
	InitialsSourceHandshakeLimit int64
	InitialsBacklogFull          int64
	// HandshakesStarted: connections opened for an admitted Initial, whose
	// handshake began. Each ends its handshake once, as one of
	// HandshakesCompleted or of HandshakeFailures (by reason, counted
	// when the connection ends and logged then: see HandshakeFailures);
	// the difference, Started − Completed − Failures.Total(), is
	// handshaking now. Accept sees only completed ones.
	HandshakesStarted   int64
	HandshakesCompleted int64
	HandshakeFailures   HandshakeFailures
	// InitialsHandshakeLimit: Initials dropped because MaxHandshakes
	// handshakes were in progress.
	InitialsHandshakeLimit int64
	// HandshakeTimeouts: connections dropped because their handshake did
	// not complete within HandshakeTimeout; Accept never saw them. It is
	// HandshakeFailures.Timeout, kept under its older name.
	HandshakeTimeouts int64
	// WrongAddress: datagrams with a live connection's ID from another
	// address than the connection's that it did not take: forged or
	// replayed (they fail authentication), any in plaintext mode (nothing
	// authenticates them, so a connection never migrates), or before the
	// handshake completed. An authentic one from a rebound NAT moves the
	// connection instead (Stats.Migrations). NoConnection: datagrams other than Initial
	// for no connection held. Malformed: datagrams that do not parse.
	WrongAddress int64
	NoConnection int64
	Malformed    int64
	// StatelessResetsSent: datagrams for no connection held answered with
	// a stateless reset (Transport.StatelessResetKey); a restarted server
	// sends one per client of its previous life that is still sending.
	// StatelessResetsRateLimited: those that would have drawn one but
	// found Transport.StatelessResetRate used up.
	StatelessResetsSent        int64
	StatelessResetsRateLimited int64
	// StatelessResetsWithheld: datagrams for no connection held whose
	// connection ID is not one this Transport issues (another ServerID's,
	// or a client's own), which draw no reset: only the server that issued
	// an ID may say its connection is gone, since it alone may hold it (RFC
	// 9000 §21.11). They rise when clients' datagrams reach the wrong
	// process of a shared port (the SO_REUSEPORT hash after a client's
	// address changed, without steering by ID), and when someone probes
	// for reset tokens.
	StatelessResetsWithheld int64
}

// listenerCounters are a Listener's counters, kept by its read loop and
// read by Stats. They are the Transport's: datagrams for no connection,
// from the wrong address or malformed are counted whoever they were for.
type listenerCounters struct {
	retries, versionNegotiations, badToken, totalLimit, sourceLimit, rateLimited, backlogFull atomic.Int64
	initialsUnauth                                                                            atomic.Int64
	sourceHandshakes                                                                          atomic.Int64
	wrongAddress, noConnection, malformed                                                     atomic.Int64
	resetsSent, resetsRateLimited, resetsWithheld                                             atomic.Int64
	// A Listener's handshakes: counted once per connection, when it
	// opens (started), when its handshake completes (Conn.notifyLocked)
	// and when it ends without having completed it (Listener.forget).
	hsStarted, hsCompleted atomic.Int64
	newTokensAccepted      atomic.Int64
	newTokensRefused       atomic.Int64
	hsFailed               [numHSReasons]atomic.Int64
	handshakeLimit         atomic.Int64
}

// Why admit refused an Initial.
var (
	errTotalLimit  = errors.New("connection limit")
	errBacklogFull = errors.New("accept queue full")
	errHandshakes  = errors.New("handshake limit")
)

// Stats returns a snapshot of the listener's counters.
func (l *Listener) Stats() ListenerStats {
	l.mu.Lock()
	st := ListenerStats{Connections: l.held, AcceptQueue: len(l.ready)}
	l.mu.Unlock()
	c := &l.t.st
	st.RetriesSent = c.retries.Load()
	st.NewTokensAccepted = c.newTokensAccepted.Load()
	st.NewTokensRefused = c.newTokensRefused.Load()
	st.VersionNegotiations = c.versionNegotiations.Load()
	st.InitialsBadToken = c.badToken.Load()
	st.InitialsUnauthenticated = c.initialsUnauth.Load()
	st.InitialsTotalLimit = c.totalLimit.Load()
	st.InitialsSourceLimit = c.sourceLimit.Load()
	st.InitialsRateLimited = c.rateLimited.Load()
	st.InitialsSourceHandshakeLimit = c.sourceHandshakes.Load()
	st.InitialsBacklogFull = c.backlogFull.Load()
	st.HandshakesStarted = c.hsStarted.Load()
	st.HandshakesCompleted = c.hsCompleted.Load()
	for r, p := range st.HandshakeFailures.fields() {
		*p = c.hsFailed[r].Load()
	}
	st.HandshakeTimeouts = st.HandshakeFailures.Timeout
	st.InitialsHandshakeLimit = c.handshakeLimit.Load()
	st.WrongAddress = c.wrongAddress.Load()
	st.NoConnection = c.noConnection.Load()
	st.Malformed = c.malformed.Load()
	st.StatelessResetsSent = c.resetsSent.Load()
	st.StatelessResetsRateLimited = c.resetsRateLimited.Load()
	st.StatelessResetsWithheld = c.resetsWithheld.Load()
	return st
}
