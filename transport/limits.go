package transport

import (
	"errors"
	"net/netip"
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// Per-source limits of a Listener: how many connections one source may
// hold, and how fast it may open them (a token bucket). With Retry on, a
// source here is an address that proved it receives its packets, so a
// flood of forged Initials never reaches this table; the limits stop one
// real host, or a botnet's one member, from taking every connection slot
// or the CPU of back-to-back handshakes.

// Why admit refused a source.
var (
	errSourceLimit = errors.New("per-source connection limit")
	errRateLimit   = errors.New("per-source handshake rate limit")
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
	conns  int        // connections held
	tokens float64    // handshakes it may start now (the bucket)
	filled clock.Mono // when tokens was last brought up to date
}

// sourceTable holds the sources with connections or a recent handshake.
// Callers serialise (the Listener's mutex).
type sourceTable struct {
	perSource int
	rate      float64 // handshakes per second
	burst     float64
	m         map[netip.Addr]*source
	pruned    clock.Mono
}

// sourcePruneEvery is how often idle sources are forgotten.
const sourcePruneEvery = 10 * time.Second

func newSourceTable(perSource int, rate float64, burst int, now clock.Mono) *sourceTable {
	return &sourceTable{perSource: perSource, rate: rate, burst: float64(burst), m: map[netip.Addr]*source{}, pruned: now}
}

// refill brings s's bucket up to now.
func (t *sourceTable) refill(s *source, now clock.Mono) {
	s.tokens = min(t.burst, s.tokens+now.Sub(s.filled).Seconds()*t.rate)
	s.filled = now
}

// admit decides whether src may open one more connection now: errSourceLimit
// or errRateLimit if not. On success it takes a token and counts the
// connection (release gives it back when it ends).
func (t *sourceTable) admit(src netip.Addr, now clock.Mono) error {
	t.prune(now)
	s := t.m[src]
	if s == nil {
		s = &source{tokens: t.burst, filled: now}
	}
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
	t.m[src] = s
	return nil
}

// release counts a connection of src gone.
func (t *sourceTable) release(src netip.Addr) {
	if s := t.m[src]; s != nil && s.conns > 0 {
		s.conns--
	}
}

// prune forgets, every sourcePruneEvery, the sources that hold no
// connection and whose bucket has refilled: they are as a new source
// would be, so the table stays as small as the set of active sources.
func (t *sourceTable) prune(now clock.Mono) {
	if now.Sub(t.pruned) < sourcePruneEvery {
		return
	}
	t.pruned = now
	for a, s := range t.m {
		if s.conns == 0 {
			if t.refill(s, now); s.tokens >= t.burst {
				delete(t.m, a)
			}
		}
	}
}
