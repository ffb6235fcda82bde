package transport

import (
	"context"
	"fmt"
	"time"

	"github.com/fresh-udp/fresh/internal/session"
)

// End-to-end commit, the application's word on top of the transport's
// ACKs. An acknowledged stream byte has reached the peer's receive
// buffer, no further: a receiver that crashes or whose disk fills before
// it stored it loses a byte the sender was told was delivered. So the
// receiving application, once it has durably stored the stream up to
// offset n (written and fsynced), calls Commit(n); the sender's Committed
// then reports n and WaitCommitted(ctx, n) returns. A commit is the
// peer's claim (see SECURITY.md): the transport checks only that it does
// not exceed the bytes sent.

// ApplicationError is the error a peer's CloseWithError ends the
// connection with: its application's Code and Reason. Read, Write,
// ReadUpdate, WaitCommitted and Err return an error from which
//
//	var ae *transport.ApplicationError
//	if errors.As(err, &ae) { … ae.Code, ae.Reason … }
//
// gets them. It also matches ErrPeerClosed and ErrStreamAborted
// (errors.Is): the peer's stream is aborted, and Read never returns
// io.EOF for it, even when every byte and the FIN had arrived.
type ApplicationError = session.ApplicationError

// MaxApplicationCode is the largest code CloseWithError takes. Close codes
// on the wire are one 32-bit space: the transport's below 0x100, TLS
// alerts 0x100–0x1FF, the application's from 0x10000 (code + 0x10000), so
// a peer never mistakes one for the other.
const MaxApplicationCode = session.MaxApplicationCode

// Commit tells the peer that this application has durably stored the
// stream's bytes [0, n) it read (n counts from the stream's start): call it
// after the bytes are on stable storage (File.Sync), not when Read
// returned them. The peer's Committed becomes n and its WaitCommitted(n)
// returns. Commits only grow: a smaller n than one before does nothing.
// Commit never blocks; the commit is sent reliably (again until the peer
// acknowledges it), and Close and CloseWithError wait up to Config.Linger
// for that acknowledgement. n beyond the bytes Read returned fails with
// ErrCommitBeyondRead; after the connection ended Commit returns why.
func (c *Conn) Commit(n int64) error {
	c.mu.Lock()
	err := c.s.Commit(n)
	c.mu.Unlock()
	if err == nil {
		c.kick()
	}
	return err
}

// Committed is how many of the stream bytes we wrote the peer's
// application has committed (Commit): stored, by its own account, where
// StreamBytesAcked only says they reached its receive buffer. It only
// grows, and never exceeds the bytes written.
func (c *Conn) Committed() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.s.Committed()
}

// WaitCommitted blocks until the peer has committed at least the first n
// stream bytes we wrote, and returns nil; usually n is everything written,
// after CloseWrite. It returns an error, never nil, if the connection ends
// first — wrapping why (Err: an *ApplicationError when the peer's
// application closed it, ErrPeerClosed, ErrIdleTimeout, …) and saying how
// many bytes were committed — and ctx's error if ctx ends first. After
// CloseWrite, n beyond the bytes written fails at once: those can never be
// committed. Any number of goroutines may wait, also while another writes.
func (c *Conn) WaitCommitted(ctx context.Context, n int64) error {
	for {
		c.mu.Lock()
		if c.commitCh == nil {
			c.commitCh = make(chan struct{})
		}
		got, closed, err, ch := c.s.Committed(), c.s.Closed(), c.s.Err(), c.commitCh
		written, final := c.s.Written()
		c.mu.Unlock()
		switch {
		case got >= n:
			return nil
		case closed:
			return fmt.Errorf("%d of %d bytes committed when the connection ended: %w", got, n, err)
		case final && n > written:
			return fmt.Errorf("transport: WaitCommitted(%d): only %d bytes were written (CloseWrite was called)", n, written)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("transport: %d of %d bytes committed: %w", got, n, ctx.Err())
		}
	}
}

// notifyCommitLocked wakes every WaitCommitted when the peer's commit grew
// or the connection ended; c.mu is held.
func (c *Conn) notifyCommitLocked() {
	if got := c.s.Committed(); got != c.commitSeen || c.s.Closed() {
		c.commitSeen = got
		if c.commitCh != nil { // a WaitCommitted waits
			close(c.commitCh)
			c.commitCh = nil
		}
	}
}

// CloseWithError ends the connection with an application error: the peer
// gets an *ApplicationError with code and reason (cut to 255 bytes) from
// its calls, and its stream is aborted (never io.EOF), as with Abort. Use it
// when the application cannot go on — a receiver whose storage failed
// commits what it stored, then closes with the reason, so the sender
// knows both how far it got and why it stopped. It waits up to
// Config.Linger for the peer to acknowledge our latest Commit, not for
// our stream's bytes (the stream is aborted anyway). A code above
// MaxApplicationCode is refused (ErrInvalidConfig) and nothing is closed.
// Close, Abort or CloseWithError after it do nothing.
//
// The CLOSE goes once, as every CLOSE does (there is no closing period
// that repeats it, RFC 9000 §10.2.1): if it is lost, the peer learns only
// at its idle timeout, and its calls fail with ErrIdleTimeout instead —
// still an error, never a silent success; what it committed is exact
// either way.
func (c *Conn) CloseWithError(code uint32, reason string) error {
	if code > MaxApplicationCode {
		return fmt.Errorf("%w: CloseWithError code %d above MaxApplicationCode %d", ErrInvalidConfig, code, MaxApplicationCode)
	}
	c.closeOnce.Do(func() {
		c.lingerCommit()
		c.mu.Lock()
		_ = c.s.CloseWithError(code, reason) // the code is in range
		c.mu.Unlock()
		c.kick()
		c.closed()
	})
	return c.closeErr
}

// lingerCommit waits up to Config.Linger for the peer to acknowledge our
// latest Commit, so a close right after Commit does not leave the peer
// without it.
func (c *Conn) lingerCommit() {
	if c.cfg.Linger <= 0 {
		return
	}
	deadline := time.NewTimer(c.cfg.Linger)
	defer deadline.Stop()
	// writeReady comes with the ACKs of a connection that wrote little;
	// the tick covers one whose send buffer is full, where it may not.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		c.mu.Lock()
		done := !c.s.CommitUnacked() || c.s.Closed()
		c.mu.Unlock()
		if done {
			return
		}
		select {
		case <-c.writeReady:
		case <-tick.C:
		case <-deadline.C:
			return
		}
	}
}
