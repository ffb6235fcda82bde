package session

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/wire"
)

// vnFor is a VersionNegotiation for connection id listing versions.
func vnFor(id uint64, versions ...uint8) []byte {
	return wire.AppendVersionNegotiation(nil, &wire.VersionNegotiation{ConnID: id, Versions: versions})
}

// A VersionNegotiation with nothing else from the server ends the
// handshake with ErrVersion once versionGrace has passed (on a manual
// clock: the session's deadline, not a timer); one the server answers
// within the grace ends nothing and is counted as ignored, as is one after
// the server's first packet. One that lists our version, one for another
// connection, and one to a server are no VersionNegotiation for the
// session.
func TestVersionNegotiationWaitsForTheServer(t *testing.T) {
	client := func() *Session {
		s, err := New(Config{}, 5, true, 0)
		require.NoError(t, err)
		_, _, ok := s.Poll(0, 0, make([]byte, 0, 2048)) // the Initial
		require.True(t, ok)
		return s
	}
	at := clock.Mono(10 * time.Millisecond)

	s := client()
	require.True(t, s.Handle(at, 1, vnFor(5, wire.Version+1, wire.Version+2)))
	require.False(t, s.Closed(), "not at once: a forged one may have raced the server's answer")
	require.Equal(t, at.Add(versionGrace), s.vnDeadline())
	require.True(t, s.Handle(at.Add(time.Millisecond), 1, vnFor(5, wire.Version+1)), "another, for the Initial resent")
	require.Equal(t, at.Add(versionGrace), s.vnDeadline(), "the first one's deadline")
	for now := at; s.NextTimeout(now) < at.Add(versionGrace); now = s.NextTimeout(now) {
		s.Timeout(s.NextTimeout(now)) // the Initial resent meanwhile
		for {
			if _, _, ok := s.Poll(s.NextTimeout(now), 1, make([]byte, 0, 2048)); !ok {
				break
			}
		}
		require.False(t, s.Closed())
	}
	require.Equal(t, at.Add(versionGrace), s.NextTimeout(at.Add(versionGrace-1)), "woken at the deadline")
	s.Timeout(at.Add(versionGrace))
	require.True(t, s.Closed())
	require.ErrorIs(t, s.Err(), ErrVersion)
	require.ErrorIs(t, s.Err(), ErrHandshake)
	require.ErrorContains(t, s.Err(), fmt.Sprintf("it speaks versions [%d %d], this end speaks %d; upgrade the older end", wire.Version+1, wire.Version+2, wire.Version))

	// The server answers within the grace: the VersionNegotiation was
	// not its own.
	s = client()
	require.True(t, s.Handle(at, 1, vnFor(5, wire.Version+1)))
	accept := wire.AppendAccept(wire.AppendHeader(nil, wire.Header{Type: wire.TypeAccept, ConnID: 5}), &wire.Accept{ServerConnID: 77})
	require.True(t, s.Handle(at.Add(20*time.Millisecond), 1, accept))
	require.Equal(t, int64(1), s.Stats(at).VersionNegotiationsIgnored)
	s.Timeout(at.Add(versionGrace))
	require.False(t, s.Closed())
	// After the server answered, another ends nothing either.
	require.False(t, s.Handle(at.Add(versionGrace), 2, vnFor(5, wire.Version+1)))
	require.False(t, s.Closed())
	require.Equal(t, int64(2), s.Stats(at).VersionNegotiationsIgnored)
	require.Zero(t, s.Stats(at).Malformed)

	// Not VersionNegotiations for this session: counted as malformed.
	s = client()
	require.False(t, s.Handle(at, 1, vnFor(5, wire.Version)), "lists our version")
	require.False(t, s.Handle(at, 1, vnFor(6, wire.Version+1)), "another connection's")
	require.Zero(t, s.vnDeadline(), "no deadline armed")
	require.Equal(t, int64(2), s.Stats(at).Malformed)
	srv, err := New(Config{}, 5, false, 0)
	require.NoError(t, err)
	require.False(t, srv.Handle(1, 1, vnFor(5, wire.Version+1)), "a server never takes one")
	require.False(t, srv.Closed())
}

// A VersionNegotiation forged on the path, before the server's first
// flight and after it, does not stop a TLS handshake: both are ignored
// and counted.
func TestForgedVersionNegotiationDoesNotFailTheHandshake(t *testing.T) {
	for _, after := range []bool{false, true} {
		p := NewPair(t, secure(t), secure(t), Link{Delay: 10 * time.Millisecond})
		forged := false
		p.Filter = func(from *Session, d []byte) bool {
			// Seen the client's Initial, the forgery arrives at once,
			// before the server's answer; or just after the server's
			// first datagram.
			switch {
			case forged || (from == p.Srv) != after:
			case after:
				p.Later(p.Now.Add(p.Link.Delay+time.Millisecond), p.Cli, vnFor(pairConnID, 1))
			default:
				p.Later(p.Now, p.Cli, vnFor(pairConnID, 1))
			}
			forged = forged || (from == p.Srv) == after
			return true
		}
		taken := false
		p.Deliver = func(to *Session, b []byte) {
			ok := to.Handle(p.Now, p.Wall(to), b)
			if b[0] == 0 { // the VersionNegotiation
				taken = ok
			}
		}
		p.Open()
		require.True(t, forged)
		require.Equal(t, !after, taken, "taken (pending) only before the server's first packet (RFC 9000 §6.2)")
		require.NoError(t, p.Cli.Err())
		require.Equal(t, int64(1), p.Cli.Stats(p.Now).VersionNegotiationsIgnored, "after the server's first packet: %v", after)
		p.Run(2 * versionGrace)
		require.Equal(t, stateOpen, p.Cli.state)
	}
}

// The client's check of the server's authenticated version_information
// (RFC 9368 §4), with made-up version lists: this build speaks one
// version, so only a later one that speaks several can act on a
// VersionNegotiation by dialling again with another version; a client
// that did so must find in the server's list no version it prefers to the
// one it runs, or the VersionNegotiation was forged to downgrade it.
func TestCheckServerVersionsDetectsADowngrade(t *testing.T) {
	vi := func(chosen uint8, list ...uint8) *versionInfo {
		v := versionInfo{chosen: chosen, n: uint8(len(list))}
		copy(v.available[:], list)
		return &v
	}
	for _, tc := range []struct {
		name  string
		ours  []uint8
		inUse uint8
		got   *versionInfo
		err   string // "" for none
	}{
		{"this build", wire.Versions(), wire.Version, vi(wire.Version, wire.Version), ""},
		{"a server that also speaks others", []uint8{2}, 2, vi(2, 3, 2, 1), ""},
		{"an older server, before version_information", []uint8{3, 2}, 3, nil, ""},
		{"the version rewritten", []uint8{2}, 2, vi(3, 3, 2), "chose version 3, its packets are of version 2"},
		{"a genuine negotiation: the server speaks only 2", []uint8{3, 2}, 2, vi(2, 2), ""},
		{"a downgrade: the server speaks 3 as well", []uint8{3, 2}, 2, vi(2, 3, 2), "leave version 3 for 2, but the server speaks [3 2]: it was forged"},
		{"a downgrade to the third choice", []uint8{4, 3, 2}, 2, vi(2, 2, 3), "leave version 3 for 2"},
		{"after a negotiation, nothing confirms it", []uint8{3, 2}, 2, nil, "do not confirm it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkServerVersions(tc.ours, tc.inUse, tc.got)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrVersionDowngrade)
			require.ErrorContains(t, err, tc.err)
		})
	}
}

// Each end checks the version the other confirmed in the handshake: a
// server's version_information that chose another version fails the
// client's handshake with ErrVersionDowngrade, and a client's fails the
// server's; transport parameters without one (a version 2 end from
// before version_information) are taken by both.
func TestPeerVersionInformationChecked(t *testing.T) {
	cli, err := New(Config{}, 5, true, 0)
	require.NoError(t, err)
	srv, err := New(Config{}, 5, false, 0)
	require.NoError(t, err)
	other := peerParams{hasVersions: true, versions: versionInfo{chosen: wire.Version + 1, n: 2, available: [wire.MaxVersions]uint8{wire.Version + 1, wire.Version}}}
	require.ErrorIs(t, cli.onPeerParams(other.append()), ErrVersionDowngrade)
	require.ErrorIs(t, srv.onPeerParams(other.append()), ErrVersionDowngrade)
	require.NoError(t, cli.onPeerParams(bytes.Clone(transportParams)))
	require.NoError(t, srv.onPeerParams(bytes.Clone(transportParams)))
	require.NoError(t, cli.onPeerParams(serverParams(nil, time.Millisecond, true)))
	require.NoError(t, srv.onPeerParams(clientParams(time.Millisecond, true)))
}
