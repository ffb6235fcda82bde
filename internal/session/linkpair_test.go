package session

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock"
)

// linkPair runs a client and a server session over an emulated link in
// virtual time: every datagram takes delay to arrive, in order, and time
// advances in ticks. Unlike sessionPair, whose datagrams arrive at the
// instant they were sent while the wall stamps claim 5 ms, the monotonic
// and wall clocks agree, so round trips and one-way delays are consistent.
type linkPair struct {
	cli, srv *Session
	now      clock.Mono
	delay    time.Duration // one way
	srvAhead int64         // the server's wall clock minus the client's, µs
	q        []inflight
	// drop, if set, decides the fate of each datagram sent by from.
	drop func(from *Session, b []byte) bool
	buf  []byte
}

type inflight struct {
	at clock.Mono
	to *Session
	b  []byte
}

func newLinkPair(t testing.TB, cfg Config, delay time.Duration) *linkPair {
	cli, err := New(cfg, 7, true, 0)
	require.NoError(t, err)
	srv, err := New(cfg, 7, false, 0)
	require.NoError(t, err)
	p := &linkPair{cli: cli, srv: srv, delay: delay, buf: make([]byte, 0, 65536)}
	p.run(4*delay, delay/10)
	require.True(t, cli.state == stateOpen && srv.state == stateOpen, "handshake")
	return p
}

// wall is s's wall clock now, µs.
func (p *linkPair) wall(s *Session) int64 {
	w := int64(p.now) / 1000
	if s == p.srv {
		w += p.srvAhead
	}
	return w
}

// run advances virtual time by d in steps of tick: deliver what arrived,
// fire due timers, send what the sessions have to send.
func (p *linkPair) run(d, tick time.Duration) {
	end := p.now.Add(d)
	for p.now.Before(end) {
		p.now = p.now.Add(tick)
		p.step()
	}
}

// step does one tick's work at p.now.
func (p *linkPair) step() {
	n := 0
	for _, f := range p.q {
		if p.now.Before(f.at) {
			break
		}
		f.to.Handle(p.now, p.wall(f.to), f.b)
		n++
	}
	p.q = append(p.q[:0], p.q[n:]...)
	for _, s := range []*Session{p.cli, p.srv} {
		if d := s.NextTimeout(p.now); d != 0 && !p.now.Before(d) {
			s.Timeout(p.now)
		}
		to := p.srv
		if s == p.srv {
			to = p.cli
		}
		for {
			d, _, ok := s.Poll(p.now, p.wall(s), p.buf)
			if !ok {
				break
			}
			if p.drop != nil && p.drop(s, d) {
				continue
			}
			p.q = append(p.q, inflight{at: p.now.Add(p.delay), to: to, b: append([]byte(nil), d...)})
		}
	}
}
