package session

import (
	"crypto/rand"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/pacer"
	"github.com/fresh-udp/fresh/internal/recovery"
	"github.com/fresh-udp/fresh/internal/wire"
)

// Connection migration, the server's half of RFC 9000 §9: a client whose
// NAT rebinds (a new source port, or a new address) keeps its connection.
//
// The session never sees an address: the transport tells it, per
// datagram, which of its addresses the datagram came from (a Path), and
// after each Poll asks which one the datagram goes to (SendPath). The
// transport keeps at most three addresses per connection: the current
// one, the previous one (the last validated address, to fall back to),
// and a candidate (the latest address an authenticated packet came from
// without moving the connection, for a PathResponse).
//
// The rules:
//
//   - Only an authenticated packet from another address counts (it opens
//     under the connection's keys and passes the replay window), so a
//     forged one is dropped as any forgery is. In plaintext mode nothing
//     authenticates, and the connection never moves.
//   - Only a non-probing packet (not PathChallenge or PathResponse) with
//     the largest packet number of its number space so far moves the
//     connection (RFC 9000 §9.3): a reordered late packet from the old
//     address, or an old one replayed from a third, does not.
//   - The server sends to the new address at once, but at most three times
//     what it received from there until the address echoes a
//     PathChallenge in a PathResponse (RFC 9000 §8.1, §9.3); a challenge
//     goes out at once and again each RTO. Without an answer within
//     pathValidationTimeout the connection goes back to the previous
//     address (RFC 9000 §9.3.2), which a real client's next packets then
//     reach again.
//   - A move back to the previous address (the client flapped back, or an
//     attacker raced a copy of a genuine packet to us from elsewhere and
//     the client's next packet arrived from its real address) needs no
//     validation: it was validated (RFC 9000 §9.3.3).
//   - Congestion and RTT state survive a rebinding: a NAT that picked a
//     new port kept the path. They are reset (RFC 9000 §9.4) only if the
//     validation's round trip says the path changed: see pathChanged.

// Path names an address of the peer as the transport knows it.
type Path uint8

const (
	// PathCurrent is the address the connection sends to.
	PathCurrent Path = iota
	// PathPrevious is the last validated address before a move, while the
	// transport keeps it (until a validation ends, see Verdict).
	PathPrevious
	// PathOther is any other address: for SendPath, the address of the
	// latest datagram HandleFrom accepted from elsewhere without moving.
	PathOther
)

// Verdict is what HandleFrom did with a datagram, and what the transport
// must do with its source address.
type Verdict uint8

const (
	// Dropped: not a packet of this connection, not authentic, or from an
	// address the connection may not move to. From another address, the
	// transport counts it (ListenerStats.WrongAddress).
	Dropped Verdict = iota
	// Accepted: processed; the connection did not move. From PathOther,
	// the transport remembers the source as the candidate address.
	Accepted
	// Moved: the connection moved to the datagram's source, which is now
	// the current address; the old current address becomes the previous.
	Moved
	// MovedForget: as Moved, but the old current address was never
	// validated (the connection moved again while validating it): the
	// transport forgets it and keeps the previous address — unless the
	// move was to the previous address itself, which is then current and
	// no longer also previous.
	MovedForget
)

// pathValidationTimeout is how long a new address has to echo a
// challenge: three times the larger of the current RTO and the initial
// one (1 s, the PTO of RFC 9002's kInitialRtt of 333 ms), as RFC 9000
// §8.2.4 says — 3 s on a short path.
func (s *Session) pathValidationTimeout() time.Duration {
	return 3 * max(s.tr.RTO(), recovery.InitialRTO)
}

// Thresholds of pathChanged: the new path's round trip must be below half
// the old path's minimum, or above twice its smoothed RTT plus
// pathRTTSlack, for the path to count as a new one. Queueing only adds
// delay, so no sample on the old path falls below its minimum; the
// smoothed RTT already holds the usual queue, and twice it plus 20 ms
// leaves room for a burst of it (a 20 ms path with a 20 ms queue may show
// 60 ms on one sample). A move from a 20 ms path to a 150 ms one (Wi-Fi
// to a satellite link), or the other way, is beyond either bound.
const pathRTTSlack = 20 * time.Millisecond

// maxChallenges bounds the challenges kept for one validation: a
// response may echo any of them (RFC 9000 §8.2.3).
const maxChallenges = 4

type challenge struct {
	data [wire.PathDataLen]byte
	sent clock.Mono
}

// migration is the session's path state.
type migration struct {
	from     Path // of the datagram being handled
	sendPath Path // of the datagram Poll returned last

	// A validation of the current address, after a move to it.
	validating  bool
	hasPrevious bool       // a validated previous address to fall back to
	deadline    clock.Mono // the validation fails at
	challengeAt clock.Mono // the next challenge goes out at
	challenges  [maxChallenges]challenge
	nChallenges int   // challenges sent in this validation
	recv, sent  int64 // bytes from and to the current address since the move
	oldSRTT     time.Duration
	oldMinRTT   time.Duration
	reverted    bool // PathReverted's event

	// A PathResponse owed to a challenge of the peer, and where it goes.
	respond  bool
	respData [wire.PathDataLen]byte
	respPath Path
}

// HandleFrom is Handle for a datagram from one of the peer's addresses (see
// Path); Handle(now, wallUS, b) is HandleFrom(now, wallUS, b, PathCurrent)
// without the verdict.
func (s *Session) HandleFrom(now clock.Mono, wallUS int64, b []byte, from Path) Verdict {
	h, body, err := wire.ParseHeader(b)
	if err == nil && h.Type == wire.TypeStatelessReset && (s.ownID(h.ConnID) || h.ConnID == s.peerID()) {
		// Unprotected by design: its token is its proof (reset.go). A
		// restarted server knows only the ID the packet that drew it
		// carried: ours to it, the server's. Only a client takes one,
		// and a client never changes its server's address.
		if from == PathCurrent && s.onStatelessReset(body) {
			return Accepted
		}
		return Dropped
	}
	if err == nil && !s.ownID(h.ConnID) {
		err = errNotOurs
	}
	if err != nil {
		if err == wire.ErrVersion && from == PathCurrent && s.handleVersionNegotiation(b) {
			return Accepted
		}
		s.st.Malformed++
		return Dropped
	}
	if from != PathCurrent && !s.mayMigrate() {
		return Dropped
	}
	highest := false
	if s.sec != nil && s.state != stateClosed {
		space := 0
		if isControl(h.Type) {
			space = 1
		}
		highest = h.PN > s.sec.replay[space].Largest()
		unauth, replayed, early := s.st.Unauthenticated, s.st.Replayed, s.st.EarlyDropped
		if body, err = s.unprotectErr(&h, b, body); err != nil {
			if from != PathCurrent {
				// The transport counts it, once, as from the wrong
				// address (ListenerStats.WrongAddress).
				s.st.Unauthenticated, s.st.Replayed, s.st.EarlyDropped = unauth, replayed, early
			}
			return Dropped
		}
	}
	v := Accepted
	switch {
	case from == PathCurrent:
		if s.mig.validating {
			s.mig.recv += int64(len(b))
		}
	case highest && !probing(h.Type):
		v = s.move(now, from, len(b))
		from = PathCurrent
	}
	s.mig.from = from
	if s.trace != nil {
		s.traceReceived(now, h, body, len(b))
	}
	s.handle(now, wallUS, h, body, len(b))
	s.armProbe(now)
	if s.trace != nil {
		s.traceMetrics(now)
		s.traceClock(now, h.Timestamp)
	}
	return v
}

// mayMigrate reports whether a datagram from another address may be
// considered at all: only a server's, over TLS, once open. A client never
// follows a server to another address (servers do not migrate, RFC 9000
// §9), and in plaintext mode a forger needs only the connection ID.
func (s *Session) mayMigrate() bool {
	return !s.client && s.sec != nil && s.state == stateOpen && s.sec.done
}

// probing reports whether t is a probing frame (RFC 9000 §9.1): one that
// never moves the connection.
func probing(t wire.Type) bool {
	return t == wire.TypePathChallenge || t == wire.TypePathResponse
}

// move makes the datagram's source the current address.
func (s *Session) move(now clock.Mono, from Path, size int) Verdict {
	m := &s.mig
	oldValidated := !m.validating
	if from == PathPrevious && m.hasPrevious {
		// Back to the last validated address: no validation.
		if m.validating {
			s.st.MigrationsReverted++
		}
		m.validating, m.respond = false, false
		m.hasPrevious = oldValidated
		if oldValidated {
			s.st.Migrations++
			return Moved
		}
		return MovedForget
	}
	if oldValidated {
		m.hasPrevious = true
		m.oldSRTT, m.oldMinRTT = s.pathRTT()
	}
	m.validating = true
	m.recv, m.sent = int64(size), 0
	m.deadline = now.Add(s.pathValidationTimeout())
	m.challengeAt = now
	m.nChallenges = 0
	m.respond = false // owed on a path we left
	if oldValidated {
		return Moved
	}
	return MovedForget
}

// pathRTT is the old path's smoothed and minimum RTT: the recovery
// tracker's, or, for an end that sends nothing acknowledged (the server of
// an upload sends only ACKs), the round trip measured from the echoes on
// the peer's data (0, 0 if neither has a sample). The minimum is the
// smallest sample, not the smoothed value: the echo's round trip carries
// the queue the peer's data waits in, and a path without that queue (the
// first packets after an idle period) must not read as a shorter path.
func (s *Session) pathRTT() (srtt, minRTT time.Duration) {
	if r := s.tr.RTT(); r.HasSample() {
		return r.Smoothed(), r.Min()
	}
	return s.echoRTT, s.echoMinRTT
}

// pathChanged applies the rule documented at pathRTTSlack to the
// validation's round trip.
func (s *Session) pathChanged(sample time.Duration) bool {
	m := &s.mig
	if m.oldSRTT == 0 || sample <= 0 {
		return false // nothing to compare with
	}
	return 2*sample < m.oldMinRTT || sample > 2*m.oldSRTT+pathRTTSlack
}

// resetPath starts congestion control and RTT estimation afresh on a new
// path (RFC 9000 §9.4), with the validation's round trip as the first RTT
// sample. The clock offset estimator stays: the offset is between the two
// hosts' clocks, not a property of the path.
func (s *Session) resetPath(sample time.Duration) {
	s.st.PathResets++
	s.ctl = nil // built afresh from the config on next need (controller)
	*s.tr.RTT() = cc.RTTStats{}
	s.tr.RTT().Update(sample)
	s.echoRTT, s.echoMinRTT = 0, 0
	s.pacer = pacer.Pacer{}
	s.seedRTT(sample)
	s.restartPMTU()
}

// onPathFrame handles a PathChallenge or PathResponse (authenticated: in
// plaintext mode they are dropped unread, as nothing of them could be
// trusted).
func (s *Session) onPathFrame(now clock.Mono, h wire.Header, body []byte) {
	if s.sec == nil {
		s.st.Malformed++
		return
	}
	m := &s.mig
	if h.Type == wire.TypePathChallenge {
		var c wire.PathChallenge
		if wire.ParsePathChallenge(body, &c) != nil {
			s.st.Malformed++
			return
		}
		// Answered on the path it came from (RFC 9000 §8.2.2): that is
		// what it asks about.
		m.respond, m.respData, m.respPath = true, c.Data, m.from
		return
	}
	var r wire.PathResponse
	if wire.ParsePathResponse(body, &r) != nil {
		s.st.Malformed++
		return
	}
	if !m.validating {
		return // late, or answers nothing of ours
	}
	for _, c := range m.challenges[:min(m.nChallenges, maxChallenges)] {
		if c.data == r.Data {
			// Received on any path, it validates the path the challenge
			// went on (RFC 9000 §8.2.3): the current one.
			m.validating = false
			s.st.Migrations++
			if sample := now.Sub(c.sent); s.pathChanged(sample) {
				s.resetPath(sample)
			}
			return
		}
	}
}

// pathTimeout fails a validation whose deadline passed: the connection goes
// back to the previous address, if there is one.
func (s *Session) pathTimeout(now clock.Mono) {
	m := &s.mig
	if !m.validating || now.Before(m.deadline) {
		return
	}
	s.st.MigrationsReverted++
	if m.hasPrevious {
		m.validating, m.hasPrevious, m.reverted = false, false, true
		return
	}
	// Nowhere to go back to: keep the limit, and let IdleTimeout decide.
	m.deadline = now.Add(s.pathValidationTimeout())
}

// Probe makes the next Poll send a PING, an ack-eliciting packet: a
// client that moved to a new socket sends it at once, so that the server
// moves on its arrival and the ACK proves the new path both ways.
func (s *Session) Probe() {
	if s.state == stateOpen {
		s.probe = true
	}
}

// PathReverted reports, once, that a validation failed and the connection
// went back to the previous address: the transport makes it current again
// (and keeps no previous address).
func (s *Session) PathReverted() bool {
	r := s.mig.reverted
	s.mig.reverted = false
	return r
}

// SendPath is the address the datagram the last Poll returned goes to:
// PathCurrent, or PathOther for a PathResponse to a challenge that came
// from the candidate address (PathPrevious likewise).
func (s *Session) SendPath() Path { return s.mig.sendPath }

// pathRoom is what the current address may still be sent while it is not
// validated: three times what came from it, less what went to it (RFC 9000
// §8.1's anti-amplification limit, applied to a new address by §9.3).
func (s *Session) pathRoom() int64 {
	if !s.mig.validating {
		return 1<<63 - 1
	}
	return 3*s.mig.recv - s.mig.sent
}

// pathControlDue reports whether pollPath has something to send now.
func (s *Session) pathControlDue(now clock.Mono) bool {
	return s.mig.respond || (s.mig.validating && !now.Before(s.mig.challengeAt))
}

// pathTimer is the earliest deadline of path validation (0: none): the
// next challenge while one fits the amplification limit, and the
// validation's end.
func (s *Session) pathTimer() clock.Mono {
	m := &s.mig
	if !m.validating {
		return 0
	}
	t := m.deadline
	if s.amplificationRoom() >= pathFrameSize {
		t = recovery.Earliest(t, m.challengeAt)
	}
	return t
}

// pathFrameSize is a protected PathChallenge or PathResponse datagram.
const pathFrameSize = wire.HeaderLen + wire.PathDataLen + wire.ProtectedOverhead

// pollPath builds a PathResponse owed, else a PathChallenge due.
func (s *Session) pollPath(now clock.Mono, wallUS int64, buf []byte) ([]byte, bool) {
	m := &s.mig
	if m.respond {
		m.respond = false
		m.sendPath = m.respPath
		b := s.header(buf, wallUS, wire.TypePathResponse, 0, 0)
		return wire.AppendPathResponse(b, &wire.PathResponse{Data: m.respData}), true
	}
	if !m.validating || now.Before(m.challengeAt) {
		return nil, false
	}
	c := &m.challenges[m.nChallenges%maxChallenges]
	if _, err := rand.Read(c.data[:]); err != nil {
		return nil, false // crypto/rand does not fail on supported systems
	}
	c.sent = now
	m.nChallenges++
	m.challengeAt = now.Add(max(s.tr.RTO(), recovery.MinRTO))
	b := s.header(buf, wallUS, wire.TypePathChallenge, 0, 0)
	return wire.AppendPathChallenge(b, &wire.PathChallenge{Data: c.data}), true
}

// onPathSent counts a datagram sent to the current address while it is
// being validated.
func (s *Session) onPathSent(n int) {
	if s.mig.validating && s.mig.sendPath == PathCurrent {
		s.mig.sent += int64(n)
	}
}
