package session

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/seal"
	"github.com/fresh-udp/fresh/internal/wire"
)

// With TLS every datagram of the handshake is sealed: the client's
// Initials and the server's ServerHello under the Initial keys (epoch
// EpochInitial), the rest under the handshake and application keys. The
// ClientHello's server name, readable in version 2, is not on the wire.
func TestTLSFirstFlightsSealed(t *testing.T) {
	p := NewPair(t, secure(t), secure(t), Link{})
	p.Record = true
	p.Open()
	initial := map[wire.Type]int{}
	for _, d := range p.Sent {
		h, _, err := wire.ParseHeader(d.B)
		require.NoError(t, err)
		require.NotZero(t, h.Flags&wire.FlagProtected, "%v packet in the clear", h.Type)
		require.NotContains(t, string(d.B), "localhost", "the ClientHello's server name in the clear")
		if h.Epoch == wire.EpochInitial {
			initial[h.Type]++
		}
		if h.Type == wire.TypeInitial {
			require.Equal(t, wire.MinInitialSize, len(d.B), "an Initial is 1200 bytes with its tag")
		}
	}
	require.Positive(t, initial[wire.TypeInitial], "the ClientHello")
	require.Positive(t, initial[wire.TypeCrypto], "the ServerHello")
	require.Len(t, initial, 2)
	require.Nil(t, p.Cli.sec.initWrite, "a confirmed client lets the Initial keys go")
	require.Nil(t, p.Srv.sec.initRead, "a server lets them go once TLS is done")
}

// corruptHandshakes runs n handshakes through a path that flips one bit
// in 30 % of the datagrams each way, in bursts of 3 (the interop suite's
// handshakecorruption in virtual time), each moving a few bytes after it,
// and returns how many opened within limit of virtual time and the
// datagrams the ends dropped as unauthenticated or malformed.
func corruptHandshakes(t *testing.T, n int, limit time.Duration) (opened int, dropped int64) {
	for seed := range uint64(n) {
		p := NewPair(t, secure(t), secure(t), Link{Delay: 15 * time.Millisecond})
		rng := rand.New(rand.NewPCG(seed, 25))
		burst := 0
		p.Filter = func(_ *Session, d []byte) bool {
			if burst == 0 && rng.Float64() < 1.0/7 {
				burst = 3
			}
			if burst > 0 {
				burst--
				bit := rng.IntN(8 * len(d))
				d[bit/8] ^= 1 << (bit % 8)
			}
			return true
		}
		open := func() bool { return p.Cli.state == stateOpen && p.Srv.state == stateOpen }
		if p.DriveUntil(func() bool { return open() || p.Cli.Closed() || p.Srv.Closed() }, limit); !open() {
			t.Logf("seed %d: client %v, server %v", seed, p.Cli.Err(), p.Srv.Err())
			continue
		}
		p.Filter = nil
		_, err := p.Cli.Write([]byte("after a corrupted handshake"))
		require.NoError(t, err)
		p.Run(time.Second)
		got := make([]byte, 64)
		k, _ := p.Srv.Read(got)
		require.Equal(t, "after a corrupted handshake", string(got[:k]), "seed %d", seed)
		opened++
		for _, s := range []*Session{p.Cli, p.Srv} {
			st := s.Stats(p.Now)
			dropped += st.Unauthenticated + st.Malformed
		}
	}
	return opened, dropped
}

// A flipped bit anywhere in the handshake costs a retransmission, never
// the handshake: every corrupted datagram, the ServerHello's included,
// fails to open (or to parse) and is dropped. In version 2 the
// ServerHello travelled unsealed, and a corrupted one gave the client
// wrong handshake keys: the handshake hung until it timed out.
func TestTLSHandshakeSurvivesCorruption(t *testing.T) {
	const n = 30
	opened, dropped := corruptHandshakes(t, n, 60*time.Second)
	t.Logf("%d of %d handshakes opened; %d corrupted datagrams dropped", opened, n, dropped)
	require.Equal(t, n, opened, "handshakes through 30 % corruption")
	require.Positive(t, dropped)
}

// The Initial keys are anyone's who saw the connection ID, so they open
// only what they are for: a Crypto frame to a server, an Initial to a
// client, anything to an open connection, and a Close once the receiver
// has handshake keys are dropped and counted even when sealed under them
// correctly; the wire format refuses every other frame type under them.
func TestInitialKeysTakeNothingElse(t *testing.T) {
	p := NewPair(t, secure(t), secure(t), Link{Delay: 5 * time.Millisecond})
	forge := func(to *Session, typ wire.Type, body []byte, pn int64) []byte {
		k, err := seal.NewInitial(pairConnID, to == p.Srv)
		require.NoError(t, err)
		b := wire.AppendHeader(nil, wire.Header{Type: typ, Flags: wire.FlagProtected, Epoch: wire.EpochInitial, ConnID: pairConnID, PN: pn, Timestamp: p.Wall(to)})
		return k.Seal(append(b, body...), wire.HeaderLen, uint64(pn), true)
	}
	closeBody := wire.AppendClose(nil, &wire.Close{Code: closeProtocol, Reason: []byte("forged")})
	crypto := wire.AppendCrypto(nil, &wire.Crypto{Offset: 1 << 20, Data: []byte("x")})
	// Until the first datagram of the server arrives: the client has no
	// handshake keys, and an Initial-sealed Close is how a server that
	// failed early says so. After it, none is taken.
	require.True(t, p.DriveUntil(func() bool { return p.Cli.sec.hsRead != nil }, time.Second))
	before := p.Cli.Stats(p.Now).Unauthenticated
	require.False(t, p.Inject(p.Cli, forge(p.Cli, wire.TypeClose, closeBody, 1<<40)), "a Close after the client has handshake keys")
	require.False(t, p.Inject(p.Srv, forge(p.Srv, wire.TypeCrypto, crypto, 1<<40)), "a Crypto frame to a server")
	initial := wire.AppendSealedInitial(nil, wire.Initial{})
	require.False(t, p.Inject(p.Cli, forge(p.Cli, wire.TypeInitial, initial, 1<<40+1)), "an Initial to a client")
	require.Equal(t, before+2, p.Cli.Stats(p.Now).Unauthenticated)
	p.Open()
	require.False(t, p.Inject(p.Srv, forge(p.Srv, wire.TypeClose, closeBody, 1<<41)), "a Close to an open server")
	require.False(t, p.Inject(p.Cli, forge(p.Cli, wire.TypeClose, closeBody, 1<<41)), "a Close to an open client")
	_, _, err := wire.ParseHeader(forge(p.Srv, wire.TypeData, wire.AppendData(nil, &wire.Data{Payload: []byte("x")}), 1))
	require.ErrorIs(t, err, wire.ErrReserved, "no stream data under the Initial keys")
	_, err = p.Cli.Write([]byte("still open"))
	require.NoError(t, err)
	p.Run(time.Second)
	got := make([]byte, 64)
	n, _ := p.Srv.Read(got)
	require.Equal(t, "still open", string(got[:n]))
}

// A TLS server takes an unsealed Initial only from a client without TLS
// (no ClientHello: it fails the handshake saying so, its Close in the
// clear that client can read); an unsealed one that carries a ClientHello
// is no TLS client's of this version and is dropped.
func TestTLSServerTakesUnsealedInitialOnlyToRefuseIt(t *testing.T) {
	srv, err := New(secure(t), 9, false, 0)
	require.NoError(t, err)
	defer srv.Abort(ErrClosed)
	hello := wire.AppendInitial(wire.AppendHeader(nil, wire.Header{Type: wire.TypeInitial, ConnID: 9}), wire.Initial{Crypto: []byte("\x01\x00\x00\x05hello")})
	require.False(t, srv.Handle(0, 0, hello))
	require.Equal(t, int64(1), srv.Stats(0).Unauthenticated)
	require.False(t, srv.Closed())

	require.True(t, srv.Handle(0, 0, initialDatagram(9, nil)))
	d, _, ok := srv.Poll(0, 0, make([]byte, 0, 1500))
	require.True(t, ok)
	require.ErrorIs(t, srv.Err(), ErrHandshake)
	h, body, err := wire.ParseHeader(d)
	require.NoError(t, err)
	require.Equal(t, wire.TypeClose, h.Type)
	require.Zero(t, h.Flags&wire.FlagProtected, "a plaintext client can open nothing")
	var c wire.Close
	require.NoError(t, wire.ParseClose(body, &c))
	require.Equal(t, closeNoTLS, c.Code)

	// Once a sealed ClientHello came, an unsealed Initial is no plaintext
	// client's: dropped, and the handshake goes on.
	p := NewPair(t, secure(t), secure(t), Link{})
	d, ok = p.Take(p.Cli)
	require.True(t, ok)
	require.True(t, p.Inject(p.Srv, d))
	require.False(t, p.Inject(p.Srv, initialDatagram(pairConnID, nil)))
	require.False(t, p.Srv.Closed())
	require.Equal(t, int64(1), p.Srv.Stats(p.Now).Unauthenticated)
	p.Open()
}

// A client whose token the server refuses (RFC 9000 §8.1.3's
// INVALID_TOKEN) fails at once with ErrInvalidToken and the server's
// reason, in either mode, rather than resend the token until it times out
// (it takes one Retry per connection). A refusal not sealed for a TLS
// client, or after the client has handshake keys, is dropped.
func TestClientTokenRefused(t *testing.T) {
	for _, cfg := range []Config{{}, secure(t)} {
		cli, err := New(cfg, 9, true, 0)
		require.NoError(t, err)
		buf := make([]byte, 0, 1500)
		d, _, ok := cli.Poll(0, 0, buf)
		require.True(t, ok)
		initial, _, err := wire.ParseHeader(d)
		require.NoError(t, err)
		require.Equal(t, cfg.TLS != nil, initial.Flags&wire.FlagProtected != 0, "sealed with TLS")
		require.True(t, cli.Handle(clock.Mono(time.Millisecond), 0, AppendRetry(nil, 9, 0, []byte("token"))))
		d, _, ok = cli.Poll(clock.Mono(time.Millisecond), 0, buf)
		require.True(t, ok, "the Initial with the token")
		initial, _, err = wire.ParseHeader(d)
		require.NoError(t, err)

		if cfg.TLS != nil {
			clear := initial
			clear.Flags, clear.Epoch = 0, 0
			unsealed, err := AppendTokenRefusal(nil, &clear, 0, "forged in the clear")
			require.NoError(t, err)
			require.False(t, cli.Handle(clock.Mono(2*time.Millisecond), 0, unsealed))
			require.False(t, cli.Closed(), "a TLS client takes no unsealed Close")
		}
		refusal, err := AppendTokenRefusal(nil, &initial, 0, "token expired: issued 12.5s ago, valid 10s")
		require.NoError(t, err)
		require.True(t, cli.Handle(clock.Mono(3*time.Millisecond), 0, refusal))
		require.True(t, cli.Closed())
		require.ErrorIs(t, cli.Err(), ErrInvalidToken)
		require.ErrorIs(t, cli.Err(), ErrHandshake)
		require.ErrorContains(t, cli.Err(), "token expired: issued 12.5s ago, valid 10s")
		require.ErrorContains(t, cli.Err(), "dial again")
		cli.Abort(ErrClosed)
	}
}

// A client's handshake that ends at its idle timeout says why: nothing at
// all from the server, a Retry and then nothing (its Initials with the
// token lost, or the token refused by a server that does not say so), or
// silence in the middle of the handshake.
func TestHandshakeIdleTimeoutSaysWhy(t *testing.T) {
	idle := func(t *testing.T, cfg Config, after func(s *Session)) error {
		s, err := New(cfg, 9, true, 0)
		require.NoError(t, err)
		defer s.Abort(ErrClosed)
		_, _, ok := s.Poll(0, 0, make([]byte, 0, 1500))
		require.True(t, ok)
		after(s)
		end := clock.Mono(time.Millisecond).Add(s.cfg.IdleTimeout)
		s.Timeout(end)
		_, _, ok = s.Poll(end, 0, make([]byte, 0, 1500)) // the Close
		require.True(t, ok)
		require.True(t, s.Closed())
		require.ErrorIs(t, s.Err(), ErrHandshake)
		return s.Err()
	}
	err := idle(t, secure(t), func(*Session) {})
	require.ErrorContains(t, err, "no answer from the server in 30.001s: is it running at that address")
	require.ErrorContains(t, err, "(IdleTimeout 30s)")
	err = idle(t, secure(t), func(s *Session) {
		require.True(t, s.Handle(clock.Mono(time.Millisecond), 0, AppendRetry(nil, 9, 0, []byte("token"))))
	})
	require.ErrorContains(t, err, "answered with a Retry, then nothing for 30s: every Initial carrying its token was lost")
	err = idle(t, Config{}, func(s *Session) {
		accept := wire.AppendAccept(wire.AppendHeader(nil, wire.Header{Type: wire.TypeAccept, ConnID: 9}), &wire.Accept{})
		accept[1] = byte(wire.TypePing) // a packet from the server that opens nothing
		require.True(t, s.Handle(clock.Mono(time.Millisecond), 0, accept[:wire.HeaderLen]))
	})
	require.ErrorContains(t, err, "nothing from the server for 30s, in the middle of the handshake (1 datagrams from it before)")
}

// The Initial's AEAD tag does not make it larger than 1200 bytes: the
// padding leaves room for it, and a listener opens it (OpenInitial)
// without touching the datagram the session reads next.
func TestOpenInitialLeavesDatagram(t *testing.T) {
	cli, err := New(secure(t), 9, true, 0)
	require.NoError(t, err)
	defer cli.Abort(ErrClosed)
	d, _, ok := cli.Poll(0, 0, make([]byte, 0, 1500))
	require.True(t, ok)
	require.Len(t, d, wire.MinInitialSize)
	h, _, err := wire.ParseHeader(d)
	require.NoError(t, err)
	orig := bytes.Clone(d)
	body, err := OpenInitial(make([]byte, 0, 1500), &h, d)
	require.NoError(t, err)
	require.Equal(t, orig, d)
	var in wire.Initial
	require.NoError(t, wire.ParseInitial(body, len(d), &in))
	require.NotEmpty(t, in.Crypto, "the ClientHello")
	d[len(d)/2] ^= 1
	_, err = OpenInitial(nil, &h, d)
	require.ErrorIs(t, err, seal.ErrAuth)
}

// The token of a sealed Initial is readable without any key (a listener
// answers a token-less Initial with a Retry before it derives one) and
// authenticated all the same: a flipped bit in it fails the Initial.
func TestSealedInitialTokenReadableAndAuthenticated(t *testing.T) {
	cli, err := New(secure(t), 9, true, 0)
	require.NoError(t, err)
	defer cli.Abort(ErrClosed)
	buf := make([]byte, 0, 1500)
	_, _, ok := cli.Poll(0, 0, buf)
	require.True(t, ok)
	require.True(t, cli.Handle(clock.Mono(time.Millisecond), 0, AppendRetry(nil, 9, 0, []byte("the token"))))
	d, _, ok := cli.Poll(clock.Mono(time.Millisecond), 0, buf)
	require.True(t, ok)
	h, body, err := wire.ParseHeader(d)
	require.NoError(t, err)
	require.Equal(t, wire.EpochInitial, h.Epoch)
	tok, clear, err := wire.ParseInitialToken(body, len(d))
	require.NoError(t, err)
	require.Equal(t, "the token", string(tok), "in the clear")
	opened, err := OpenInitial(nil, &h, d)
	require.NoError(t, err)
	var in wire.Initial
	require.NoError(t, wire.ParseInitial(opened, len(d), &in))
	require.Equal(t, "the token", string(in.Token))
	require.NotEmpty(t, in.Crypto)
	require.NotContains(t, string(d[wire.HeaderLen+clear:]), string(in.Crypto[:32]), "the ClientHello is sealed")
	for i := range clear {
		bad := bytes.Clone(d)
		bad[wire.HeaderLen+i] ^= 0x10
		_, err := OpenInitial(nil, &h, bad)
		require.ErrorIs(t, err, seal.ErrAuth, "byte %d of the token's part flipped", i)
	}
}
