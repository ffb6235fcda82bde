package session

import (
	"slices"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/recovery"
	"github.com/fresh-udp/fresh/internal/wire"
)

// Datagram packetization layer path MTU discovery (DPLPMTUD, RFC 8899).
//
// The sender starts at BASE_PLPMTU (pmtuBase, 1200 bytes: every path a
// session can open carries it, since the Initial is padded to it) and
// searches upward with probe packets (wire.TypePMTUProbe: padding only,
// ack-eliciting) of the candidate sizes of pmtuCandidates, in ascending
// order, up to the ceiling (Config.MaxDatagram): RFC 8899 §5.3.2's probe
// sequence over a short list of the sizes real paths have, rather than a
// binary search, which would spend probes on sizes no link uses. An
// acknowledged probe makes its size the PLPMTU; MAX_PROBES (3) lost
// probes of one size end the search below it (§5.1.2), lost meaning a
// packet sent after the probe arrived and the probe did not (a probe a
// retransmission timeout gave up is settled by the ACKs after it:
// onProbeLost, onAckFrame). Once the search
// completes, RAISE_TIMER (600 s, §5.1.1) later the next size above is
// probed again: a path that grew is found, and on one that did not, three
// lost probes every 10 minutes are the cost.
//
// Black-hole detection (§4.3, §5.2): a path whose MTU falls below the
// PLPMTU drops every full-size packet while small ones (ACKs, updates,
// PINGs) still cross. pmtuBlackHoleEvents losses of full-size packets
// with no full-size packet acknowledged since, counting at most one per
// detection instant (a retransmission timeout declares the whole window
// lost at once: one event, not a window of them), fall back to BASE and
// search again, below the size that vanished until RAISE_TIMER has passed
// (so a path that black-holes large packets now and then changes size at
// most once per RAISE_TIMER, not once per search). Congestion losses in a bulk transfer do not count: they
// are detected by the acknowledgement of later full-size packets, which
// resets the count.
//
// A black hole is loss of data "sent with a specific packet size" (RFC
// 8899 §4.3): small packets still cross. A radio fade loses (or holds)
// every packet, small ones too, and a sender that counted its timeouts
// alone would take a cellular link's two-second fade for a black hole
// and spend RAISE_TIMER below a size the path carries. So the fallback
// needs a confirmation, as §4.3 has a PL confirm that the smaller size
// is usable and §5.2's BASE state confirms BASE_PLPMTU with a packet of
// that size: from the first counted loss on, every retransmission timeout
// also sends a PING (far below BASE; RFC 9002 §6.2.4's probe), and only
// once a small packet sent since then has been acknowledged, with still
// nothing full-size, does the next counted loss fall back. Into a fade
// the PINGs are lost like the rest; when it ends the full-size packets
// held in it are acknowledged and the count starts over. Even then the
// size does not fall yet: a queue that overflows as a fade's backlog
// drains loses full-size packets sent after a small one crossed too, so
// probes of the PLPMTU itself, each with a PING right behind it, confirm
// the black hole (onBigLost): MAX_PROBES of them lost while their PINGs
// cross. A full queue drops a probe and the PING behind it alike.
//
// Probe losses are not congestion (RFC 8899 §4.4: a lost probe must not
// reduce the congestion window): the controller never sees a probe, sent,
// acknowledged or lost. Nor are probes counted in the controller's bytes
// in flight: at most one is outstanding, at most three per size and
// search, so they cannot build a queue, and counting bytes the controller
// is never told about would leave them stuck in its window. They are
// paced like stream packets and tracked by the loss detector (its
// packet- and time-threshold rules and the retransmission timeout are
// RFC 8899's PROBE_TIMER), in a kind of their own.
//
// Sans-I/O like the rest of the session: every call carries now.
type pmtu struct {
	enabled bool
	base    int   // BASE_PLPMTU
	size    int   // the PLPMTU: the largest datagram the path is known to carry
	cands   []int // candidate sizes above base, ascending, the last the ceiling
	next    int   // index in cands of the next size to probe
	state   pmtuState

	// The outstanding probe, if any. timedOut: a retransmission timeout
	// gave it up with nothing sent after it acknowledged, before
	// timedOutNext was sent; alone: it was all that timeout gave up. The
	// ACK frames that follow settle it (onAckFrame).
	probing  bool
	timedOut bool
	alone    bool
	// confirming: the full-size losses meet the black-hole rule, and
	// probes of the PLPMTU itself, each followed at once by a PING,
	// decide it; probeConfirms says the outstanding probe is one of them,
	// confirmLost counts those lost in a row. (Beside the bools above: in
	// the padding before timedOutNext.)
	confirming    bool
	probeConfirms bool
	confirmLost   uint8
	// queued: the latest RTT sample stood well above the minimum, so the
	// bottleneck's queue held a backlog (onRTT); inconclusive (below,
	// beside smallAcked: no padding of its own) counts the confirmation
	// probes whose loss it left undecided.
	queued       bool
	timedOutNext cc.PacketNumber
	probePN      cc.PacketNumber
	probeLen     int
	count        int // probes of cands[next] lost in a row (PROBE_COUNT)

	raiseAt clock.Mono // searchComplete: when to probe above again

	// Black-hole detection.
	bigAcked cc.PacketNumber // largest full-size packet acknowledged
	events   int             // full-size losses since, one per instant
	eventAt  clock.Mono      // the latest counted
	// suspectAt is when the first of them was counted; smallAcked says a
	// datagram of at most BASE sent since then was acknowledged, the
	// latest of them sent at smallSent: the path carries small packets
	// while full-size ones vanish.
	suspectAt    clock.Mono
	smallAcked   bool
	inconclusive uint8
	smallSent    clock.Mono
	// After a black hole, sizes at or above holeSize are not probed
	// before holeUntil (RAISE_TIMER later): a path that drops large
	// packets now and then changes size at most once per RAISE_TIMER.
	holeSize  int
	holeUntil clock.Mono

	changes   int64 // PLPMTU changes, for the tests' flap bound
	sent      int64
	lost      int64
	blackHole int64
}

type pmtuState uint8

const (
	pmtuSearching pmtuState = iota
	pmtuSearchComplete
)

const (
	// pmtuBase is BASE_PLPMTU (RFC 8899 §5.1.2): QUIC's 1200 bytes (RFC
	// 9000 §14), the size of the padded Initial that opened the path.
	pmtuBase = 1200
	// pmtuMaxProbes is MAX_PROBES (RFC 8899 §5.1.2's default, 3).
	pmtuMaxProbes = 3
	// pmtuRaiseTimer is RAISE_TIMER (RFC 8899 §5.1.1: 600 s).
	pmtuRaiseTimer = 600 * time.Second
	// pmtuBlackHoleEvents is how many full-size losses, with nothing
	// full-size acknowledged in between, make a black hole suspected (and
	// confirmed by probes), once a small packet sent since the first of
	// them has crossed: the PING's ACK restarts the retransmission timer,
	// so a bulk transfer into a path whose MTU fell finds it, the
	// confirmation included, well before PathDeadTimeouts
	// (TestPMTUBlackHoleFallsBack; bench/results/transport.md, "Path MTU
	// discovery").
	pmtuBlackHoleEvents = 3
	// DefaultMaxDatagramPMTUD is the default ceiling of discovery (the
	// largest datagram, UDP payload bytes): a 1500-byte Ethernet MTU less
	// an IPv6 header (40) and UDP's (8), so one ceiling fits both families
	// on the paths most common (Ethernet, Wi-Fi, most broadband; 20 bytes
	// to spare over IPv4). Larger MTUs (jumbo frames, loopback) need a
	// configured ceiling.
	DefaultMaxDatagramPMTUD = 1500 - 40 - 8
)

// pmtuCandidates are the sizes probed, ascending (UDP payload bytes):
// 1280 (tunnels over 1350-1400-byte links), 1400 (common VPN and
// cellular-core limits), 1452 (1500-byte links over IPv6), 1464 (PPPoE's
// 1492 over IPv4), 1472 (1500 over IPv4), and jumbo frames' 9000 over
// IPv6 and IPv4. The ceiling is added if it is not one of them.
var pmtuCandidates = []int{1280, 1400, 1452, 1464, 1472, 9000 - 48, 9000 - 28}

// newPMTU returns the discovery state for datagrams of at most ceiling
// bytes; disabled, the size stays at the ceiling (the fixed-size
// behaviour: Config.DisablePathMTUDiscovery).
func newPMTU(enabled bool, ceiling int) pmtu {
	p := pmtu{enabled: enabled, base: min(pmtuBase, ceiling), size: ceiling, bigAcked: cc.InvalidPacketNumber}
	if !enabled {
		p.state = pmtuSearchComplete
		return p
	}
	p.size = p.base
	for _, c := range pmtuCandidates {
		if c > p.base && c < ceiling {
			p.cands = append(p.cands, c)
		}
	}
	if ceiling > p.base {
		p.cands = append(p.cands, ceiling)
	}
	if len(p.cands) == 0 {
		p.state = pmtuSearchComplete
	}
	return p
}

// probeDue reports whether a probe should go out at now, and its size:
// while searching, and once RAISE_TIMER has passed after a search.
func (p *pmtu) probeDue(now clock.Mono) (int, bool) {
	if p.enabled && p.confirming && !p.probing {
		return p.size, true
	}
	if !p.enabled || p.probing || p.next >= len(p.cands) {
		return 0, false
	}
	if p.state == pmtuSearchComplete && (p.raiseAt == 0 || now.Before(p.raiseAt)) {
		return 0, false
	}
	if p.holeSize > 0 && now.Before(p.holeUntil) && p.cands[p.next] >= p.holeSize {
		return 0, false // searched up to the size that vanished: wait
	}
	return p.cands[p.next], true
}

// nextTimeout is when probeDue turns true by itself (0: not by time),
// for a caller that found it false at now: a time after now, or 0.
func (p *pmtu) nextTimeout(now clock.Mono) clock.Mono {
	if !p.enabled || p.probing || p.next >= len(p.cands) {
		return 0
	}
	var t clock.Mono
	if p.state == pmtuSearchComplete {
		t = p.raiseAt
	}
	if p.holeSize > 0 && p.cands[p.next] >= p.holeSize {
		t = max(t, p.holeUntil)
	}
	if !now.Before(t) {
		return 0
	}
	return t
}

// onProbeSent records the probe of size bytes sent as pn.
func (p *pmtu) onProbeSent(pn cc.PacketNumber, size int) {
	p.probeConfirms = p.confirming && size == p.size
	if p.state == pmtuSearchComplete && !p.probeConfirms {
		p.state, p.count = pmtuSearching, 0 // RAISE_TIMER passed: a new search
	}
	p.probing, p.timedOut, p.probePN, p.probeLen = true, false, pn, size
	p.sent++
}

// onProbeAcked: the path carries size bytes; the next candidate is
// probed at once (RFC 8899 §5.2: SEARCHING continues).
func (p *pmtu) onProbeAcked(now clock.Mono, pn cc.PacketNumber) {
	if !p.probing || pn != p.probePN {
		return
	}
	p.probing = false
	if p.probeLen >= p.size {
		p.clearSuspicion() // the path carries the PLPMTU after all
	}
	if p.probeConfirms {
		p.probeConfirms = false
		return
	}
	if p.probeLen > p.size {
		p.setSize(p.probeLen)
	}
	for p.next < len(p.cands) && p.cands[p.next] <= p.size {
		p.next++
	}
	p.count = 0
	if p.next >= len(p.cands) {
		p.complete(now)
	}
}

// onProbeLost: after MAX_PROBES losses of one size the path is taken not
// to carry it and the search is complete (RFC 8899 §5.1.2). later says a
// packet sent after the probe has been acknowledged: the path carried
// that one and not the probe, the loss RFC 9002 §6.1 defines. Without
// it, a retransmission timeout declaring everything lost (next is the
// first packet number after it), the loss says nothing of the size yet:
// in a fade every packet waits or vanishes, whatever its size, and three
// such probes ended the search below sizes the path carries for
// RAISE_TIMER. The probe then stays outstanding (no other is sent) until
// the ACK frames after the fade settle it (onAckFrame).
func (p *pmtu) onProbeLost(now clock.Mono, pn cc.PacketNumber, later bool, next cc.PacketNumber) {
	if !p.probing || pn != p.probePN || p.timedOut {
		return
	}
	if !later {
		p.timedOut, p.alone, p.timedOutNext = true, false, next
		return
	}
	p.probeLostForSize(now)
}

// onTimeoutAlone says the timeout that gave the probe up gave up nothing
// else: the probe went alone (an idle connection's search), and the PING
// the timeout sends next is the small packet sent right after it.
func (p *pmtu) onTimeoutAlone() {
	if p.timedOut {
		p.alone = true
	}
}

// onAckFrame settles a probe a timeout gave up. Acknowledged by the frame,
// it arrived late (a fade held it): the path carries its size. Not
// acknowledged while a packet sent after it and before the timeout is (or,
// alone, the PING after it): lost for its size. Not acknowledged while
// only packets sent after the timeout are: it vanished with everything
// else in a fade, and it is forgotten, not counted; the search goes on.
func (p *pmtu) onAckFrame(now clock.Mono, a *wire.Ack) {
	if !p.probing || !p.timedOut || cc.PacketNumber(a.Ranges[0].Largest) <= p.probePN {
		return
	}
	between := false
	for _, r := range a.Ranges[:a.NRanges] {
		lo, hi := cc.PacketNumber(r.Smallest), cc.PacketNumber(r.Largest)
		if lo <= p.probePN && p.probePN <= hi {
			p.timedOut = false
			p.onProbeAcked(now, p.probePN)
			return
		}
		if hi > p.probePN && lo < p.timedOutNext {
			between = true
		}
	}
	switch {
	case between || p.alone:
		p.probeLostForSize(now)
	case cc.PacketNumber(a.Ranges[0].Largest) >= p.timedOutNext:
		p.probing, p.timedOut = false, false // no verdict: probe again
	}
}

// probeLostForSize counts a probe lost because of its size.
func (p *pmtu) probeLostForSize(now clock.Mono) {
	p.probing, p.timedOut = false, false
	p.lost++
	if p.probeConfirms {
		p.probeConfirms = false
		if p.queued && int(p.inconclusive) < pmtuMaxProbes {
			// Its PING came back through a standing queue: a queue that
			// limits bytes, nearly full, takes a PING and not 1452 bytes
			// behind it. Probe again; only so many times, for a black
			// hole on a path whose delay swings keeps them coming.
			p.inconclusive++
			return
		}
		if p.confirmLost++; int(p.confirmLost) >= pmtuMaxProbes {
			p.fallBack(now)
		}
		return
	}
	p.count++
	if p.count >= pmtuMaxProbes {
		p.count = 0
		p.complete(now)
	}
}

// complete ends a search: the next one RAISE_TIMER later.
func (p *pmtu) complete(now clock.Mono) {
	p.state = pmtuSearchComplete
	p.raiseAt = now.Add(pmtuRaiseTimer)
}

// setSize changes the PLPMTU.
func (p *pmtu) setSize(n int) {
	if n != p.size {
		p.size = n
		p.changes++
	}
}

// big reports whether a datagram of n bytes is one a black hole below
// the PLPMTU would drop: larger than BASE.
func (p *pmtu) big(n int) bool { return p.enabled && n > p.base }

// onBigAcked: a datagram larger than BASE of packet number pn crossed
// the path: no black hole below it.
func (p *pmtu) onBigAcked(pn cc.PacketNumber) {
	p.bigAcked = max(p.bigAcked, pn)
	p.clearSuspicion()
}

// onRTT notes whether an RTT sample shows a standing queue: above twice
// the minimum and 20 ms more (a cellular path's jitter stays below that;
// a drop-tail buffer that overflowed holds hundreds of milliseconds).
func (p *pmtu) onRTT(rtt, minRTT time.Duration) {
	p.queued = rtt > 2*minRTT && rtt-minRTT > 20*time.Millisecond
}

// clearSuspicion: a full-size packet crossed; whatever was counted
// towards a black hole, and a confirmation under way, ends.
func (p *pmtu) clearSuspicion() {
	p.events, p.smallAcked, p.smallSent = 0, false, 0
	p.confirming, p.confirmLost, p.inconclusive = false, 0, 0
}

// suspect reports whether full-size losses are being counted (a black
// hole is suspected but not confirmed): retransmission timeouts then send
// a small packet too.
func (p *pmtu) suspect() bool { return p.enabled && p.events > 0 }

// onSmallAcked: a datagram of at most BASE, sent at sent, crossed the
// path. While a black hole is suspected, one sent since the first counted
// loss confirms that small packets cross.
func (p *pmtu) onSmallAcked(sent clock.Mono) {
	if p.events > 0 && !sent.Before(p.suspectAt) {
		p.smallAcked = true
		p.smallSent = max(p.smallSent, sent)
	}
}

// onBigLost counts the loss, detected at now, of a datagram larger than
// BASE sent at sent as pn. When the losses meet the black-hole rule it
// starts the confirmation (confirming): probes of the PLPMTU, each with a
// PING right behind it, until MAX_PROBES of them in a row are lost while
// their PINGs cross (fallBack), or one arrives, or a full-size packet is
// acknowledged (clearSuspicion). It reports whether it started one.
//
// Why the probes: data losses alone cannot tell a path that dropped its
// MTU from a queue that overflowed. After a fade the backlog drains, a
// small PING crosses the emptied queue, and the burst that follows
// overflows it again: full-size packets sent after a small one that
// crossed, lost, the rule met, on a path that carries 1452 bytes (a
// drop-tail buffer on a cellular trace did exactly this). A probe and the
// PING sent back to back meet the same queue, so a full queue drops both
// or neither; only a path that drops by size keeps dropping the probe and
// delivering the PING (RFC 8899 §4.3: confirm the black hole with a
// probe of the PLPMTU).
func (p *pmtu) onBigLost(now, sent clock.Mono, pn cc.PacketNumber) bool {
	if p.bigAcked != cc.InvalidPacketNumber && pn < p.bigAcked {
		return false // a later full-size packet arrived: congestion, not MTU
	}
	if p.events > 0 && sent.Before(p.eventAt) {
		return false // lost in the same instant as one already counted
	}
	if p.events == 0 {
		p.suspectAt, p.smallAcked = now, false
	}
	p.events++
	p.eventAt = now
	if p.confirming || p.events < pmtuBlackHoleEvents || !p.smallAcked || sent.Before(p.smallSent) {
		// Not yet; or nothing small crossed either: a fade; or this
		// full-size packet left before the small one that crossed, so
		// it may have been dropped by a queue that has drained since
		// (congestion); or the probes are deciding already.
		return false
	}
	p.confirming, p.confirmLost, p.inconclusive = true, 0, 0
	return true
}

// fallBack: the confirmation probes vanished while their PINGs crossed:
// a black hole. The PLPMTU is back at BASE and a new search starts (RFC
// 8899 §5.2, state BASE then SEARCHING), below the size that vanished
// until RAISE_TIMER has passed.
func (p *pmtu) fallBack(now clock.Mono) {
	p.clearSuspicion()
	p.blackHole++
	p.holeSize, p.holeUntil = p.size, now.Add(pmtuRaiseTimer)
	p.setSize(p.base)
	p.next, p.count, p.probing, p.timedOut = 0, 0, false, false
	p.state = pmtuSearching
}

// candidates is the probe sequence (for tests).
func (p pmtu) candidates() []int { return slices.Clone(p.cands) }

// probeDue reports whether the session sends a PMTU probe at now (pacing
// aside), and its size. Only an open session whose peer's address is
// validated (a probe is the largest datagram it sends), which carries
// stream data (an update-only connection's small datagrams gain nothing
// from a larger size) and whose path answered since the last
// retransmission timeout (probes into a dead path would all be lost and
// end the search below sizes the path carries).
func (s *Session) probeDue(now clock.Mono) (int, bool) {
	if s.state != stateOpen || !s.AddressValidated() || s.out.end() == 0 || s.tr.Backoff() > 0 {
		return 0, false
	}
	return s.pmtu.probeDue(now)
}

// pmtuTimeout is when the session next wants to be polled for a probe:
// RAISE_TIMER's expiry, or, while a probe is due, the pacer's next slot.
// A probe held back by the session's own conditions needs no deadline:
// what lifts them (an ACK, the peer's address validated) arrives as a
// datagram, and the driver polls after every one.
func (s *Session) pmtuTimeout(now clock.Mono) clock.Mono {
	if s.state != stateOpen || s.out.end() == 0 {
		return 0
	}
	if _, ok := s.pmtu.probeDue(now); ok {
		if _, ok := s.probeDue(now); ok {
			return max(s.pacer.Next(), now)
		}
		return 0
	}
	return s.pmtu.nextTimeout(now)
}

// appendProbe builds a PMTU probe of size bytes, protection included
// (hdr starts the datagram). It is tracked for loss like any packet, in
// its own kind, and paced, but the controller never sees it (pmtu.go).
func (s *Session) appendProbe(now clock.Mono, hdr func(wire.Type, uint8, cc.PacketNumber) []byte, size int) []byte {
	pn := s.tr.OnSent(now, cc.ByteCount(size), kindPMTU, 0, 0)
	s.pmtu.onProbeSent(pn, size)
	if s.pmtu.probeConfirms {
		s.probe = true // its small twin, right behind it (onBigLost)
	}
	s.lastSent = now
	s.pacer.OnSent(now, cc.ByteCount(size), s.controller().PacingRate())
	return wire.AppendPMTUProbe(hdr(wire.TypePMTUProbe, 0, pn), size-wire.HeaderLen-s.cfg.tagLen())
}

// dataDatagram is the size of the Data datagram that carried p.
func (s *Session) dataDatagram(p *recovery.Packet) int {
	return p.Len + wire.HeaderLen + wire.DataOverhead + s.cfg.tagLen()
}

// pmtuDataAcked tells discovery that the stream packet pn arrived.
func (s *Session) pmtuDataAcked(pn cc.PacketNumber, p *recovery.Packet) {
	if s.pmtu.big(s.dataDatagram(p)) {
		s.pmtu.onBigAcked(pn)
	} else {
		s.pmtu.onSmallAcked(p.Sent)
	}
}

// pmtuDataLost tells discovery that the stream packet pn was lost at now.
func (s *Session) pmtuDataLost(now clock.Mono, pn cc.PacketNumber, p *recovery.Packet) {
	if s.pmtu.big(s.dataDatagram(p)) {
		s.pmtu.onBigLost(now, p.Sent, pn)
	}
}

// restartPMTU starts discovery afresh from BASE_PLPMTU on a new path
// (RFC 8899 §4.3: the PLPMTU is a property of the path, and a validated
// size says nothing about another one); the counters go on.
func (s *Session) restartPMTU() {
	old := s.pmtu
	s.pmtu = newPMTU(old.enabled, s.cfg.MaxDatagram)
	s.pmtu.changes, s.pmtu.sent, s.pmtu.lost, s.pmtu.blackHole = old.changes, old.sent, old.lost, old.blackHole
	if s.pmtu.size != old.size {
		s.pmtu.changes++
	}
}

// DatagramSize is the largest datagram the session sends stream data in
// now: the PLPMTU. A driver batching datagrams for segmentation offload
// must not put a larger one (a probe) into a run of segments.
func (s *Session) DatagramSize() int { return s.pmtu.size }
