package session

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/wire"
)

// ticketCache counts the session tickets stored in it.
type ticketCache struct {
	tls.ClientSessionCache
	puts atomic.Int32
}

func (c *ticketCache) Put(key string, cs *tls.ClientSessionState) {
	if cs != nil {
		c.puts.Add(1)
	}
	c.ClientSessionCache.Put(key, cs)
}

// resumable is a client and a server that keep their TLS configs across
// pairs, as a dialer and a listener do across connections: the server's
// ticket keys live in its config, the client's tickets in its cache.
type resumable struct {
	cli, srv Config
	cache    *ticketCache
}

func newResumable(t testing.TB, cli0RTT, srv0RTT bool) *resumable {
	cache := &ticketCache{ClientSessionCache: tls.NewLRUClientSessionCache(4)}
	c := PrepareTLS(loopbackTLS(t))
	c.ClientSessionCache = cache
	return &resumable{
		cli:   Config{TLS: c, Allow0RTT: cli0RTT},
		srv:   Config{TLS: PrepareTLS(loopbackTLS(t)), Allow0RTT: srv0RTT},
		cache: cache,
	}
}

// prime runs one full handshake so that the client holds a ticket.
func (r *resumable) prime(t testing.TB, l Link) {
	p := NewPair(t, r.cli, r.srv, l)
	p.Open()
	require.True(t, p.DriveUntil(func() bool { return r.cache.puts.Load() > 0 }, time.Second), "no session ticket")
	st, _ := p.Cli.TLSState()
	require.False(t, st.DidResume)
}

// firstUpdateAt runs a pair whose client sends an update at time 0, before
// its first poll, and returns when the server's application could first
// take it: once the server is open (an application gets the connection
// only then) and holds the update.
func firstUpdateAt(t *testing.T, p *Pair) (clock.Mono, Update) {
	require.NoError(t, p.Cli.SendUpdate(p.Now, p.Wall(p.Cli), []byte("first")))
	var u Update
	ok := p.DriveUntil(func() bool {
		if !p.Srv.Opened() || !p.Srv.UpdateReady() {
			return false
		}
		u, _ = p.Srv.TakeUpdate()
		u.Payload = bytes.Clone(u.Payload)
		return true
	}, 5*time.Second)
	require.True(t, ok, "update never delivered")
	require.Equal(t, "first", string(u.Payload))
	return p.Now, u
}

// A resumed client with Allow0RTT on both ends sends its update in its
// first flight, under the 0-RTT keys (epoch 4), before any of its
// handshake flight 3; the server takes it, marked early, one round trip
// before a full handshake's client could send it.
func TestZeroRTTUpdateInFirstFlight(t *testing.T) {
	const delay = 50 * time.Millisecond // RTT 100 ms
	r := newResumable(t, true, true)

	full := NewPair(t, r.cli, r.srv, Link{Delay: delay})
	fullAt, fu := firstUpdateAt(t, full)
	require.False(t, fu.Early)
	require.True(t, full.DriveUntil(func() bool { return r.cache.puts.Load() > 0 }, time.Second))

	p := NewPair(t, r.cli, r.srv, Link{Delay: delay})
	p.Record = true
	earlyAt, u := firstUpdateAt(t, p)
	require.True(t, u.Early, "delivered as a 0-RTT update")
	st, ok := p.Cli.TLSState()
	require.True(t, ok)
	require.True(t, st.DidResume, "resumed: no certificate exchange")
	require.Equal(t, int64(1), p.Cli.Stats(p.Now).EarlyUpdatesSent)
	require.Equal(t, int64(1), p.Srv.Stats(p.Now).EarlyUpdatesReceived)
	require.False(t, p.Cli.Stats(p.Now).EarlyRejected)

	// On the wire: the update left at time 0 with the Initials, protected
	// under epoch 4, before the client's first handshake-epoch packet.
	var updAt, flight3At clock.Mono = -1, -1
	for _, d := range p.Sent {
		if d.From != p.Cli {
			continue
		}
		h, _, err := wire.ParseHeader(d.B)
		require.NoError(t, err)
		switch {
		case h.Type == wire.TypeUpdate && updAt < 0:
			require.Equal(t, wire.EpochEarly, h.Epoch)
			require.NotContains(t, string(d.B), "first", "0-RTT is encrypted")
			updAt = d.At
		case h.Epoch == wire.EpochHandshake && flight3At < 0:
			flight3At = d.At
		}
	}
	require.Equal(t, clock.Mono(0), updAt, "in the first flight")
	require.Greater(t, flight3At, updAt)

	// The server's application has it one RTT earlier: at its handshake's
	// end (1.5 RTT) instead of half an RTT after the client's (2.5 RTT).
	t.Logf("first update at the server's application: full handshake %v, 0-RTT %v", time.Duration(fullAt), time.Duration(earlyAt-0))
	require.GreaterOrEqual(t, time.Duration(fullAt)-time.Duration(earlyAt), 2*delay*9/10)
	require.Equal(t, int64(1), p.Srv.Stats(p.Now).UpdatesReceived, "sent once")
}

// Either end without Allow0RTT means no early data: a client that does not
// opt in sends none (its ticket allowed it), a server that does not issues
// tickets that do not allow it, and one that stopped allowing it declines
// a ticket that does; the client then sends its update after the
// handshake, once.
func TestZeroRTTNeedsBothEnds(t *testing.T) {
	for _, tc := range []struct {
		name              string
		cli, srv, srvLate bool
		restarted         bool // the server's ticket keys changed
		rejected          bool
	}{
		{name: "client without", cli: false, srv: true, srvLate: true},
		{name: "server without", cli: true, srv: false, srvLate: false},
		{name: "server declines its own ticket", cli: true, srv: true, srvLate: false, rejected: true},
		{name: "server restarted", cli: true, srv: true, srvLate: true, restarted: true, rejected: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newResumable(t, tc.cli, tc.srv)
			r.prime(t, Link{Delay: 10 * time.Millisecond})
			srv := r.srv
			srv.Allow0RTT = tc.srvLate
			if tc.restarted {
				srv.TLS = PrepareTLS(loopbackTLS(t)) // new ticket keys: the ticket cannot be read
			}
			p := NewPair(t, r.cli, srv, Link{Delay: 10 * time.Millisecond})
			p.Record = true
			_, u := firstUpdateAt(t, p)
			require.False(t, u.Early)
			st, _ := p.Cli.TLSState()
			require.Equal(t, !tc.restarted, st.DidResume, "resumption goes on without 0-RTT")
			cs := p.Cli.Stats(p.Now)
			require.Equal(t, tc.rejected, cs.EarlyRejected)
			require.Equal(t, int64(0), p.Srv.Stats(p.Now).EarlyUpdatesReceived)
			if tc.rejected {
				require.Equal(t, int64(1), p.Srv.Stats(p.Now).EarlyDropped, "the early packet the server could not read")
			}
			for _, d := range p.Sent {
				if h, _, _ := wire.ParseHeader(d.B); d.From == p.Cli && h.Epoch == wire.EpochEarly {
					require.True(t, tc.rejected, "an early packet without both ends allowing it")
				}
			}
			p.Run(100 * time.Millisecond)
			require.Equal(t, int64(1), p.Srv.Stats(p.Now).UpdatesReceived, "delivered once")
		})
	}
}

// A Retry drops the first flight unread: the early update goes again
// with the Initial that carries the token, not a regulator's interval
// (one second before any RTT sample) later.
func TestZeroRTTUpdateResentAfterRetry(t *testing.T) {
	r := newResumable(t, true, true)
	r.prime(t, Link{Delay: 10 * time.Millisecond})
	p := NewPair(t, r.cli, r.srv, Link{Delay: 10 * time.Millisecond})
	require.NoError(t, p.Cli.SendUpdate(p.Now, p.Wall(p.Cli), []byte("first")))
	for {
		d, ok := p.Take(p.Cli)
		if !ok {
			break
		}
		_ = d // the first flight, dropped as a Retrying server does
	}
	require.Equal(t, int64(1), p.Cli.Stats(p.Now).EarlyUpdatesSent)
	retry := AppendRetry(nil, pairConnID, p.Wall(p.Srv), []byte("token"))
	require.True(t, p.Inject(p.Cli, retry))
	var early int
	for {
		d, ok := p.Take(p.Cli)
		if !ok {
			break
		}
		if h, _, _ := wire.ParseHeader(d); h.Type == wire.TypeUpdate {
			require.Equal(t, wire.EpochEarly, h.Epoch)
			early++
		}
	}
	require.Equal(t, 1, early, "the early update again, at once")
}

// No stream data goes in 0-RTT: bytes written before the handshake wait
// for it. And a server drops a Data frame under the early keys (here
// sealed with the client's real early keys) rather than deliver stream
// bytes a replay could repeat.
func TestZeroRTTNoStreamData(t *testing.T) {
	r := newResumable(t, true, true)
	r.prime(t, Link{Delay: 10 * time.Millisecond})
	p := NewPair(t, r.cli, r.srv, Link{Delay: 10 * time.Millisecond})
	p.Record = true
	_, err := p.Cli.Write([]byte("stream bytes"))
	require.NoError(t, err)
	require.True(t, p.Cli.EarlyReady())
	keys := p.Cli.sec.early.keys

	// A Data packet under epoch 4, as a client that put stream bytes in
	// 0-RTT would send, arriving right after the first flight.
	var first [][]byte
	for {
		d, ok := p.Take(p.Cli)
		if !ok {
			break
		}
		first = append(first, bytes.Clone(d))
	}
	dg := wire.AppendHeader(nil, wire.Header{Type: wire.TypeData, Flags: wire.FlagProtected, Epoch: wire.EpochEarly, ConnID: pairConnID, PN: 40, Timestamp: p.Wall(p.Cli)})
	dg = wire.AppendData(dg, &wire.Data{Offset: 0, Payload: []byte("early bytes!")})
	dg = keys.Seal(dg, wire.HeaderLen, 40, false)
	for _, d := range first {
		p.Inject(p.Srv, d)
	}
	require.NotNil(t, p.Srv.sec.early.keys, "the server accepted early data")
	p.Inject(p.Srv, dg)
	require.Equal(t, int64(1), p.Srv.Stats(p.Now).EarlyDropped)

	p.Open()
	p.Run(200 * time.Millisecond)
	got := make([]byte, 64)
	n, _ := p.Srv.Read(got)
	require.Equal(t, "stream bytes", string(got[:n]), "the stream has the real bytes, none of the early frame's")
	for _, d := range p.Sent {
		if h, _, _ := wire.ParseHeader(d.B); h.Type == wire.TypeData {
			require.NotEqual(t, wire.EpochEarly, h.Epoch, "stream data in 0-RTT")
		}
	}
}

// A replayed 0-RTT flight never puts an older update over a newer one.
// Into the same connection (after newer updates), the early packet is
// dropped: its keys are gone, its packet number was seen, and its update
// is older by packet number than the one held. Into a new connection
// (the original closed, or another server with the same ticket keys),
// crypto/tls accepts the early data again — it keeps no anti-replay
// state — but the replayer cannot finish the handshake, so the
// connection never opens and no application gets the update.
func TestZeroRTTReplayDeliversNothingOlder(t *testing.T) {
	r := newResumable(t, true, true)
	r.prime(t, Link{Delay: 10 * time.Millisecond})
	p := NewPair(t, r.cli, r.srv, Link{Delay: 10 * time.Millisecond})
	p.Record = true
	_, u := firstUpdateAt(t, p)
	require.True(t, u.Early)
	var flight [][]byte
	var early []byte
	for _, d := range p.Sent {
		h, _, _ := wire.ParseHeader(d.B)
		if d.From == p.Cli && d.At == 0 {
			flight = append(flight, d.B)
			if h.Epoch == wire.EpochEarly {
				early = d.B
			}
		}
	}
	require.NotNil(t, early)

	// Newer updates after the handshake.
	p.Run(100 * time.Millisecond)
	require.NoError(t, p.Cli.SendUpdate(p.Now, p.Wall(p.Cli), []byte("newer")))
	p.Run(100 * time.Millisecond)
	nu, ok := p.Srv.TakeUpdate()
	require.True(t, ok)
	require.Equal(t, "newer", string(nu.Payload))

	// The same connection.
	before := p.Srv.Stats(p.Now)
	p.Inject(p.Srv, bytes.Clone(early))
	p.Run(50 * time.Millisecond)
	_, ok = p.Srv.TakeUpdate()
	require.False(t, ok, "a replayed early update delivered")
	after := p.Srv.Stats(p.Now)
	require.Equal(t, before.UpdatesReceived, after.UpdatesReceived)
	require.Equal(t, before.EarlyDropped+before.Replayed+1, after.EarlyDropped+after.Replayed)

	// A new connection: a fresh server session given the captured flight.
	srv, err := New(r.srv, pairConnID, false, p.Now)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Abort(ErrClosed) })
	now, wall := p.Now, p.Wall(p.Srv)
	for _, d := range flight {
		srv.Handle(now, wall, bytes.Clone(d))
	}
	require.NotNil(t, srv.sec.early.keys, "crypto/tls accepts the replayed early data")
	buf := make([]byte, 0, 2048)
	opened := false
	for range 50 { // the replayer gets the server's flight 2 and can do nothing with it
		for {
			if _, _, ok := srv.Poll(now, wall, buf); !ok {
				break
			}
		}
		now, wall = now.Add(100*time.Millisecond), wall+100_000
		if t := srv.NextTimeout(now); t != 0 && !now.Before(t) {
			srv.Timeout(now)
		}
		opened = opened || srv.state == stateOpen
	}
	require.False(t, opened, "a replayed flight opened a connection")
	require.False(t, srv.AddressValidated(), "a replayed 0-RTT packet validated the address")
}

// FuzzEarlyHandshake is FuzzHandshake for a server that accepts 0-RTT:
// every run is a new server session given a resuming client's recorded
// first flight (its Initials and its early update, accepted again each
// time: crypto/tls keeps no anti-replay state), then arbitrary datagrams.
// It must not panic, must never open (no forged input completes the
// handshake) and never take the address as validated.
func FuzzEarlyHandshake(f *testing.F) {
	srv, flight, rest := earlyFuzzSetup(f)
	f.Add(rest)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := New(srv, pairConnID, false, 0)
		require.NoError(t, err)
		defer s.Abort(ErrClosed)
		for _, d := range flight {
			s.Handle(0, 0, bytes.Clone(d))
		}
		require.NotNil(t, s.sec.early.keys, "the recorded early data is accepted")
		now := clock.Mono(0)
		buf := make([]byte, 0, 1500)
		for len(in) >= 2 {
			n := min(int(binary.BigEndian.Uint16(in)), len(in)-2)
			dg := bytes.Clone(in[2 : 2+n])
			in = in[2+n:]
			now = now.Add(time.Millisecond)
			wall := int64(now) / 1000
			s.Handle(now, wall, dg)
			if d := s.NextTimeout(now); d != 0 && !now.Before(d) {
				s.Timeout(now)
			}
			for range 64 {
				if _, _, ok := s.Poll(now, wall, buf); !ok {
					break
				}
			}
			require.NotEqual(t, stateOpen, s.state, "a server opened on forged input")
			require.False(t, s.validated, "forged or replayed input validated the address")
		}
	})
}

// earlyFuzzSetup records a 0-RTT handshake: the server config (whose
// ticket keys the flight's ticket needs), the client's first flight, and
// the rest of what the client sent, framed as a FuzzEarlyHandshake input.
func earlyFuzzSetup(tb testing.TB) (srv Config, flight [][]byte, rest []byte) {
	r := newResumable(tb, true, true)
	r.prime(tb, Link{Delay: 10 * time.Millisecond})
	p := NewPair(tb, r.cli, r.srv, Link{Delay: 10 * time.Millisecond})
	p.Record = true
	require.NoError(tb, p.Cli.SendUpdate(0, p.Wall(p.Cli), []byte("first")))
	p.Open()
	p.Run(50 * time.Millisecond)
	for _, d := range p.Sent {
		switch {
		case d.From != p.Cli:
		case d.At == 0:
			flight = append(flight, d.B)
		default:
			rest = binary.BigEndian.AppendUint16(rest, uint16(len(d.B)))
			rest = append(rest, d.B...)
		}
	}
	return r.srv, flight, rest
}
