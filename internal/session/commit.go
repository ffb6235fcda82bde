package session

import (
	"fmt"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/wire"
)

// End-to-end commit. An ACK says stream bytes reached the peer's receive
// buffer, nothing more: a receiver that crashes, or whose disk fills,
// before it stored them loses bytes the sender was told were delivered.
// Only the receiving application knows when bytes are safe (the
// end-to-end argument: Saltzer, Reed and Clark, "End-to-End Arguments in
// System Design", 1984), so it says so itself: Commit(n) once it has
// durably stored the stream's bytes [0, n). A Commit frame carries n to
// the sender, whose Committed is then n.
//
// Reliability is the stream's own: a Commit frame is an ack-eliciting
// packet in the recovery tracker (kindCommit, Offset = the committed
// offset), declared lost by the same rules as data (RFC 9002 §6) and then
// sent again — only the latest committed offset, never an older one, as
// QUIC retransmits the newest MAX_DATA (RFC 9000 §13.3). The sender keeps
// the largest offset it received, so a late or repeated frame never lowers
// it.
//
// A commit is the peer's claim, checked only against what it could have
// received: an offset beyond the bytes ever sent is a protocol violation
// and closes the connection. Within that, a lying peer can say "stored"
// for bytes it dropped; what it proves is only what the peer's
// application says (SECURITY.md).

// kindCommit is the recovery tracker's kind of a Commit packet.
const kindCommit uint8 = 3

// commitState is both ends of the commit: what this end's application
// committed (as the stream's receiver) and what the peer committed (as its
// sender).
type commitState struct {
	local   int64 // the largest offset our application committed
	acked   int64 // the largest of ours the peer acknowledged
	pending bool  // a Commit frame carrying local is due
	peer    int64 // the largest offset the peer committed
}

// Commit records that the application has durably stored the stream's
// bytes [0, n) it read, and sends the peer a Commit frame saying so. n
// counts from the stream's start; a smaller n than one committed before
// changes nothing. n beyond the bytes Read returned is refused
// (ErrCommitBeyondRead): an application cannot have stored what it has
// not read. After the session closed it returns why.
func (s *Session) Commit(n int64) error {
	if s.state == stateClosed {
		return s.err
	}
	if n < 0 || n > s.in.readOff {
		return fmt.Errorf("%w: Commit(%d) with %d bytes read", ErrCommitBeyondRead, n, s.in.readOff)
	}
	if n > s.commit.local {
		s.commit.local = n
		s.commit.pending = true
	}
	return nil
}

// Committed is the largest stream offset the peer committed: the bytes
// [0, Committed) of what we wrote its application says it stored.
func (s *Session) Committed() int64 { return s.commit.peer }

// CommitUnacked reports whether the peer has not yet acknowledged our
// latest Commit: a close that waits for it (transport's linger) does not
// cut it off.
func (s *Session) CommitUnacked() bool { return s.commit.local > s.commit.acked }

// Written is how many stream bytes the application wrote so far, and
// whether that is all it will (CloseWrite was called).
func (s *Session) Written() (n int64, final bool) { return s.out.end(), s.out.finSet }

// pollCommit builds the pending Commit frame in buf, ahead of a CLOSE that
// is pending too: a receiver that commits and then closes (an upload it
// stored, then a storage failure) has its peer learn the commit first.
func (s *Session) pollCommit(now clock.Mono, wallUS int64, buf []byte) ([]byte, bool) {
	if !s.commit.pending || s.state != stateOpen {
		return nil, false
	}
	s.commit.pending = false
	s.lastSent = now
	// The frame's size is its in-flight bytes, so the retransmission
	// timer stays armed while it is unacknowledged (ArmRTO stops it when
	// nothing is in flight) and lost commits are sent again.
	size := wire.HeaderLen + wire.CommitLen
	pn := s.tr.OnSent(now, cc.ByteCount(size), kindCommit, s.commit.local, 0)
	b := s.header(buf, wallUS, wire.TypeCommit, 0, pn)
	return wire.AppendCommit(b, &wire.Commit{Offset: s.commit.local}), true
}

// onCommit takes the peer's Commit frame. An offset beyond the bytes we
// ever sent claims bytes the peer cannot have: a protocol violation.
func (s *Session) onCommit(now clock.Mono, wallUS int64, h wire.Header, body []byte) {
	var c wire.Commit
	if err := wire.ParseCommit(body, &c); err != nil {
		s.st.Malformed++
		return
	}
	if c.Offset > s.out.next {
		s.fail(fmt.Errorf("%w: peer committed %d stream bytes, only %d were sent", ErrProtocol, c.Offset, s.out.next), closeProtocol)
		return
	}
	// Acknowledged at once: the sender's WaitCommitted is waiting for it,
	// and the peer resends it until acknowledged.
	s.onAckEliciting(now, wallUS, h, wire.Echo{}, true)
	s.commit.peer = max(s.commit.peer, c.Offset)
}

// commitAcked notes the acknowledgement of a Commit packet p.
func (s *Session) commitAcked(p int64) { s.commit.acked = max(s.commit.acked, p) }

// commitLost sends the latest commit again if the lost packet carried it
// and nothing acknowledged it since; a lost older one is superseded.
func (s *Session) commitLost(p int64) {
	if p >= s.commit.local && p > s.commit.acked {
		s.commit.pending = true
	}
}
