package session

import (
	"io"
	"time"

	"github.com/fresh-udp/fresh/acp"
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// This file is the application side of a Session: the stream, updates,
// closing and the questions a driver asks to know whom to wake. Each call
// may make something sendable: the driver polls after it.

// Write appends as much of p to the stream's send buffer as fits and
// returns the count; it never blocks. After CloseWrite it returns
// ErrWriteAfterClose, after the session closed the reason it closed.
func (s *Session) Write(p []byte) (int, error) {
	if s.state == stateClosed {
		return 0, s.err
	}
	if s.out.finSet {
		return 0, ErrWriteAfterClose
	}
	return s.out.write(p), nil
}

// CloseWrite ends the stream in this direction: the FIN goes after the
// last byte written.
func (s *Session) CloseWrite() error {
	if s.state == stateClosed {
		return s.err
	}
	s.out.finSet = true
	return nil
}

// Read copies the stream's next in-order bytes into p. With nothing ready
// it returns 0 and nil while the stream is open, io.EOF after the peer's
// FIN, or the reason the session closed. A read that frees a quarter of
// the receive window schedules a window update (an ACK) at once.
func (s *Session) Read(p []byte) (int, error) {
	if n := s.in.read(p); n > 0 {
		if s.in.windowUpdateDue() {
			s.ackNow = true
		}
		return n, nil
	}
	if s.in.eof() && !s.peerApp { // an application's close aborts the stream
		return 0, io.EOF
	}
	if s.state == stateClosed {
		return 0, s.err
	}
	return 0, nil
}

// SendUpdate replaces the freshest unsent update with payload, generated
// at now (local wall clock wallUS). Only the freshest update is ever sent,
// and never retransmitted: a newer one replaces it.
func (s *Session) SendUpdate(now clock.Mono, wallUS int64, payload []byte) error {
	if s.state == stateClosed {
		return s.err
	}
	return s.sendUpdate(now, wallUS, payload)
}

// Update is a received status update. Payload aliases the session's buffer
// and is valid until the next call into the session.
type Update struct {
	Payload []byte
	// Generated is the generation time on the receiver's wall clock (µs):
	// the sender's stamp corrected by the clock offset estimate.
	GeneratedMicros int64
	// Age is how old the update was on arrival.
	Age time.Duration
	// Early says it came in 0-RTT, with the client's first flight
	// (Config.Allow0RTT; early.go for why that is safe for updates).
	Early bool
}

// TakeUpdate returns the freshest update delivered since the last call.
func (s *Session) TakeUpdate() (Update, bool) {
	if !s.inUpdReady {
		return Update{}, false
	}
	s.inUpdReady = false
	theta, _ := s.theta(s.inUpdGen)
	return Update{Payload: s.inUpd, GeneratedMicros: s.inUpdGen + theta.Microseconds(), Age: s.inUpdAge, Early: s.inUpdEarly}, true
}

// UpdateErr is what a reader of updates gets once TakeUpdate has nothing:
// nil while the session is open; io.EOF after the peer closed normally
// (its updates ended with it, as a stream ends with its FIN); otherwise
// why the session closed (Err), such as ErrPeerClosed wrapped with a note
// after the peer's abort.
func (s *Session) UpdateErr() error {
	if s.state != stateClosed {
		return nil
	}
	if s.peerClean {
		return io.EOF
	}
	return s.err
}

// Close starts a local close: a CLOSE goes out on the next Poll. It is a
// normal close when the peer acknowledged every stream byte, an abort
// otherwise (the peer's Read then reports ErrPeerClosed, not io.EOF).
func (s *Session) Close() { s.close() }

// CloseAbort starts a local close that aborts the stream whatever was
// acknowledged: the CLOSE carries the abort code, so the peer's Read ends
// with ErrStreamAborted after the bytes it has, never io.EOF. This is how
// an application says "what I sent is not the whole" (an upload cut short).
func (s *Session) CloseAbort() {
	s.close()
	if s.closePending {
		s.closeCode = closeAbort
	}
}

// Abort closes the session at once with err, without telling the peer
// (its socket is gone).
func (s *Session) Abort(err error) {
	if s.state != stateClosed {
		s.state, s.err = stateClosed, err
		s.releaseTLS()
	}
}

// Closed reports whether the session has ended; Err then says why.
func (s *Session) Closed() bool { return s.state == stateClosed }

// Err is why the session ended (nil while it is open).
func (s *Session) Err() error {
	if s.state != stateClosed {
		return nil
	}
	return s.err
}

// Opened reports whether the handshake is over (or the session closed).
func (s *Session) Opened() bool { return s.state != stateHandshake }

// ReadReady reports whether Read would not return (0, nil): stream bytes,
// EOF or the close are waiting.
func (s *Session) ReadReady() bool {
	return s.in.readable() > 0 || s.in.eof() || s.state == stateClosed
}

// WriteReady reports whether a blocked writer should try again: an eighth
// of the send buffer is free (not on every ACK: each wake-up is a
// goroutine hand-off, a visible part of the CPU in the loopback profile
// when it happened per ACK: bench/results/transport.md, "How fresh got
// there"), nothing is left unacknowledged, or the session closed.
func (s *Session) WriteReady() bool {
	return s.out.space() >= s.out.limit/8 || s.out.unacked() == 0 || s.state == stateClosed
}

// UpdateReady reports whether TakeUpdate has an update, or the session
// closed.
func (s *Session) UpdateReady() bool { return s.inUpdReady || s.state == stateClosed }

// Unacked is how many written stream bytes the peer has not acknowledged.
func (s *Session) Unacked() int { return s.out.unacked() }

// WriteSpace is how many bytes Write would take now.
func (s *Session) WriteSpace() int {
	if s.state == stateClosed || s.out.finSet {
		return 0
	}
	return s.out.space()
}

// Controller is the stream's window controller, for read-only inspection
// (Metrics, Window) by drivers that trace it.
func (s *Session) Controller() cc.Controller { return s.controller() }

// Policy is the update-rate regulator, for read-only inspection; its
// NextSendTime tells a generate-at-will source when to sample.
func (s *Session) Policy() acp.Policy {
	p, _ := s.BuildPolicy() // a policy that fails to build: nil
	return p
}

// BuildPolicy builds the update-rate policy if Config.UpdatePolicy deferred
// it (the first SendUpdate otherwise does) and returns it, or the error of
// Config.NewUpdatePolicy.
func (s *Session) BuildPolicy() (acp.Policy, error) {
	if err := s.buildPolicy(); err != nil {
		return nil, err
	}
	return s.policy, nil
}

// ConnID is the session's connection ID.
func (s *Session) ConnID() uint64 { return s.connID }

// AckNow reports whether an ACK is due at once (a Read that opened the
// window, a gap, a duplicate): the driver should poll without waiting.
func (s *Session) AckNow() bool { return s.ackNow }

// OWDEstimate is the one-way delay this end estimates for a packet stamped
// sentUS by the peer and received at wallUS (both µs), and whether the
// clock-offset estimate behind it is trusted: the value the session puts
// on its ACKs.
func (s *Session) OWDEstimate(sentUS, wallUS int64) (time.Duration, bool) {
	theta, ok := s.theta(sentUS)
	return time.Duration(wallUS-sentUS)*time.Microsecond - theta, ok
}
