package session

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"time"

	"github.com/fresh-udp/fresh"
	"github.com/fresh-udp/fresh/acp"
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/dscp"
	"github.com/fresh-udp/fresh/internal/pacer"
	"github.com/fresh-udp/fresh/internal/recovery"
	"github.com/fresh-udp/fresh/internal/wire"
	_ "github.com/fresh-udp/fresh/owd" // registers "owd", the default controller
)

// Session is one end of one connection as a sans-I/O state machine, in the
// style of quinn-proto. It never reads a clock, sleeps or touches a socket:
// every call that depends on time carries the monotonic time now and, where
// a packet is stamped, the local wall clock in µs. Not safe for concurrent
// use: the driver serialises calls.
//
// The driver's contract:
//
//   - Handle(now, wall, datagram) for every datagram that arrives;
//   - then Poll(now, wall, buf) until it reports nothing to send, and send
//     what it returns with the DSCP it gives;
//   - NextTimeout(now) is the latest time by which the driver must call
//     Timeout and poll again (0: no deadline). It answers without changing
//     anything, so a driver may ask as often as it likes;
//   - Timeout(now) once that time has passed, then Poll as above;
//   - after the application calls Write, CloseWrite, Read, SendUpdate or
//     Close, Poll again (the call may have made something sendable).
//
// The transport's Conn drives it over a UDP socket; the simulator (bench/sim)
// drives pairs of sessions over emulated links in virtual time.
type Session struct {
	cfg    Config
	connID uint64 // the client's ID: in every packet to the client
	srvID  uint64 // the server's ID (see Config.ServerConnID); client: from the Accept, 0 until then
	client bool
	state  sessionState
	err    error // why the session closed

	// Sender side.
	tr        *recovery.Tracker
	ctl       cc.Controller // the stream's window controller
	policy    acp.Policy    // the update-rate regulator; nil until needed (buildPolicy)
	rttSeed   time.Duration // the first RTT seed, for a policy not built yet
	owd       owdStats      // Stats' OWD when the controller keeps none
	out       sendStream
	peerMax   int64       // peer's MaxData
	pacer     pacer.Pacer // spaces the stream packets at the controller's rate
	pmtu      pmtu        // the datagram size (path MTU discovery, pmtu.go)
	echo      wire.Echo   // latest ACK's T3 and its arrival T4
	probeAt   clock.Mono  // next flow-control probe when blocked
	lastSent  clock.Mono  // last ack-eliciting packet sent (keep-alive)
	updBuf    []byte      // freshest unsent update (grown on first use) …
	updGen    int64       // … its generation time, local wall µs …
	updMono   clock.Mono  // … and on the monotonic clock
	updFresh  bool
	probe     bool           // send a PING (RTO, or flow-control probe); beside updFresh: no padding of its own
	updSentAt clock.Mono     // when the last update went out
	afs       *ackFreqSender // the ACK frequency we ask of the peer; nil unless it consented (ackfreq.go)

	// Receiver side.
	ranges     recovery.AckRanges
	acksSent   *ackRing // the latest ACKs sent (nil until one is: ackRing)
	ackSentAt  int
	samples    *ackSamples // the next ACK's OWD samples (nil until one: ackSamples)
	nSamples   int
	elicited   int        // ack-eliciting packets not yet acknowledged
	oldest     clock.Mono // arrival of the oldest of them
	ackAt      clock.Mono // delayed-ACK deadline; 0 = none
	ackNow     bool
	answered   bool             // an ACK frame raised the largest acknowledged since the last timeout (PathDead)
	afr        *ackFreqReceiver // the ACK frequency the peer asked of us; nil until it asks (ackfreq.go)
	in         recvStream
	echoRTT    time.Duration // RTT measured from the echoes on Data (see onAckEliciting), smoothed …
	echoMinRTT time.Duration // … and its minimum
	inband     *clock.Inband // created with the first clock sample (clockEstimator)
	lastHeard  clock.Mono
	inUpd      []byte // newest update delivered, not yet read by the app (grown on first use)
	inUpdGen   int64  // its generation time, sender wall µs
	inUpdAge   time.Duration
	inUpdRecv  clock.Mono
	inUpdReady bool
	inUpdEarly bool  // it came in 0-RTT (early.go)
	newestPN   int64 // packet number of the freshest update delivered
	age        acp.AgeMeter

	// Handshake and close.
	sec           *security // TLS and packet protection; nil in plaintext mode
	scratch       []byte    // a copy of a packet while trying two key phases
	hsNext        clock.Mono
	hsSent        clock.Mono // when the latest Initial went out
	hsTries       int
	token         []byte        // client: the address-validation token (Config.Token, or the Retry's), echoed in every Initial
	nt            newTokenState // server: the token for the client's next connection (newtoken.go)
	retried       bool          // client: a Retry was taken (only one is, RFC 9000 §17.2.5.2)
	validated     bool          // server: the peer's address is validated (see amplificationLimited)
	acceptPending bool
	closePending  bool
	closeCode     uint32
	closeReason   []byte // the CLOSE's reason (CloseWithError)
	peerClean     bool   // the peer closed with closeNormal
	peerApp       bool   // the peer's application closed (ApplicationError): its stream is aborted
	beyondRetry   bool   // client: something other than a Retry came from the server (HandshakeHeard)
	rst           resetState

	mig    migration   // the peer's addresses (migrate.go)
	vn     *pendingVN  // client: a VersionNegotiation taken in the handshake (version.go)
	commit commitState // end-to-end commit (commit.go)

	st Stats

	trace *tracing // the connection trace; nil: off (trace.go)

	lostFn func(now clock.Mono, pn cc.PacketNumber, p *recovery.Packet) // s.lost, bound once
}

// The receiver's ACK bookkeeping, apart from the Session (which it would
// take from 2 KiB to 3 KiB, as the allocator rounds) and each allocated on
// first need: the latest ACKs sent, once an ACK is, and the OWD samples of
// the next ACK, once a packet that carries one (data, an update) arrives.
// A monitor's connection whose device is quiet after its handshake holds
// neither, one that only exchanges keep-alive PINGs the first.
type (
	ackRing    [16]ackSent // the latest ACKs sent (ackSentAt)
	ackSamples [wire.MaxAckSamples]wire.OWDSample
)

func (s *Session) ackRing() *ackRing {
	if s.acksSent == nil {
		s.acksSent = new(ackRing)
	}
	return s.acksSent
}

func (s *Session) ackSamples() *ackSamples {
	if s.samples == nil {
		s.samples = new(ackSamples)
	}
	return s.samples
}

// ackSent is what one ACK acknowledged: once the peer echoes its stamp
// (Echo.T3 on its data), it has seen that ACK, and the ranges up to
// largest need not be repeated (RFC 9000 §13.2.4).
type ackSent struct {
	stamp   int64 // the ACK's header timestamp, local wall µs
	largest cc.PacketNumber
}

type sessionState uint8

const (
	stateHandshake sessionState = iota
	stateOpen
	stateClosed
)

// Packet kinds in the recovery tracker.
const (
	kindData   uint8 = 0
	kindUpdate uint8 = 1
	kindProbe  uint8 = 2
	kindPMTU   uint8 = 4 // a PMTU probe: never the controller's (pmtu.go)
	flagFIN    uint8 = 1
)

// Close codes on the wire.
const (
	// closeNormal promises that the peer acknowledged every stream byte
	// we wrote, so the receiver may take it as the stream's FIN (see
	// recvStream.closeAt): a CLOSE that overtakes a paced or lost FIN still
	// ends the peer's Read with io.EOF.
	closeNormal   uint32 = 0
	closeProtocol uint32 = 1
	closeIdle     uint32 = 2
	// closeAbort: the stream is not whole — closed with stream bytes
	// unacknowledged (linger expired or disabled) or aborted by the
	// application (CloseAbort); the peer's Read ends with
	// ErrStreamAborted, not io.EOF.
	closeAbort uint32 = 3
)

// New returns the session of a client (which opens the connection with an
// Initial on its first Poll) or of a server (which answers with an Accept),
// created at now with connection ID connID.
func New(cfg Config, connID uint64, client bool, now clock.Mono) (*Session, error) {
	cfg, err := cfg.Resolve()
	if err != nil {
		return nil, err
	}
	var ctl cc.Controller // built on first need (controller) when named
	if cfg.CC == "" {
		if ctl, err = newController(&cfg); err != nil {
			return nil, err
		}
	}
	var pol acp.Policy // built on first need (buildPolicy) when named
	if cfg.UpdatePolicy == "" {
		if pol, err = newPolicy(&cfg); err != nil {
			return nil, err
		}
	}
	s := &Session{
		cfg: cfg, connID: connID, client: client, srvID: cfg.ServerConnID,
		tr: recovery.NewWithAckDelay(cfg.MaxAckDelay), ctl: ctl, policy: pol,
		out: sendStream{limit: min(cfg.SendBuffer, initialSendBuffer), maxLimit: cfg.SendBuffer, epochAt: now},
		// Until the peer's first ACK: the initial window every receiver
		// grants (its ring's first size), unless ours is smaller.
		peerMax:   int64(min(cfg.ReceiveWindow, initialRecvWindow)),
		ranges:    recovery.NewAckRanges(wire.MaxAckRanges),
		pmtu:      newPMTU(!cfg.DisablePathMTUDiscovery, cfg.MaxDatagram),
		in:        newRecvStream(initialRecvWindow, cfg.ReceiveWindow, now),
		lastHeard: now,
		newestPN:  -1,
		hsNext:    now,
		validated: cfg.AddressValidated,
	}
	if client && len(cfg.Token) > 0 {
		s.token = bytes.Clone(cfg.Token)
	}
	if cfg.TLS != nil {
		if s.sec, err = newSecurity(&s.cfg, connID, client); err != nil {
			return nil, err
		}
		s.drainTLS() // the client's ClientHello
	} else if !client {
		s.state = stateOpen
		s.acceptPending = true
	}
	s.st.CC = cfg.CC
	if ctl != nil {
		s.st.CC = ctl.Name()
	}
	s.lostFn = s.lost
	s.in.limitGaps(cfg.MaxStreamGaps)
	s.tr.EnableSkipping(skipSeed(cfg.Seed, connID, client))
	return s, nil
}

func newPolicy(cfg *Config) (acp.Policy, error) {
	pol, err := cfg.NewUpdatePolicy(cc.ByteCount(cfg.MaxDatagram))
	if err == nil && pol == nil {
		err = errors.New("NewUpdatePolicy returned no policy")
	}
	if err != nil {
		return nil, fresh.WrapInvalid("transport.Config.NewUpdatePolicy", err)
	}
	return pol, nil
}

// buildPolicy builds the update-rate policy on first need, when
// Config.UpdatePolicy allowed New to defer it, seeded with the RTT seen so
// far (seedRTT).
func (s *Session) buildPolicy() error {
	if s.policy != nil {
		return nil
	}
	pol, err := newPolicy(&s.cfg)
	if err != nil {
		return err
	}
	if s.rttSeed > 0 {
		pol.SeedRTT(s.rttSeed)
	}
	s.policy = pol
	return nil
}

// seedRTT hands the policy an RTT sample to start from until updates give
// it its own (acp.Policy.SeedRTT); a policy not built yet gets the first
// one when it is.
func (s *Session) seedRTT(rtt time.Duration) {
	switch {
	case s.policy != nil:
		s.policy.SeedRTT(rtt)
	case s.rttSeed == 0:
		s.rttSeed = rtt
	}
}

func newController(cfg *Config) (cc.Controller, error) {
	ctl, err := cfg.NewController(cc.ByteCount(cfg.MSS()))
	if err == nil && ctl == nil {
		err = errors.New("NewController returned no controller")
	}
	if err != nil {
		return nil, fresh.WrapInvalid("transport.Config.NewController", err)
	}
	return ctl, nil
}

// controller returns the stream's window controller, building it on first
// need when Config.CC allowed New to defer it.
func (s *Session) controller() cc.Controller {
	if s.ctl == nil {
		ctl, err := newController(&s.cfg)
		if err != nil {
			panic(err) // CC promises NewController does not fail
		}
		s.ctl = ctl
	}
	return s.ctl
}

// canSend is the controller's CanSend for the stream bytes in flight. A
// controller not built yet has seen no stream packet: nothing is in
// flight and its whole initial window is free, so it is not built just
// to be asked (poll and the timer ask on every call).
func (s *Session) canSend() bool {
	if s.ctl == nil {
		return true
	}
	return s.ctl.CanSend(s.tr.InFlight(kindData))
}

// window is the controller's congestion window in bytes (0 before the
// controller is built), for the send buffer's window rule (autoTune).
func (s *Session) window() int64 {
	if s.ctl == nil {
		return 0
	}
	return int64(s.ctl.Window())
}

// inbandConfig is the in-band clock estimator's: 60 s of history in
// 500 ms windows, trusted once 4 windows (2 s) have samples. Half as many
// windows as the 250 ms the estimator was first run with, for 1.9 KiB a
// connection instead of 3.8 (a monitor holds one per source): each window
// keeps the minimum of twice the samples. Simulated on jittery paths the
// mean OWD error is the same as with the shorter windows, and the
// transport's clock-step recovery (FaultClockStep) is no slower
// (bench/results/history.md, "The in-band clock estimator's windows").
var inbandConfig = clock.InbandConfig{Window: 500 * time.Millisecond, Windows: 120, MinWindows: 4}

// clockEstimator returns the in-band offset estimator, created with the
// first clock sample: its history (1.9 KiB) is not allocated for a
// connection the peer never sent a stamped packet on, such as one opened
// by an Initial from an address that never answers.
func (s *Session) clockEstimator() *clock.Inband {
	if s.inband == nil {
		var err error
		if s.inband, err = clock.NewInband(inbandConfig); err != nil {
			panic(err) // a constant configuration (TestInbandConfigIsValid)
		}
	}
	return s.inband
}

// theta is the receiver − sender clock offset the session corrects OWD with,
// and whether it is trustworthy.
func (s *Session) theta(sentUS int64) (time.Duration, bool) {
	if s.cfg.TrustPeerClock {
		return 0, true
	}
	if s.cfg.NoInband || s.inband == nil || !s.inband.Synced() {
		return 0, false
	}
	return s.inband.Offset(clock.Stamp(sentUS)), true
}

// Handle processes one datagram b received at now (local wall clock wallUS).
// It reports false, counting the datagram as malformed, when b is not a
// packet of this connection; malformed frames are counted and dropped, and
// protocol violations close the session (Err says why). A StatelessReset
// is checked against the server's token (reset.go): true if it ended the
// session, false (counted) if it was not the real one.
func (s *Session) Handle(now clock.Mono, wallUS int64, b []byte) bool {
	return s.HandleFrom(now, wallUS, b, PathCurrent, netip.AddrPort{}) != Dropped
}

// handle processes one parsed datagram.
func (s *Session) handle(now clock.Mono, wallUS int64, h wire.Header, body []byte, size int) {
	if s.state == stateClosed {
		return
	}
	s.lastHeard = now
	s.st.PacketsReceived++
	s.beyondRetry = s.beyondRetry || h.Type != wire.TypeRetry
	if s.vn != nil {
		s.vnAnswered()
	}
	s.st.BytesReceived += int64(size)
	if !s.client && h.Type != wire.TypeInitial && h.Type != wire.TypeRetry && h.Epoch != wire.EpochEarly && h.Epoch != wire.EpochInitial {
		// The client answered us, so it receives at its address. With
		// TLS only authenticated packets get here, and the client can
		// only protect one after reading our ServerHello: a proof (RFC
		// 9000 §8.1). In plaintext it is a placeholder: a blind attacker
		// who forged the Initial chose the connection ID and can forge
		// this packet too — which is why Retry is on by default. A 0-RTT
		// packet proves nothing: it goes before our ServerHello, and
		// anyone can replay it from any address (RFC 9001 §9.2); nor
		// does one under the Initial keys, which the connection ID
		// alone gives.
		s.validated = true
	}
	switch h.Type {
	case wire.TypeInitial:
		if s.client {
			break
		}
		if s.sec == nil {
			s.acceptPending = true // the client did not hear our Accept
			break
		}
		var in wire.Initial
		if err := wire.ParseInitial(body, size, &in); err != nil {
			s.st.Malformed++
			return
		}
		if in.CryptoOffset == 0 && len(in.Crypto) == 0 && s.sec.in[levelInitial].next == 0 {
			s.fail(fmt.Errorf("%w: the client sent no TLS ClientHello: it runs without TLS (Insecure); both ends must use TLS", ErrHandshake), closeNoTLS)
			return
		}
		if s.onCrypto(levelInitial, in.CryptoOffset, in.Crypto) && in.CryptoOffset == 0 && s.state == stateHandshake {
			// The client resends its ClientHello: our flight 2 did not
			// (all) arrive. Resend it, once per repeated flight.
			s.sec.out[levelInitial].sent, s.sec.out[levelHandshake].sent = 0, 0
		}
	case wire.TypeCrypto:
		var c wire.Crypto
		if s.sec == nil || wire.ParseCrypto(body, &c) != nil {
			s.st.Malformed++
			return
		}
		level := levelInitial // EpochInitial (0-RTT packets carry no Crypto: earlyAcceptable)
		switch h.Epoch {
		case wire.EpochHandshake:
			level = levelHandshake
		case wire.EpochApp0, wire.EpochApp1:
			level = levelApp
		}
		repeat := s.onCrypto(level, c.Offset, c.Data)
		if repeat && level == levelHandshake && !s.client && s.sec.done {
			s.acceptPending = true // the client resends its Finished: it did not hear our Accept
		}
		if !repeat && s.client && s.state == stateHandshake {
			// New bytes of the server's flight: it heard our last one,
			// so the backoff starts over (RFC 9002 §6.2.1 resets it on
			// an acknowledgment). If the rest of its flight (or the
			// Accept after a session ticket) was lost, ours goes again
			// in 250 ms, not after the 1 or 2 s the losses before had
			// grown the timer to.
			s.hsTries = 0
			s.hsNext = min(s.hsNext, now.Add(handshakeBackoff(0)))
		}
		if level == levelApp && s.client && s.sec.confirmed && !s.sec.out[levelApp].pending() {
			s.releaseTLS() // the session ticket is in: TLS has nothing more to do
		}
	case wire.TypeRetry:
		s.onRetry(now, body)
	case wire.TypeAccept:
		var a wire.Accept
		if err := wire.ParseAccept(body, &a); err != nil {
			s.st.Malformed++
			return
		}
		if s.client && s.state == stateHandshake && (s.sec == nil || s.sec.done) {
			if s.sec != nil {
				s.confirm() // the Accept is the client's HANDSHAKE_DONE (RFC 9001 §4.1.2)
			}
			if err := s.onPlaintextParams(a.Params); err != nil {
				s.fail(fmt.Errorf("%w: the server's Accept: %w", ErrProtocol, err), closeProtocol)
				return
			}
			s.state = stateOpen
			s.srvID = a.ServerConnID // 0: the server keeps our ID
			// The handshake's RTT (against the latest Initial: the Accept
			// may answer an earlier one, which only overestimates) seeds
			// the update regulator until updates give it samples.
			s.seedRTT(now.Sub(s.hsSent))
		}
	case wire.TypeData:
		var d wire.Data
		if err := wire.ParseData(body, &d); err != nil {
			s.st.Malformed++
			return
		}
		if s.client && s.state == stateHandshake && (s.sec == nil || s.sec.done) {
			s.state = stateOpen // the Accept was lost; data proves the server has us
		}
		if !s.in.room(d.Offset, len(d.Payload)) {
			// Not acknowledged, as if lost on the way: the sender resends it.
			s.st.StreamFramesDropped++
			return
		}
		s.onAckEliciting(now, wallUS, h, d.Echo, false)
		if !s.in.onData(d.Offset, d.Payload, h.Flags&wire.FlagFIN != 0) {
			s.fail(ErrProtocol, closeProtocol)
			return
		}
		s.st.StreamBytesReceived += int64(len(d.Payload))
		if s.in.windowUpdateDue() {
			s.ackNow = true
		}
	case wire.TypeUpdate:
		var u wire.Update
		if err := wire.ParseUpdate(body, &u); err != nil {
			s.st.Malformed++
			return
		}
		s.onAckEliciting(now, wallUS, h, u.Echo, true)
		s.deliverUpdate(now, wallUS, h, &u)
	case wire.TypePing:
		s.onAckEliciting(now, wallUS, h, wire.Echo{}, true)
	case wire.TypeCommit:
		s.onCommit(now, wallUS, h, body)
	case wire.TypeAckFrequency:
		s.onAckFrequency(now, wallUS, h, body)
	case wire.TypeNewToken:
		s.onNewToken(h, body)
	case wire.TypePMTUProbe:
		if wire.ParsePMTUProbe(body) != nil {
			s.st.Malformed++
			return
		}
		s.onAckEliciting(now, wallUS, h, wire.Echo{}, true) // at once: the sender's search waits on it
	case wire.TypeAck:
		var a wire.Ack
		if err := wire.ParseAck(body, &a); err != nil {
			s.st.Malformed++
			return
		}
		s.onAck(now, wallUS, h, &a)
	case wire.TypeClose:
		var c wire.Close
		if err := wire.ParseClose(body, &c); err != nil {
			s.st.Malformed++
			return
		}
		s.state = stateClosed
		s.releaseTLS()
		s.err = ErrPeerClosed
		switch c.Code {
		case closeProtocol:
			s.err = fmt.Errorf("%w: %w", ErrPeerClosed, ErrProtocol)
		case closeNormal:
			// Every byte the peer wrote was acknowledged, so what we
			// hold is the whole stream: end it there even if the FIN
			// itself has not arrived.
			s.in.closeAt()
			s.peerClean = true
		case closeAbort:
			s.err = fmt.Errorf("%w: %w", ErrPeerClosed, ErrStreamAborted)
		case closeNoTLS:
			s.err = fmt.Errorf("%w: %w: one end runs with TLS, the other without (Insecure); both must do the same", ErrPeerClosed, ErrHandshake)
		case closeInvalidToken:
			s.err = fmt.Errorf("%w: %w: %w (%s): a client takes one Retry per connection, so this handshake is over; dial again", ErrPeerClosed, ErrHandshake, ErrInvalidToken, peerText(string(c.Reason)))
		default:
			if c.Code >= closeApplication {
				s.err, s.peerApp = peerApplicationError(&c), true
			} else if c.Code > closeTLSAlert && c.Code <= closeTLSAlert+0xff {
				// The alert is wrapped too (printing nothing), so that
				// errors.As finds it as it does a local TLS failure's.
				alert := tls.AlertError(c.Code - closeTLSAlert)
				s.err = fmt.Errorf("%w: %w: peer sent TLS alert %q%.0w", ErrPeerClosed, ErrHandshake, alert.Error(), alert)
			}
		}
	case wire.TypePathChallenge, wire.TypePathResponse:
		s.onPathFrame(now, h, body)
	default: // VersionNegotiation: reserved, not used in version 1
		s.st.Malformed++
	}
}

// onRetry takes a server's Retry: the client sends its Initial again at
// once, carrying the token, which proves to the server that we receive at
// our address (RFC 9000 §8.1.2). Only while handshaking and only the first
// Retry (RFC 9000 §17.2.5.2): a second one, or one after the Accept, is
// stale or forged and changes nothing. A server ignores Retries.
func (s *Session) onRetry(now clock.Mono, body []byte) {
	if !s.client || s.state != stateHandshake || s.retried {
		return
	}
	var r wire.Retry
	if err := wire.ParseRetry(body, &r); err != nil {
		s.st.Malformed++
		return
	}
	s.token = append([]byte(nil), r.Token...) // r aliases the datagram
	s.retried = true
	// The Initial with the token goes at once, and the handshake starts
	// over, its timer's backoff too (RFC 9002 §6.3).
	s.hsNext, s.hsTries = now, 0
	s.onRetryEarly()
}

// MarkAddressValidated records that the peer proved it receives at its
// address (the handshake completed, or it echoed something it could only
// have read from our packets): the anti-amplification limit is lifted.
func (s *Session) MarkAddressValidated() { s.validated = true }

// AddressValidated reports whether the anti-amplification limit no longer
// applies: always for a client, for a server once the peer's address is
// validated.
func (s *Session) AddressValidated() bool { return s.client || s.validated }

// maxControlDatagram bounds the datagrams poll builds before stream data
// and updates: Accept and PING (a header), CLOSE (a 255-byte reason) and
// the largest ACK (16 ranges and 32 OWD samples).
const maxControlDatagram = wire.HeaderLen + 4 + 8 + 1 + 1 + wire.MaxAckRanges*16 + wire.MaxAckSamples*12

// amplificationRoom is how many more bytes a server may send before the
// peer's address is validated: three times what it received from there,
// less what it sent (RFC 9000 §8.1). A forged Initial so costs its victim
// at most 3 × 1200 bytes, however long the session lives.
func (s *Session) amplificationRoom() int64 {
	if s.AddressValidated() {
		return s.pathRoom()
	}
	return min(s.pathRoom(), 3*s.st.BytesReceived-s.st.BytesSent)
}

// amplificationLimited reports whether the next datagram might not fit
// amplificationRoom. Its size is bounded by what poll would build: a
// control frame while one is due (they go first), else a full datagram.
func (s *Session) amplificationLimited(now clock.Mono) bool {
	next := s.cfg.MaxDatagram
	if s.closePending || s.acceptPending || s.probe || s.ackDue(now) {
		next = min(next, maxControlDatagram)
	}
	if s.pathControlDue(now) && !s.closePending && !s.acceptPending {
		next = pathFrameSize // poll sends it before ACKs and probes
	}
	if s.handshakePending() {
		next = wire.MinInitialSize // handshake datagrams never exceed it
	}
	return int64(next) > s.amplificationRoom()
}

// onAckEliciting does the receiver's bookkeeping for a Data, Update or Ping:
// clock samples, ACK ranges, the OWD sample, and when to ACK.
func (s *Session) onAckEliciting(now clock.Mono, wallUS int64, h wire.Header, echo wire.Echo, urgent bool) {
	if h.Type != wire.TypePing && h.Type != wire.TypePMTUProbe {
		s.clockEstimator().AddForward(clock.Stamp(h.Timestamp), clock.Stamp(wallUS))
	}
	if echo.T3 != 0 {
		s.clockEstimator().AddReverse(clock.Stamp(echo.T3), clock.Stamp(echo.T4))
		s.forgetAcked(echo.T3)
		// The echo gives the receiver of a one-way stream, which sends
		// nothing to take RTT samples from, its round trip: our ACK left
		// at T3 (our clock), arrived at T4 (the peer's), the peer held it
		// until it sent this packet (its stamp), and it arrived now. The
		// receive window's auto-tuning needs it (appendAck).
		if h.Type == wire.TypeData {
			rtt := time.Duration((wallUS-echo.T3)-(h.Timestamp-echo.T4)) * time.Microsecond
			switch {
			case rtt <= 0:
			case s.echoRTT == 0:
				s.echoRTT, s.echoMinRTT = rtt, rtt
			default:
				s.echoRTT += (rtt - s.echoRTT) / 8
				s.echoMinRTT = min(s.echoMinRTT, rtt)
			}
		}
	}
	largest := s.ranges.Largest()
	dup, outOfOrder := s.ranges.Insert(cc.PacketNumber(h.PN))
	if dup {
		s.st.Duplicates++
		s.ackNow = true // the peer may not have our ACK
		return
	}
	if h.Type != wire.TypePing && s.nSamples < wire.MaxAckSamples && s.sampleDue() {
		owd, _ := s.OWDEstimate(h.Timestamp, wallUS)
		s.ackSamples()[s.nSamples] = wire.OWDSample{PN: h.PN, OWDMicros: int32(max(min(owd.Microseconds(), 1<<31-1), -1<<31))}
		s.nSamples++
	}
	if s.elicited == 0 {
		s.oldest = now
	}
	if s.afr != nil && cc.PacketNumber(h.PN) > largest {
		s.afr.largestAt = now
	}
	s.elicited++
	switch {
	case urgent || s.ackAtOnce(cc.PacketNumber(h.PN), largest, outOfOrder):
		s.ackNow = true
	case s.ackAt == 0:
		s.ackAt = now.Add(s.ackDelay())
	}
}

// deliverUpdate keeps an update if it is fresher than every update already
// delivered: an older one changes nothing at the monitor, whose age of
// information only drops when a fresher update arrives (Kaul, Yates and
// Gruteser, "Real-Time Status: How Often Should One Update?", INFOCOM 2012).
//
// Freshness is decided by packet number, not generation time: the sender
// only ever sends its freshest update (never a retransmission) and numbers
// its packets in sending order, so a larger number is a fresher update,
// whatever the sender's wall clock did meanwhile. Judged by the clock, a
// sender whose clock stepped back 2 s would have 2 s of updates dropped as
// stale, and one forged update stamped an hour ahead would make every
// real one stale for an hour. The generation time still gives the age.
func (s *Session) deliverUpdate(now clock.Mono, wallUS int64, h wire.Header, u *wire.Update) {
	s.st.UpdatesReceived++
	theta, synced := s.theta(u.Generated)
	ageUS := subSat(subSat(wallUS, u.Generated), theta.Microseconds())
	ahead := -ageUS // how far ahead of our clock it was generated
	if !synced {
		// Without a trusted offset the clocks differ by an unknown amount
		// (seconds, in the simulator's unsynchronised model): compare with
		// the only stamp from the same clock, the packet's own send time.
		// An update cannot be generated after the packet carrying it left.
		ahead = subSat(u.Generated, h.Timestamp)
	}
	if ahead > s.cfg.MaxUpdateFuture.Microseconds() {
		s.st.UpdatesRejected++
		return
	}
	if h.PN <= s.newestPN {
		s.st.UpdatesStale++
		return
	}
	s.newestPN = h.PN
	s.inUpdEarly = h.Epoch == wire.EpochEarly
	if s.inUpdEarly {
		s.st.EarlyUpdatesReceived++
	}
	age := time.Duration(min(max(ageUS, 0), maxAgeMicros)) * time.Microsecond
	s.age.Deliver(now.Add(-age), now)
	s.inUpd = append(s.inUpd[:0], u.Payload...) // as large as the largest update received
	// Held no further back than the age bound, so that TakeUpdate's
	// correction by the clock offset cannot wrap around either.
	s.inUpdGen = max(u.Generated, subSat(wallUS, maxAgeMicros))
	s.inUpdAge = age
	s.inUpdRecv = now
	s.inUpdReady = true
	if s.trace != nil {
		s.trace.t.UpdateAge(s.trace.at(now), h.PN, age, s.inUpdEarly)
	}
}

// maxAgeMicros bounds the age of an update (about 35 years, in µs), so
// that a generation time far in the past (a forged or broken stamp) cannot
// overflow the age in nanoseconds or the monotonic clock behind it.
const maxAgeMicros = 1 << 50

// subSat is a − b, saturated at the int64 limits instead of wrapping: the
// stamps come from the peer and may be anything.
func subSat(a, b int64) int64 {
	d := a - b
	if (a >= 0) != (b >= 0) && (d >= 0) != (a >= 0) { // overflowed
		if a >= 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return d
}

// onAck processes an ACK frame: the frame's own checks here, then the
// sender's side of it in the tracker (RTT sample, newly acknowledged
// packets in packet-number order with their one-way delays screened, loss
// detection; RFC 9002 §5–6), which tells acked what each packet was.
func (s *Session) onAck(now clock.Mono, wallUS int64, h wire.Header, a *wire.Ack) {
	s.echo = wire.Echo{T3: h.Timestamp, T4: wallUS}
	s.peerMax = max(s.peerMax, a.MaxData)
	if s.afs != nil {
		s.afs.onSample(now, h.Timestamp, wallUS)
	}
	if a.NRanges == 0 {
		return
	}
	if s.optimisticAck(a) {
		s.fail(ErrOptimisticAck, closeProtocol)
		return
	}
	synced := h.Flags&wire.FlagSynced != 0
	s.st.PeerClockSynced = synced
	var ranges [wire.MaxAckRanges]recovery.Range
	var samples [wire.MaxAckSamples]recovery.OWDSample
	ack := recovery.Ack{
		Ranges:  ranges[:a.NRanges],
		Samples: samples[:a.NSamples],
		Delay:   time.Duration(a.DelayMicros) * time.Microsecond,
		Synced:  synced,
	}
	for i, r := range a.Ranges[:a.NRanges] {
		ranges[i] = recovery.Range{Lo: cc.PacketNumber(r.Smallest), Hi: cc.PacketNumber(r.Largest)}
	}
	for i, o := range a.Samples[:a.NSamples] {
		samples[i] = recovery.OWDSample{PN: cc.PacketNumber(o.PN), OWD: time.Duration(o.OWDMicros) * time.Microsecond}
	}
	res := s.tr.OnAck(now, &ack, &recovery.AckHandler{
		WindowKind: kindData,
		RTT:        s.ackRTT,
		Acked:      s.acked,
		// The path MTU probe a timeout gave up is settled by the whole
		// frame, before its gaps are declared lost (pmtu.go).
		Taken: func(now clock.Mono) { s.pmtu.onAckFrame(now, a) },
		Lost:  s.lostFn,
	})
	s.st.OWDDiscarded += int64(res.OWDDiscarded)
	// An ACK of a packet the retransmission timeout already gave up
	// acknowledges nothing in flight, but the peer got a packet sent after
	// every one acknowledged before: the path answers, so it is not dead
	// (PathDead). Without it a fade's end, whose held packets arrive and
	// are acknowledged first, left the path "dead" with ACKs arriving until
	// the newest retransmission got through. The timer's backoff stays:
	// RFC 9002 §6.2.1 resets a PTO's backoff on any ACK, but a PTO only
	// probes, while this timer declares its flight lost and resends it, and
	// resending again at the un-backed-off timeout while the fade's
	// retransmissions still queue on the slow link filled the queue (the
	// simulator's UMTS uplink trace: bench/results/history.md, "The
	// retransmission timeout's backoff after a fade").
	if res.NewLargest {
		s.answered = true
	}
	if s.afs != nil && s.ctl != nil { // no stream controller: no stream, nothing to thin
		rtt := s.tr.RTT()
		s.afs.evaluate(now, rtt.Smoothed(), rtt.Min(), int(s.ctl.Window()/cc.ByteCount(s.cfg.MSS())), s.cfg.AckEvery, s.cfg.MaxAckDelay)
	}
}

// ackRTT takes the RTT sample an ACK frame gave, before its packets: the
// update policy's seed and path MTU discovery's queue reading.
func (s *Session) ackRTT(rtt time.Duration) {
	s.seedRTT(rtt)
	s.pmtu.onRTT(rtt, s.tr.RTT().Min())
}

// acked handles a packet an ACK frame newly acknowledged, with its sample
// (OWD screened already): stream bytes leave the send buffer, the
// controllers are told.
func (s *Session) acked(now clock.Mono, p *recovery.Packet, sample cc.AckSample) {
	pn := sample.PacketNumber
	switch p.Kind {
	case kindData:
		s.pmtuDataAcked(pn, p)
		s.out.onAcked(p.Offset, p.Len, p.Flags&flagFIN != 0)
		s.st.StreamBytesAcked += int64(p.Len)
		s.controller().OnAck(now, sample)
		if sample.OWDValid {
			s.owd.add(sample.OWD, sample.ClockSynced)
		}
		if sample.OWDValid && s.trace != nil {
			s.traceOWD(now, pn, sample.OWD, sample.ClockSynced)
		}
	case kindUpdate:
		// The regulator needs an RTT per update (its epoch is one
		// RTT in the Age Control Protocol), and updates usually share an ACK with
		// larger-numbered stream packets. Packet numbers are never
		// reused, so every update's own RTT is unambiguous.
		if sample.RTT == 0 {
			sample.RTT = now.Sub(p.Sent)
		}
		s.st.UpdatesAcked++
		s.policy.OnAck(now, sample)
		if sample.OWDValid && s.trace != nil {
			s.traceOWD(now, pn, sample.OWD, sample.ClockSynced)
		}
	case kindCommit:
		s.commitAcked(p.Offset)
	case kindAckFreq:
		s.ackFreqAcked(p.Offset)
	case kindPMTU:
		s.pmtu.onProbeAcked(now, pn)
	case kindProbe:
		s.pmtu.onSmallAcked(p.Sent) // a PING: small
	}
}

// lost handles a packet declared lost at now: stream bytes are queued
// again, the controllers are told; updates are never retransmitted. It is
// bound once (lostFn) so loss detection does not allocate a closure.
func (s *Session) lost(now clock.Mono, pn cc.PacketNumber, p *recovery.Packet) {
	if s.trace != nil {
		s.traceLost(now, pn, p)
	}
	if p.Kind == kindPMTU {
		s.pmtu.onProbeLost(now, pn, s.tr.LargestAcked() > pn, s.tr.Next()) // not congestion (RFC 8899 §4.4), not in PacketsLost
		return
	}
	s.st.PacketsLost++
	ev := cc.LossEvent{PacketNumber: pn, Bytes: p.Bytes, SentTime: p.Sent}
	switch p.Kind {
	case kindData:
		s.pmtuDataLost(now, pn, p)
		ev.PriorInFlight = s.tr.InFlight(kindData) + p.Bytes
		s.out.onLost(p.Offset, p.Len, p.Flags&flagFIN != 0)
		s.controller().OnLoss(now, ev)
	case kindUpdate:
		s.st.UpdatesLost++
		s.policy.OnLoss(now, ev)
	case kindCommit:
		s.commitLost(p.Offset)
	case kindAckFreq:
		s.ackFreqLost(p.Offset)
	}
}

// handshakeSilence is why a client's handshake ends at its idle timeout
// (now): nothing came from the server for IdleTimeout, and what came
// before says where to look.
func (s *Session) handshakeSilence(now clock.Mono) error {
	return fmt.Errorf("%w: %s (IdleTimeout %v)", ErrHandshake, s.HandshakeHeard(now), s.cfg.IdleTimeout)
}

// HandshakeHeard says what a client in its handshake has heard from the
// server by now, for an error that ends the handshake (its idle timeout,
// or a Dial's deadline, which would otherwise name only the deadline):
// nothing at all, a Retry and then nothing, or silence since the
// server's last datagram.
func (s *Session) HandshakeHeard(now clock.Mono) string {
	quiet := now.Sub(s.lastHeard).Round(time.Millisecond)
	switch {
	case s.st.PacketsReceived == 0:
		return fmt.Sprintf("no answer from the server in %v: is it running at that address, and does the path carry UDP both ways?", quiet)
	case s.retried && !s.beyondRetry:
		return fmt.Sprintf("the server answered with a Retry, then nothing for %v: every Initial carrying its token was lost, or a server that does not say so (an older one) refused the token (expired, or from another address)", quiet)
	}
	return fmt.Sprintf("nothing from the server for %v, in the middle of the handshake (%d datagrams from it before)", quiet, s.st.PacketsReceived)
}

// fail closes the session with err and tells the peer why.
func (s *Session) fail(err error, code uint32) {
	if s.state == stateClosed {
		return
	}
	s.err = err
	s.closePending = true
	s.closeCode = code
}

// close starts a local close: a Close frame goes out on the next poll.
func (s *Session) close() {
	if s.state != stateClosed && !s.closePending {
		s.err = ErrClosed
		s.closePending = true
		s.closeCode = closeNormal
		if s.out.unacked() > 0 {
			s.closeCode = closeAbort
		}
	}
}

// sendUpdate replaces the freshest unsent update (ACP's rule: only the
// freshest is ever sent).
func (s *Session) sendUpdate(now clock.Mono, wallUS int64, payload []byte) error {
	if len(payload) > s.cfg.MaxUpdatePayload() {
		return fmt.Errorf("%w: %d > %d bytes", ErrUpdateTooLarge, len(payload), s.cfg.MaxUpdatePayload())
	}
	if err := s.buildPolicy(); err != nil {
		return err
	}
	if s.updFresh {
		s.st.UpdatesSuperseded++
	}
	if o, ok := s.policy.(acp.SourceObserver); ok {
		o.OnUpdateOffered(now) // the policy learns the source's rate
	}
	// The buffer grows to the largest update sent, not to the largest
	// possible: a monitor's session never sends one, and a source's
	// samples are usually a few dozen bytes.
	s.updBuf = append(s.updBuf[:0], payload...)
	s.updGen, s.updMono, s.updFresh = wallUS, now, true
	return nil
}

// Poll writes the next datagram to send at now into buf and returns it with
// its DSCP code point; ok is false when there is nothing to send now.
func (s *Session) Poll(now clock.Mono, wallUS int64, buf []byte) (dgram []byte, mark dscp.Codepoint, ok bool) {
	for {
		s.mig.sendPath = PathCurrent
		dgram, mark, ok = s.poll(now, wallUS, buf)
		if ok && s.trace != nil {
			s.traceDescribe(dgram) // before protect encrypts the body
		}
		if ok && s.sec != nil {
			var sendable bool
			plain := len(dgram)
			if dgram, sendable = s.protect(dgram); !sendable {
				continue // nothing may leave without keys; poll on
			}
			s.st.BytesSent += int64(len(dgram) - plain) // the tag, for the amplification limit too
		}
		if ok {
			s.onPathSent(len(dgram))
			if s.trace != nil {
				s.traceSent(now, dgram)
			}
		}
		s.armProbe(now)
		return dgram, mark, ok
	}
}

func (s *Session) poll(now clock.Mono, wallUS int64, buf []byte) (dgram []byte, mark dscp.Codepoint, ok bool) {
	if s.amplificationLimited(now) {
		if s.closePending {
			// No room left for the CLOSE: end without it, or the session
			// would wait for a peer that may not exist (a forged Initial)
			// and never close. A real peer times out.
			s.closePending, s.state = false, stateClosed
			s.releaseTLS()
		}
		return nil, 0, false // until the peer sends more or proves its address
	}
	hdr := func(t wire.Type, flags uint8, pn cc.PacketNumber) []byte { return s.header(buf, wallUS, t, flags, pn) }
	streamDSCP, updDSCP := s.cfg.StreamDSCP, s.cfg.UpdateDSCP
	if b, ok := s.pollCommit(now, wallUS, buf); ok {
		return s.sent(b), streamDSCP, true
	}
	switch {
	case s.closePending:
		s.closePending = false
		s.state = stateClosed
		defer s.releaseTLS() // after protect has sealed the Close
		b := hdr(wire.TypeClose, 0, 0)
		return s.sent(wire.AppendClose(b, &wire.Close{Code: s.closeCode, Reason: s.closeReason})), streamDSCP, true
	case s.state == stateClosed:
		return nil, 0, false
	case s.sec != nil && s.handshakeDue(now):
		if b, ok := s.pollHandshake(now, wallUS, buf); ok {
			return s.sent(b), streamDSCP, true
		}
		if s.state == stateHandshake {
			return s.pollEarly(now, wallUS, buf)
		}
	case s.sec != nil && s.state == stateHandshake:
		return s.pollEarly(now, wallUS, buf) // a 0-RTT update, if any (early.go)
	case s.client && s.state == stateHandshake:
		if now.Before(s.hsNext) {
			return nil, 0, false
		}
		// Retransmit the Initial with exponential backoff from 250 ms.
		s.hsNext = now.Add(handshakeBackoff(s.hsTries))
		s.hsTries++
		s.hsSent = now
		return s.sent(wire.AppendInitial(hdr(wire.TypeInitial, 0, 0), wire.Initial{Token: s.token})), streamDSCP, true
	case s.acceptPending:
		s.acceptPending = false
		return s.sent(wire.AppendAccept(hdr(wire.TypeAccept, 0, 0), &wire.Accept{ServerConnID: s.srvID, Params: s.plaintextParams()})), streamDSCP, true
	}
	if b, ok := s.pollPath(now, wallUS, buf); ok {
		return s.sent(b), streamDSCP, true
	}
	if s.ackDue(now) {
		return s.sent(s.appendAck(now, wallUS, buf)), streamDSCP, true
	}
	if b, ok := s.pollAckFrequency(now, wallUS, buf); ok {
		return s.sent(b), streamDSCP, true
	}
	if b, ok := s.pollNewToken(wallUS, buf); ok {
		return s.sent(b), streamDSCP, true
	}
	if s.probe {
		s.probe = false
		s.lastSent = now
		pn := s.tr.OnSent(now, 0, kindProbe, 0, 0)
		b := hdr(wire.TypePing, 0, pn)
		if s.sec != nil {
			// Long enough to draw a stateless reset from a server that
			// lost the connection (RFC 9000 §10.3): a keep-alive may be
			// all a quiet device sends.
			b = append(b, make([]byte, wire.PingPadding)...)
		}
		return s.sent(b), streamDSCP, true
	}
	if s.updFresh && !now.Before(s.nextUpdateAt()) {
		return s.sent(s.appendUpdate(now, wallUS, buf)), updDSCP, true
	}
	if n, ok := s.probeDue(now); ok && s.pacer.Ready(now) {
		return s.sent(s.appendProbe(now, hdr, n)), streamDSCP, true
	}
	if s.out.pending() && s.pacer.Ready(now) && s.canSend() {
		off, data, fin, retx, ok := s.out.chunk(s.cfg.dataPayload(s.pmtu.size), s.peerMax)
		if ok {
			var flags uint8
			if fin {
				flags = wire.FlagFIN
			}
			size := wire.HeaderLen + wire.DataOverhead + len(data)
			s.lastSent = now
			pn := s.tr.OnSent(now, cc.ByteCount(len(data)), kindData, off, len(data))
			if fin {
				s.tr.Get(pn).Flags = flagFIN
			}
			s.controller().OnPacketSent(now, pn, cc.ByteCount(len(data)), s.tr.InFlight(kindData))
			if retx {
				s.st.Retransmitted++
			}
			s.pacer.OnSent(now, cc.ByteCount(size), s.controller().PacingRate())
			b := wire.AppendData(hdr(wire.TypeData, flags, pn), &wire.Data{Echo: s.echo, Offset: off, Payload: data})
			return s.sent(b), streamDSCP, true
		}
	}
	if s.out.limitedByBuffer(s.canSend(), s.peerMax) {
		s.out.autoTune(now, s.tr.RTT().Min(), s.tr.RTT().Smoothed(), s.window())
	}
	return nil, 0, false
}

// appendUpdate builds the datagram of the held update in buf (as a new
// packet: updates are never retransmitted) and records it as sent.
func (s *Session) appendUpdate(now clock.Mono, wallUS int64, buf []byte) []byte {
	s.updFresh = false
	if s.sec != nil {
		s.sec.early.resend = false
	}
	s.updSentAt = now
	s.lastSent = now
	pn := s.tr.OnSent(now, cc.ByteCount(len(s.updBuf)+wire.HeaderLen+wire.UpdateOverhead), kindUpdate, 0, 0)
	s.policy.OnUpdateSent(now, pn, s.updMono)
	s.st.UpdatesSent++
	return wire.AppendUpdate(s.header(buf, wallUS, wire.TypeUpdate, 0, pn), &wire.Update{Echo: s.echo, Generated: s.updGen, Payload: s.updBuf})
}

// sent counts an outgoing datagram.
func (s *Session) sent(b []byte) []byte {
	s.st.PacketsSent++
	s.st.BytesSent += int64(len(b))
	return b
}

// ackDue reports whether an ACK should go out now.
func (s *Session) ackDue(now clock.Mono) bool {
	if s.ackNow {
		return true
	}
	return s.ackAt != 0 && !now.Before(s.ackAt)
}

// header starts a datagram in buf.
func (s *Session) header(buf []byte, wallUS int64, t wire.Type, flags uint8, pn cc.PacketNumber) []byte {
	return wire.AppendHeader(buf[:0], wire.Header{Type: t, Flags: flags, ConnID: s.peerID(), PN: int64(pn), Timestamp: wallUS})
}

// forgetAcked drops the ACK ranges the peer has seen acknowledged: t3 is
// the stamp of the latest ACK it received, echoed on its data. Without
// this, every ACK after 16 gaps would carry all 16 ranges (288 bytes of
// them) for the rest of the connection, a real load on a thin ACK path.
func (s *Session) forgetAcked(t3 int64) {
	if s.acksSent == nil {
		return // no ACK sent yet
	}
	for _, a := range s.acksSent {
		if a.stamp == t3 && a.largest != cc.InvalidPacketNumber {
			s.ranges.Forget(a.largest)
			return
		}
	}
}

// appendAck builds an ACK frame in buf and resets the ACK state.
func (s *Session) appendAck(now clock.Mono, wallUS int64, buf []byte) []byte {
	var a wire.Ack
	for i, r := range s.ranges.Ranges() {
		a.Ranges[i] = wire.AckRange{Largest: int64(r.Hi), Smallest: int64(r.Lo)}
		a.NRanges = i + 1
	}
	if s.nSamples > 0 {
		a.NSamples = copy(a.Samples[:], s.samples[:s.nSamples])
	}
	if s.elicited > 0 {
		a.DelayMicros = uint32(min(now.Sub(s.ackDelayFrom()).Microseconds(), 1<<32-1))
	}
	rtt := s.echoRTT
	if rtt == 0 {
		rtt = s.tr.RTT().Smoothed()
	}
	s.in.autoTune(now, rtt)
	a.MaxData = s.in.maxData()
	s.in.advertised = a.MaxData
	var flags uint8
	if _, ok := s.theta(0); ok {
		flags = wire.FlagSynced
	}
	s.nSamples, s.elicited, s.ackAt, s.ackNow = 0, 0, 0, false
	if s.afr != nil {
		s.afr.gapAt = cc.InvalidPacketNumber // reported
	}
	ring := s.ackRing()
	ring[s.ackSentAt] = ackSent{stamp: wallUS, largest: s.ranges.Largest()}
	s.ackSentAt = (s.ackSentAt + 1) % len(ring)
	return wire.AppendAck(s.header(buf, wallUS, wire.TypeAck, flags, 0), &a)
}

// NextTimeout is the earliest time the session needs Timeout or Poll
// called again, or 0 if none. It changes nothing.
func (s *Session) NextTimeout(now clock.Mono) clock.Mono {
	if s.state == stateClosed {
		return 0
	}
	t := recovery.Earliest(s.lastHeard.Add(s.cfg.IdleTimeout), s.pathTimer(now))
	if s.handshakePending() {
		return now
	}
	if s.client && s.state == stateHandshake {
		return recovery.Earliest(recovery.Earliest(recovery.Earliest(t, s.hsNext), s.earlyUpdateAt(now)), s.vnDeadline())
	}
	if s.state == stateHandshake {
		return t
	}
	// Deadlines for what the anti-amplification limit holds back would
	// wake the driver to send nothing, again and again: until the peer
	// sends more (its datagram wakes the driver anyway) only those of
	// what still fits count.
	room := s.amplificationRoom()
	if room < int64(min(s.cfg.MaxDatagram, maxControlDatagram)) {
		return t
	}
	full := room >= int64(s.cfg.MaxDatagram)
	t = recovery.Earliest(t, s.ackAt)
	t = recovery.Earliest(t, s.tr.NextTimer())
	if s.updFresh && full {
		t = recovery.Earliest(t, max(s.nextUpdateAt(), now))
	}
	if s.out.pending() && full && s.canSend() && !s.out.blocked(s.peerMax) {
		t = recovery.Earliest(t, max(s.pacer.Next(), now))
	}
	if s.cfg.KeepAlive > 0 {
		t = recovery.Earliest(t, max(s.lastSent, s.lastHeard).Add(s.cfg.KeepAlive))
	}
	if full {
		t = recovery.Earliest(t, s.pmtuTimeout(now))
	}
	return recovery.Earliest(t, s.probeAt)
}

// PathDeadTimeouts is how many retransmission timeouts in a row, with no
// acknowledgement of anything new in between, make the path dead: with
// the timeout doubling from one RTO (at least 200 ms) up to 2 s, four
// take 3 s on a short path and about 6 s at a 300 ms RTT — well before
// the idle timeout, and longer than a cellular link's usual stalls.
const PathDeadTimeouts = 4

// PathDead reports whether the path looks dead: PathDeadTimeouts timeouts
// in a row without an acknowledgement. It clears at the next ACK frame
// that acknowledges a packet newer than any before, even one the timeouts
// already gave up (the path answers again). The
// connection stays open (the path may come back, or the peer may move):
// only IdleTimeout ends it.
func (s *Session) PathDead() bool {
	return s.state == stateOpen && s.tr.Backoff() >= PathDeadTimeouts && !s.answered
}

// nextUpdateAt is when the next update may go: when the policy allows, and
// into a dead path at most one per retransmission timeout, a probe whose
// ACK says the path is back, not a stream of updates nobody receives
// (the policy's rate was learned on a path that answered).
func (s *Session) nextUpdateAt() clock.Mono {
	if s.sec != nil && s.sec.early.resend {
		return 0 // the early update the server never read (early.go): it goes at once
	}
	t := s.policy.NextSendTime()
	if s.PathDead() {
		t = max(t, s.updSentAt.Add(s.tr.RTO()))
	}
	return t
}

// armProbe keeps the flow-control probe timer: armed one RTO ahead while
// the stream is blocked by the peer's window with nothing in flight (no
// ACK will come to open it), disarmed otherwise. Every call that changes
// that condition ends with it, so NextTimeout only reads probeAt.
func (s *Session) armProbe(now clock.Mono) {
	if s.state == stateOpen && s.out.blocked(s.peerMax) && s.tr.TotalInFlight() == 0 {
		if s.probeAt == 0 {
			s.probeAt = now.Add(s.tr.RTO())
		}
		return
	}
	s.probeAt = 0
}

// Timeout fires the deadlines due at now.
func (s *Session) Timeout(now clock.Mono) {
	if s.state == stateClosed {
		return
	}
	defer s.armProbe(now)
	if s.vnTimeout(now) {
		return
	}
	if !now.Before(s.lastHeard.Add(s.cfg.IdleTimeout)) {
		if s.client && s.state == stateHandshake {
			s.fail(s.handshakeSilence(now), closeIdle)
		} else {
			s.fail(ErrIdleTimeout, closeIdle)
		}
		return
	}
	s.pathTimeout(now)
	if s.tr.OnLossTimeout(now, s.lostFn) && s.trace != nil {
		s.traceMetrics(now)
	}
	if s.trace != nil {
		s.trace.timeout = true // the losses OnRTOTimeout declares are the timeout's
	}
	rto, had := s.tr.OnRTOTimeout(now, s.lostFn)
	if s.trace != nil {
		s.trace.timeout = false
	}
	if rto {
		data, upd := had.Has(kindData), had.Has(kindUpdate)
		s.answered = false
		if data {
			s.controller().OnRetransmissionTimeout(now)
		}
		if upd {
			s.policy.OnRetransmissionTimeout(now)
		}
		if !data && !upd {
			s.probe = true // only probes were out: ask for an ACK
			s.pmtu.onTimeoutAlone()
		}
		if s.pmtu.suspect() {
			s.probe = true // a small packet: does the path carry those? (pmtu.go)
		}
		if s.trace != nil {
			s.traceMetrics(now)
		}
	}
	if s.cfg.KeepAlive > 0 && !now.Before(max(s.lastSent, s.lastHeard).Add(s.cfg.KeepAlive)) {
		s.probe = true // keep-alive
		s.lastSent = now
	}
	if s.probeAt != 0 && !now.Before(s.probeAt) {
		s.probeAt = 0
		if s.out.blocked(s.peerMax) && s.tr.TotalInFlight() == 0 {
			s.probe = true // zero-window probe: elicit a window update
		}
	}
}
