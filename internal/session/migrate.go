package session

import (
	"crypto/rand"
	"net/netip"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/pacer"
	"github.com/fresh-udp/fresh/internal/recovery"
	"github.com/fresh-udp/fresh/internal/seal"
	"github.com/fresh-udp/fresh/internal/wire"
)

// Connection migration, the server's half of RFC 9000 §9: a client whose
// NAT rebinds (a new source port, or a new address) keeps its connection.
//
// The transport keeps the peer's addresses: per datagram it tells the
// session which one the datagram came from (a Path, and the address
// itself), and after each Poll asks which one the datagram goes to
// (SendPath). It keeps at most three per connection: the current one, the
// previous one (the last validated address, to fall back to), and a
// candidate (the latest address an authenticated packet came from without
// moving the connection, for a PathResponse or a probe). The session
// keeps the rules, and, for the penalty below, the addresses that failed.
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
//     reach again. A move from one unvalidated address to another does
//     not extend that deadline.
//   - The previous address is challenged too (RFC 9000 §9.3.3). If it
//     answers and the new one has not within three of its round trips
//     (see failAt), the new address is given up early: the peer
//     still receives at the old address and does not at the new one,
//     which is what an attacker's copy of a genuine packet, raced ahead
//     from elsewhere, looks like. A real rebinding leaves the old address
//     dead, and a client that moves on purpose answers on both.
//   - A move back to the previous address (the client flapped back, or an
//     attacker raced a copy of a genuine packet to us from elsewhere and
//     the client's next packet arrived from its real address) needs no
//     validation: it was validated (RFC 9000 §9.3.3).
//   - An address that failed validation, or was left before it could
//     answer, is penalised (RFC 9000 §9.3.3: an attacker who keeps racing
//     copies would otherwise move the connection back after every failed
//     validation): its packets no longer move the connection, nor are
//     they read, but for path probes (see refuse). The server probes the
//     address instead, a challenge each RTO, within three times what came
//     from it; an answer lifts the penalty, so a NAT that really rebinds
//     back to that address is followed once the client's next packet
//     arrives (a client answers a challenge with a PING too, for this).
//     The list is bounded (see maxPenalized).
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
	// Refused: from PathOther, a penalised address (one that failed
	// validation): not processed (counted in Stats.MigrationsRefused),
	// and the session may probe the address. The transport remembers the
	// source as the candidate address, as for Accepted.
	Refused
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

// Penalised addresses (RFC 9000 §9.3.3). maxPenalized bounds the list:
// a connection that has seen an attack holds 4 addresses and their expiry,
// whatever the attacker sends. When all of them are live, every other
// new address is treated as penalised too (probed before it is followed),
// so an attacker with more source addresses than the list holds gains
// nothing by rotating them. addrPenalty is how long an address stays
// listed after the last datagram from it (each one is refused and renews
// the penalty): long beside a validation (3 s), as an attacker that keeps
// racing keeps it listed; the probe, not the expiry, is what lets a
// genuine client back.
const (
	maxPenalized = 4
	addrPenalty  = 30 * time.Second
)

type challenge struct {
	data [wire.PathDataLen]byte
	sent clock.Mono
}

// checks is one address's validation: the challenges sent to it, and
// when the next goes.
type checks struct {
	sent [maxChallenges]challenge
	n    int        // challenges sent
	next clock.Mono // the next challenge goes out at
}

// add draws a new challenge, sent now, in slot i.
func (c *checks) add(now clock.Mono) (ch *challenge, i int, ok bool) {
	i = c.n % maxChallenges
	ch = &c.sent[i]
	if _, err := rand.Read(ch.data[:]); err != nil {
		return nil, 0, false // crypto/rand does not fail on supported systems
	}
	ch.sent = now
	c.n++
	return ch, i, true
}

// match is the challenge a response echoes, and its slot, if it is one
// of these.
func (c *checks) match(data [wire.PathDataLen]byte) (*challenge, int, bool) {
	for i := range min(c.n, maxChallenges) {
		if c.sent[i].data == data {
			return &c.sent[i], i, true
		}
	}
	return nil, 0, false
}

// penalty is one address that failed validation, listed until until.
type penalty struct {
	addr  netip.AddrPort
	until clock.Mono
}

// penaltyList is the bounded list of penalised addresses.
type penaltyList [maxPenalized]penalty

// add lists addr (again) until now+addrPenalty: in its own slot if it
// has one, else in the one that expires first (a free or expired one if
// any).
func (l *penaltyList) add(now clock.Mono, addr netip.AddrPort) {
	if l.renew(now, addr) {
		return
	}
	slot := 0
	for i := range l {
		if l[i].until < l[slot].until {
			slot = i
		}
	}
	l[slot] = penalty{addr, now.Add(addrPenalty)}
}

// renew extends addr's penalty to now+addrPenalty if it is listed.
func (l *penaltyList) renew(now clock.Mono, addr netip.AddrPort) bool {
	for i := range l {
		if l[i].addr == addr && now.Before(l[i].until) {
			l[i].until = now.Add(addrPenalty)
			return true
		}
	}
	return false
}

// suspect reports whether a packet from addr may not move the
// connection: addr is listed, or the list is full.
func (l *penaltyList) suspect(now clock.Mono, addr netip.AddrPort) bool {
	live := 0
	for _, p := range l {
		if now.Before(p.until) {
			if p.addr == addr {
				return true
			}
			live++
		}
	}
	return live == maxPenalized
}

// pardon takes addr off the list: it answered a probe.
func (l *penaltyList) pardon(addr netip.AddrPort) {
	for i := range l {
		if l[i].addr == addr {
			l[i] = penalty{}
		}
	}
}

// migration is the session's path state: what every session needs, and
// the rest (pathState) allocated with the first datagram from another
// address.
type migration struct {
	from     Path // of the datagram being handled
	sendPath Path // of the datagram Poll returned last
	reverted bool // PathReverted's event

	// A PathResponse owed to a challenge of the peer, and where it goes.
	respond  bool
	respPath Path
	respData [wire.PathDataLen]byte

	p *pathState
}

// pathState is the server's migration state beyond the first address.
type pathState struct {
	// A validation of the current address, after a move to it.
	validating  bool
	hasPrevious bool           // a validated previous address to fall back to
	addr        netip.AddrPort // the current address, while validating it
	movedAt     clock.Mono     // the move off the validated address
	deadline    clock.Mono     // the validation fails at
	cur         checks         // challenges to the current address
	recv, sent  int64          // bytes from and to the current address since the move
	oldSRTT     time.Duration
	oldMinRTT   time.Duration
	// The previous address's validation (RFC 9000 §9.3.3), while the
	// current one is validated: its round trip, once it answered.
	prev     checks
	prevEcho time.Duration

	// The candidate address (the transport's: the latest other address an
	// accepted packet came from) and what went each way since it became
	// the candidate, for RFC 9000 §8.1's limit on probes and responses.
	cand               netip.AddrPort
	candRecv, candSent int64
	// The probe of penalised addresses: challenges to the candidate while
	// it sends packets that would move the connection, until probeUntil.
	probe      checks
	probeTo    [maxChallenges]netip.AddrPort // by probe slot: the address it went to
	probeUntil clock.Mono

	penalized penaltyList
	// The latest address that answered a probe: never suspect, even with
	// the list full of others (see suspect), until it is penalised.
	vouched netip.AddrPort
}

// suspect reports whether a non-probing datagram from addr is refused:
// addr is penalised, or the list is full and addr did not answer a probe.
func (p *pathState) suspect(now clock.Mono, addr netip.AddrPort) bool {
	return addr != p.vouched && p.penalized.suspect(now, addr)
}

// penalize lists addr.
func (p *pathState) penalize(now clock.Mono, addr netip.AddrPort) {
	p.penalized.add(now, addr)
	if p.vouched == addr {
		p.vouched = netip.AddrPort{}
	}
}

// validating reports whether the current address is being validated.
func (m *migration) validating() bool { return m.p != nil && m.p.validating }

// state is the migration state beyond the first address, allocated now if
// it was not.
func (m *migration) state() *pathState {
	if m.p == nil {
		m.p = new(pathState)
	}
	return m.p
}

// HandleFrom is Handle for a datagram from one of the peer's addresses:
// from names it as the transport's table does (see Path), addr is the
// address itself. Handle(now, wallUS, b) is HandleFrom(now, wallUS, b,
// PathCurrent, netip.AddrPort{}) without the verdict.
func (s *Session) HandleFrom(now clock.Mono, wallUS int64, b []byte, from Path, addr netip.AddrPort) Verdict {
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
		if err == wire.ErrVersion && from == PathCurrent {
			if v, ok := s.handleVersionNegotiation(now, b); ok {
				return v
			}
		}
		s.st.Malformed++
		return Dropped
	}
	if from != PathCurrent && !s.mayMigrate() {
		return Dropped
	}
	if from == PathOther && !probing(h.Type) && s.mig.p != nil && s.mig.p.suspect(now, addr) {
		return s.refuse(now, addr, len(b))
	}
	if h.Type == wire.TypeRetry && !seal.RetryTagValid(b) {
		// Its integrity tag (RFC 9001 §5.8), checked in either mode (a
		// listener does not know the client's): a corrupted Retry is
		// dropped as a lost one, and the Initial goes again.
		s.st.Unauthenticated++
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
		if s.mig.validating() {
			s.mig.p.recv += int64(len(b))
		}
	case highest && !probing(h.Type):
		v = s.move(now, from, addr, len(b))
		from = PathCurrent
	}
	if v == Accepted && from == PathOther {
		s.mig.state().fromCandidate(addr, len(b))
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
func (s *Session) move(now clock.Mono, from Path, addr netip.AddrPort, size int) Verdict {
	p := s.mig.state()
	oldValidated := !p.validating
	if from == PathPrevious && p.hasPrevious {
		// Back to the last validated address: no validation. The
		// address left is penalised: the peer was not there.
		if p.validating {
			s.st.MigrationsReverted++
			p.penalize(now, p.addr)
		}
		p.validating, s.mig.respond = false, false
		p.hasPrevious = oldValidated
		if oldValidated {
			s.st.Migrations++
			return Moved
		}
		return MovedForget
	}
	if oldValidated {
		p.hasPrevious = true
		p.oldSRTT, p.oldMinRTT = s.pathRTT()
		p.movedAt = now
		p.deadline = now.Add(s.pathValidationTimeout())
		p.prev, p.prevEcho = checks{next: now}, 0
	} else {
		// Moved again before the address answered: it is penalised,
		// and the validation keeps its deadline, so that copies from
		// one address after another cannot keep the connection away
		// from the validated one.
		p.penalize(now, p.addr)
	}
	p.validating = true
	p.addr = addr
	p.recv, p.sent = int64(size), 0
	p.cur = checks{next: now}
	s.mig.respond = false // owed on a path we left
	if oldValidated {
		return Moved
	}
	return MovedForget
}

// refuse drops a non-probing datagram from a penalised address unread:
// its packet, authentic or not, must neither move the connection nor be
// taken (a copy raced ahead would take its original's place, and the
// timing the controller sees would be the attacker's path's). The genuine
// packet, if there is one, arrives from the peer's real address. The
// address stays penalised, and becomes the candidate, which the session
// probes: unless a probe runs, a challenge goes at once and again each
// RTO until pathValidationTimeout. A peer really there answers (its
// PathResponse, a probing packet, is read) and is followed from then on.
func (s *Session) refuse(now clock.Mono, addr netip.AddrPort, size int) Verdict {
	p := s.mig.p
	s.st.MigrationsRefused++
	p.penalized.renew(now, addr)
	p.fromCandidate(addr, size)
	if !now.Before(p.probeUntil) {
		p.probeUntil = now.Add(s.pathValidationTimeout())
		p.probe.next = now
	}
	return Refused
}

// fromCandidate counts a datagram from another address that the transport
// now keeps as its candidate.
func (p *pathState) fromCandidate(addr netip.AddrPort, size int) {
	if addr != p.cand {
		p.cand, p.candRecv, p.candSent = addr, 0, 0
	}
	p.candRecv += int64(size)
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
	p := s.mig.p
	if p == nil || p.oldSRTT == 0 || sample <= 0 {
		return false // nothing to compare with
	}
	return 2*sample < p.oldMinRTT || sample > 2*p.oldSRTT+pathRTTSlack
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
		// what it asks about. A client also sends a PING, a non-probing
		// packet (RFC 9000 §9.3.3): a server that challenged it at an
		// address it did not follow (a penalised one, or the previous
		// one while it validates another) follows it there on that.
		m.respond, m.respData, m.respPath = true, c.Data, m.from
		if s.client {
			s.Probe()
		}
		return
	}
	var r wire.PathResponse
	if wire.ParsePathResponse(body, &r) != nil {
		s.st.Malformed++
		return
	}
	p := m.p
	if p == nil {
		return // answers nothing of ours
	}
	// Received on any path, a response validates the path its
	// challenge went on (RFC 9000 §8.2.3).
	if p.validating {
		if c, _, ok := p.cur.match(r.Data); ok {
			p.validating = false
			s.st.Migrations++
			if sample := now.Sub(c.sent); s.pathChanged(sample) {
				s.resetPath(sample)
			}
			return
		}
		if c, _, ok := p.prev.match(r.Data); ok && p.prevEcho == 0 {
			p.prevEcho = max(now.Sub(c.sent), 1) // the previous address still receives: see failAt
			return
		}
	}
	if _, i, ok := p.probe.match(r.Data); ok {
		// The peer is at the penalised address after all: its next
		// packet from there moves the connection.
		p.penalized.pardon(p.probeTo[i])
		p.vouched = p.probeTo[i]
		p.probeUntil = 0
	}
}

// failAt is when the validation of the current address fails: at its
// deadline, or, once the previous address echoed its challenge, three of
// that echo's round trips after the move (and at least pathRTTSlack more
// than one). That is soon enough that the peer's retransmission timer
// (at least MinRTO) does not fire while its ACKs go to an attacker's
// address, and leaves a new path three times the old one's round trip to
// answer; one slower than that, or one that answers too late, is followed
// one probe later (see the penalty).
func (p *pathState) failAt() clock.Mono {
	if p.prevEcho == 0 {
		return p.deadline
	}
	return min(p.deadline, p.movedAt.Add(max(3*p.prevEcho, p.prevEcho+pathRTTSlack)))
}

// pathTimeout fails a validation whose time is up: the address is
// penalised and the connection goes back to the previous address, if
// there is one.
func (s *Session) pathTimeout(now clock.Mono) {
	p := s.mig.p
	if p == nil || !p.validating || now.Before(p.failAt()) {
		return
	}
	s.st.MigrationsReverted++
	p.penalize(now, p.addr)
	if p.hasPrevious {
		p.validating, p.hasPrevious, s.mig.reverted = false, false, true
		// The ACKs that went to the address left did not reach the
		// peer: one goes to it now, before its retransmission timer
		// declares its flight lost.
		if s.ranges.Largest() != cc.InvalidPacketNumber {
			s.ackNow = true
		}
		return
	}
	// Nowhere to go back to: keep the limit, and let IdleTimeout decide.
	p.deadline, p.prevEcho = now.Add(s.pathValidationTimeout()), 0
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
	if !s.mig.validating() {
		return 1<<63 - 1
	}
	return 3*s.mig.p.recv - s.mig.p.sent
}

// The three challenges pollPath may send, in its order: to the current
// address while it is validated, to the previous one meanwhile (until it
// answers), and the probe of a penalised candidate (within RFC 9000 §8.1's
// limit for the candidate).
func (p *pathState) curDue(now clock.Mono) bool {
	return p.validating && !now.Before(p.cur.next)
}

func (p *pathState) prevDue(now clock.Mono) bool {
	return p.validating && p.hasPrevious && p.prevEcho == 0 && !now.Before(p.prev.next)
}

func (p *pathState) probeDue(now clock.Mono) bool {
	return now.Before(p.probeUntil) && !now.Before(p.probe.next) && p.candSent+pathFrameSize <= 3*p.candRecv
}

// pathControlDue reports whether pollPath has something to send now.
func (s *Session) pathControlDue(now clock.Mono) bool {
	p := s.mig.p
	return s.mig.respond || (p != nil && (p.curDue(now) || p.prevDue(now) || p.probeDue(now)))
}

// pathTimer is the earliest deadline of path validation (0: none): the
// next challenges while one fits the amplification limit, and the
// validation's end.
func (s *Session) pathTimer(now clock.Mono) clock.Mono {
	p := s.mig.p
	if p == nil {
		return 0
	}
	var t clock.Mono
	if p.validating {
		t = p.failAt()
	}
	if s.amplificationRoom() >= pathFrameSize {
		if p.validating {
			t = recovery.Earliest(t, p.cur.next)
			if p.hasPrevious && p.prevEcho == 0 {
				t = recovery.Earliest(t, p.prev.next)
			}
		}
		if now.Before(p.probeUntil) && p.candSent+pathFrameSize <= 3*p.candRecv {
			t = recovery.Earliest(t, p.probe.next)
		}
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
	p := m.p
	if p == nil {
		return nil, false
	}
	var c *checks
	switch {
	case p.curDue(now):
		c, m.sendPath = &p.cur, PathCurrent
	case p.prevDue(now):
		c, m.sendPath = &p.prev, PathPrevious
	case p.probeDue(now):
		c, m.sendPath = &p.probe, PathOther
	default:
		return nil, false
	}
	ch, i, ok := c.add(now)
	if !ok {
		return nil, false
	}
	if c == &p.probe {
		p.probeTo[i] = p.cand
	}
	c.next = now.Add(max(s.tr.RTO(), recovery.MinRTO))
	b := s.header(buf, wallUS, wire.TypePathChallenge, 0, 0)
	return wire.AppendPathChallenge(b, &wire.PathChallenge{Data: ch.data}), true
}

// onPathSent counts a datagram sent to the current address while it is
// being validated, and one sent to the candidate.
func (s *Session) onPathSent(n int) {
	p := s.mig.p
	switch {
	case p == nil:
	case s.mig.sendPath == PathCurrent && p.validating:
		p.sent += int64(n)
	case s.mig.sendPath == PathOther:
		p.candSent += int64(n)
	}
}
