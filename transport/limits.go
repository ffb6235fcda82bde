package transport

import (
	"errors"
	"net/netip"
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// Per-source limits of a Listener: how many connections one source may
// hold, how fast it may open them (a token bucket), and how many
// handshakes it may have in progress at once. With Retry on, a source
// here is an address that proved it receives its packets, so a flood of
// forged Initials never reaches this table; the limits stop one real
// host, or a botnet's one member, from taking every connection slot, the
// CPU of back-to-back handshakes, or the places of MaxHandshakes (a
// handshake a client never finishes holds one until HandshakeTimeout, so
// a rate alone, 100/s for 10 s, would let one source hold 1,100). Past
// its parts, the last places of MaxHandshakes go to sources with no
// handshake under way: a flood from a few sources, each at its part,
// still leaves a genuine client from elsewhere a place.

// hsReserveShare: MaxHandshakes/hsReserveShare places (100 of the
// default 1,000) are kept for sources with no handshake under way. With
// the default part of a tenth per source, a flood needs nine sources at
// their parts and a hundred more to take every place, where one sufficed
// before any of this and ten with the parts alone.
const hsReserveShare = 10

// Why admit refused a source.
var (
	errSourceLimit      = errors.New("per-source connection limit")
	errRateLimit        = errors.New("per-source handshake rate limit")
	errSourceHandshakes = errors.New("per-source handshake limit")
)

// sourceOf is the source an address counts against: the IPv4 address, or
// the IPv6 /64, the usual allocation to one subscriber (RFC 6177 §2), in
// which a host picks addresses freely.
func sourceOf(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}

// source is one source's state.
type source struct {
	conns      int        // connections held (counted for a limited source only)
	handshakes int        // handshakes in progress (counted for every source)
	tokens     float64    // handshakes it may start now (the bucket)
	filled     clock.Mono // when tokens was last brought up to date
}

// sourceTable holds the sources with connections, handshakes or a recent
// handshake. Callers serialise (the Listener's mutex).
type sourceTable struct {
	perSource   int     // connections per limited source
	hsPerSource int     // handshakes in progress per source
	rate        float64 // handshakes per second
	burst       float64
	m           map[netip.Addr]*source
	pruned      clock.Mono
}

// sourcePruneEvery is how often idle sources are forgotten.
const sourcePruneEvery = 10 * time.Second

func newSourceTable(perSource, hsPerSource int, rate float64, burst int, now clock.Mono) *sourceTable {
	return &sourceTable{perSource: perSource, hsPerSource: hsPerSource, rate: rate, burst: float64(burst), m: map[netip.Addr]*source{}, pruned: now}
}

// refill brings s's bucket up to now.
func (t *sourceTable) refill(s *source, now clock.Mono) {
	s.tokens = min(t.burst, s.tokens+now.Sub(s.filled).Seconds()*t.rate)
	s.filled = now
}

// admit decides whether src may open one more connection now. Every
// source may have hsPerSource handshakes in progress (errSourceHandshakes
// beyond), and none more while the Listener is crowded (its handshakes
// are into the places kept for sources with none: errHandshakes); a
// limited one (not an exempt loopback source) may also hold perSource
// connections (errSourceLimit) and start handshakes at the bucket's rate
// (errRateLimit). On success it counts the handshake and, for a limited
// source, takes a token and counts the connection (handshakeEnded and
// release give them back).
func (t *sourceTable) admit(src netip.Addr, limited, crowded bool, now clock.Mono) error {
	t.prune(now)
	s := t.m[src]
	if s == nil {
		s = &source{tokens: t.burst, filled: now}
	}
	if s.handshakes >= t.hsPerSource {
		return errSourceHandshakes
	}
	if crowded && s.handshakes > 0 {
		return errHandshakes
	}
	if limited {
		if s.conns >= t.perSource {
			return errSourceLimit
		}
		t.refill(s, now)
		if s.tokens < 1 {
			t.m[src] = s // remember the empty bucket
			return errRateLimit
		}
		s.tokens--
		s.conns++
	}
	s.handshakes++
	t.m[src] = s
	return nil
}

// handshakeEnded counts a handshake of src ended (completed or not).
func (t *sourceTable) handshakeEnded(src netip.Addr) {
	if s := t.m[src]; s != nil && s.handshakes > 0 {
		s.handshakes--
		t.forgetIfIdle(src, s)
	}
}

// release counts a connection of a limited source src gone.
func (t *sourceTable) release(src netip.Addr) {
	if s := t.m[src]; s != nil && s.conns > 0 {
		s.conns--
		t.forgetIfIdle(src, s)
	}
}

// forgetIfIdle forgets s at once if it holds nothing and its bucket is
// full (an exempt loopback source's is never drawn), as prune would: a
// local client's handshakes leave no entry behind.
func (t *sourceTable) forgetIfIdle(src netip.Addr, s *source) {
	if s.conns == 0 && s.handshakes == 0 && s.tokens >= t.burst {
		delete(t.m, src)
	}
}

// prune forgets, every sourcePruneEvery, the sources that hold no
// connection or handshake and whose bucket has refilled: they are as a
// new source would be, so the table stays as small as the set of active
// sources.
func (t *sourceTable) prune(now clock.Mono) {
	if now.Sub(t.pruned) < sourcePruneEvery {
		return
	}
	t.pruned = now
	for a, s := range t.m {
		if s.conns == 0 && s.handshakes == 0 {
			if t.refill(s, now); s.tokens >= t.burst {
				delete(t.m, a)
			}
		}
	}
}
