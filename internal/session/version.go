package session

import (
	"fmt"
	"slices"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/recovery"
	"github.com/fresh-udp/fresh/internal/wire"
)

// Version negotiation (RFC 9000 §6, and RFC 9368's confirmation of the
// version inside the handshake).
//
// A server that speaks none of the client's versions answers its Initial
// with a VersionNegotiation listing the versions it speaks. Nothing
// authenticates that datagram: whoever sees the client's Initial (its
// connection ID is in the clear) can send one, ahead of the server's
// answer. So the client:
//
//   - ignores a VersionNegotiation once anything else came from the
//     server (RFC 9000 §6.2), one that lists the version the client uses
//     (it answers no Initial of ours), and one for another connection;
//   - does not give up on the first one it takes: it keeps its handshake
//     going (resending its Initial as usual) for versionGrace, and fails
//     with ErrVersion, naming both ends' versions, only if nothing but
//     VersionNegotiations came from the server by then. A forged one that
//     raced the server's answer is then ignored (and counted in
//     Stats.VersionNegotiationsIgnored) when that answer arrives.
//
// Both ends also send version_information (params.go) in the TLS
// handshake, where it is authenticated, and check the peer's:
//
//   - the version it chose must be the one the connection runs, or the
//     packets' version was rewritten on the way (ErrVersionDowngrade);
//   - a client running a version other than its first choice does so
//     only because a VersionNegotiation said the server speaks none
//     better (RFC 9368 §4's incompatible negotiation, the client dialling
//     again with another version): the version it would choose from the
//     server's authenticated list must be the one it runs, or that
//     VersionNegotiation was forged to downgrade it (ErrVersionDowngrade).
//     This build speaks one version (wire.Versions), so it never dials
//     again with another and the check passes by construction; it is
//     tested with made-up version lists, for the version that adds a
//     second.
//
// A peer whose transport parameters carry no version_information (a
// version 2 end built before it existed) is taken: its version prefix
// (transportParams) already named the version it runs, inside the same
// authenticated handshake. Only a client that left its first choice
// requires the parameter, since without it nothing shows the
// VersionNegotiation was genuine.

// versionGrace is how long a client keeps its handshake going after the
// first VersionNegotiation it takes, waiting for another answer from the
// server: RFC 9002's first PTO (1 s, for its kInitialRtt of 333 ms), the
// time a QUIC sender gives its first flight's answer. A server that
// really speaks another version so fails the Dial in about a second, not
// at once; on a path whose round trip exceeds it, a forged
// VersionNegotiation can still fail the Dial.
const versionGrace = recovery.InitialRTO

// pendingVN is a VersionNegotiation a client in its handshake took, while
// versionGrace runs.
type pendingVN struct {
	versions []uint8    // what it says the server speaks
	deadline clock.Mono // the handshake fails then, unless the server answered
}

// handleVersionNegotiation takes a datagram of another version for a
// client; ok is false if it is no VersionNegotiation for this connection
// (the caller counts it as malformed), else v says whether the session
// took it.
func (s *Session) handleVersionNegotiation(now clock.Mono, b []byte) (v Verdict, ok bool) {
	var vn wire.VersionNegotiation
	if !s.client || wire.ParseVersionNegotiation(b, &vn) != nil || vn.ConnID != s.connID ||
		slices.Contains(vn.Versions, wire.Version) {
		return Dropped, false
	}
	if s.state != stateHandshake || s.st.PacketsReceived > 0 {
		s.st.VersionNegotiationsIgnored++ // the server answered: not from it (RFC 9000 §6.2)
		return Dropped, true
	}
	if s.vn == nil {
		s.vn = &pendingVN{versions: slices.Clone(vn.Versions), deadline: now.Add(versionGrace)}
	}
	return Accepted, true
}

// vnAnswered runs when a packet from the server has been processed: a
// VersionNegotiation taken before was not the server's.
func (s *Session) vnAnswered() {
	s.st.VersionNegotiationsIgnored++
	s.vn = nil
}

// vnDeadline is when a VersionNegotiation taken fails the handshake (0:
// none taken).
func (s *Session) vnDeadline() clock.Mono {
	if s.vn == nil {
		return 0
	}
	return s.vn.deadline
}

// vnTimeout fails the handshake once versionGrace has passed since a
// VersionNegotiation with nothing else from the server: it speaks none of
// our versions. It reports whether the session closed.
func (s *Session) vnTimeout(now clock.Mono) bool {
	if s.vn == nil || now.Before(s.vn.deadline) {
		return false
	}
	s.Abort(fmt.Errorf("%w: %w: it speaks versions %v, this end speaks %d; upgrade the older end", ErrHandshake, ErrVersion, s.vn.versions, wire.Version))
	s.vn = nil
	return true
}

// checkPeerVersions checks the peer's version_information, if it sent
// one, against the version this connection runs (see the rules above).
func (s *Session) checkPeerVersions(p *peerParams) error {
	var got *versionInfo
	if p.hasVersions {
		got = &p.versions
	}
	if s.client {
		return checkServerVersions(wire.Versions(), wire.Version, got)
	}
	if got != nil && got.chosen != wire.Version {
		return fmt.Errorf("%w: the client's version_information chose version %d, its packets are of version %d", ErrVersionDowngrade, got.chosen, wire.Version)
	}
	return nil
}

// checkServerVersions is a client's check of the server's
// version_information got (nil: the server sent none): ours is the
// versions the client speaks in its order of preference, inUse the one
// this connection runs. A client runs a version after its first choice
// only because a VersionNegotiation made it dial again (RFC 9368 §4):
// then the server's authenticated list must not hold a version it
// prefers.
func checkServerVersions(ours []uint8, inUse uint8, got *versionInfo) error {
	acted := inUse != ours[0]
	switch {
	case got == nil && acted:
		return fmt.Errorf("%w: this end runs version %d after a VersionNegotiation, and the server's transport parameters do not confirm it (no version_information)", ErrVersionDowngrade, inUse)
	case got == nil:
		return nil
	case got.chosen != inUse:
		return fmt.Errorf("%w: the server's version_information chose version %d, its packets are of version %d", ErrVersionDowngrade, got.chosen, inUse)
	}
	if !acted {
		return nil
	}
	for _, v := range ours {
		if slices.Contains(got.list(), v) {
			if v != inUse {
				return fmt.Errorf("%w: a VersionNegotiation made this end leave version %d for %d, but the server speaks %v: it was forged", ErrVersionDowngrade, v, inUse, got.list())
			}
			return nil
		}
	}
	return nil // unreachable: got.list() holds got.chosen, which is inUse
}
