package session

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/wire"
)

var resetKey = [ResetKeyLen]byte{0: 0x5e, 1: 0xc7, 31: 0x01}

// resetPair opens a TLS pair whose server gives the client the token of
// its connection under key, as a Listener does.
func resetPair(t *testing.T, key *[ResetKeyLen]byte) *Pair {
	t.Helper()
	tok := ResetToken(key, pairConnID)
	srv := secure(t)
	srv.StatelessResetToken = &tok
	p := NewPair(t, secure(t), srv, Link{Delay: 10 * time.Millisecond})
	p.Open()
	return p
}

// lostTrigger is the client's next datagram after a Write, taken off the
// link as if it reached a server that lost the connection.
func lostTrigger(t *testing.T, p *Pair) []byte {
	t.Helper()
	_, err := p.Cli.Write([]byte("reading 42"))
	require.NoError(t, err)
	d, ok := p.Take(p.Cli)
	require.True(t, ok, "the client sends its data")
	return bytes.Clone(d)
}

// answer is what a Resetter with key says to trigger.
func answer(t *testing.T, key *[ResetKeyLen]byte, trigger []byte) ([]byte, ResetVerdict) {
	t.Helper()
	h, _, err := wire.ParseHeader(trigger)
	require.NoError(t, err)
	return NewResetter(key, IssuedIDs{}, DefaultResetRate, DefaultResetBurst, 0).Answer(nil, h, trigger, 0)
}

// The server's token reaches the client in the handshake, and a reset
// that carries it closes the client's connection at once: every call
// returns ErrStatelessReset and nothing more is sent (not even a Close:
// the server has nothing to read it with).
func TestStatelessResetMatchingTokenCloses(t *testing.T) {
	p := resetPair(t, &resetKey)
	require.True(t, p.Cli.rst.hasToken, "the token came in the server's transport parameters")
	require.Equal(t, ResetToken(&resetKey, pairConnID), p.Cli.rst.token)

	trigger := lostTrigger(t, p)
	reset, v := answer(t, &resetKey, trigger)
	require.Equal(t, ResetSent, v)
	require.Less(t, len(reset), len(trigger), "smaller than its trigger (RFC 9000 §10.3)")
	require.True(t, p.Inject(p.Cli, reset))

	require.True(t, p.Cli.Closed())
	require.ErrorIs(t, p.Cli.Err(), ErrStatelessReset)
	_, err := p.Cli.Write([]byte("more"))
	require.ErrorIs(t, err, ErrStatelessReset)
	_, err = p.Cli.Read(make([]byte, 10))
	require.ErrorIs(t, err, ErrStatelessReset)
	require.ErrorIs(t, p.Cli.UpdateErr(), ErrStatelessReset)
	require.ErrorIs(t, p.Cli.SendUpdate(p.Now, p.Wall(p.Cli), []byte("u")), ErrStatelessReset)
	_, sent := p.Take(p.Cli)
	require.False(t, sent, "nothing is sent after a reset")
	require.Zero(t, p.Cli.NextTimeout(p.Now))
}

// A reset with any other token — another server's key, one bit flipped,
// a token for another connection ID — is counted and ignored: the
// connection goes on as if it had not come.
func TestStatelessResetWrongTokenIgnored(t *testing.T) {
	p := resetPair(t, &resetKey)
	trigger := lostTrigger(t, p)
	good, _ := answer(t, &resetKey, trigger)

	otherKey := resetKey
	otherKey[5] ^= 1
	other, _ := answer(t, &otherKey, trigger)
	flipped := bytes.Clone(good)
	flipped[len(flipped)-1] ^= 0x80
	otherConn := wire.AppendHeader(nil, wire.Header{Type: wire.TypeStatelessReset, ConnID: pairConnID})
	tok := ResetToken(&resetKey, pairConnID+1)
	otherConn = wire.AppendStatelessReset(otherConn, &wire.StatelessReset{Token: tok})

	for i, bad := range [][]byte{other, flipped, otherConn} {
		require.False(t, p.Inject(p.Cli, bad), "reset %d", i)
		require.False(t, p.Cli.Closed(), "reset %d", i)
	}
	require.EqualValues(t, 3, p.Cli.st.StatelessResetsIgnored)
	// A truncated one is malformed, not a reset.
	require.False(t, p.Inject(p.Cli, good[:len(good)-1]))
	require.False(t, p.Cli.Closed())

	// The connection still works: the data (taken off the link above) is
	// retransmitted and read.
	got := make([]byte, 64)
	var n int
	require.True(t, p.DriveUntil(func() bool {
		n, _ = p.Srv.Read(got)
		return n > 0
	}, 5*time.Second))
	require.Equal(t, "reading 42", string(got[:n]))
}

// No token, no reset: a client whose server gave none (a plaintext pair,
// or a server without a token), and a server (clients give no tokens),
// ignore every reset.
func TestStatelessResetWithoutToken(t *testing.T) {
	reset := func(token [wire.StatelessResetTokenLen]byte) []byte {
		b := wire.AppendHeader(nil, wire.Header{Type: wire.TypeStatelessReset, ConnID: pairConnID})
		return wire.AppendStatelessReset(b, &wire.StatelessReset{Token: token})
	}
	tok := ResetToken(&resetKey, pairConnID)

	plain := OpenPair(t, Config{}, Link{})
	require.False(t, plain.Inject(plain.Cli, reset(tok)))
	require.False(t, plain.Inject(plain.Cli, reset([16]byte{})))
	require.False(t, plain.Cli.Closed(), "plaintext: no token was given, so no reset can be valid")

	noToken := OpenTLSPair(t, Link{})
	require.False(t, noToken.Cli.rst.hasToken)
	require.False(t, noToken.Inject(noToken.Cli, reset(tok)))
	require.False(t, noToken.Inject(noToken.Cli, reset([16]byte{})))
	require.False(t, noToken.Cli.Closed())

	p := resetPair(t, &resetKey)
	require.False(t, p.Inject(p.Srv, reset(tok)), "a server holds no token of its client")
	require.False(t, p.Srv.Closed())
	require.EqualValues(t, 1, p.Srv.st.StatelessResetsIgnored)
}

// A Resetter answers only what it may: a reset is always smaller than the
// datagram that drew it, none answers one shorter than MinResetTrigger
// (a protected PING is padded to it), and none ever answers an Initial,
// a Retry, a Close or a StatelessReset, so two endpoints that both lost
// state cannot reset each other in a loop (RFC 9000 §10.3.3).
func TestStatelessResetOnlyAnswersLargerDatagrams(t *testing.T) {
	p := NewPair(t, secure(t), secure(t), Link{Delay: 5 * time.Millisecond})
	p.Record = true
	p.Open()
	_, err := p.Cli.Write(bytes.Repeat([]byte("x"), 20_000))
	require.NoError(t, err)
	for range 50 {
		require.NoError(t, p.Cli.SendUpdate(p.Now, p.Wall(p.Cli), []byte(`{"t":1}`)))
		p.Run(20 * time.Millisecond)
	}
	p.Run(25 * time.Second) // keep-alive PINGs
	p.Cli.Close()
	p.Run(time.Second)

	r := NewResetter(&resetKey, IssuedIDs{}, 1e9, 1<<20, 0)
	check := func(d []byte) (ResetVerdict, int) {
		h, _, err := wire.ParseHeader(d)
		require.NoError(t, err)
		out, v := r.Answer(nil, h, d, p.Now)
		if v == ResetSent {
			require.Less(t, len(out), len(d))
			require.Len(t, out, wire.StatelessResetLen)
			rh, body, err := wire.ParseHeader(out)
			require.NoError(t, err)
			require.Equal(t, h.ConnID, rh.ConnID, "the reset names the trigger's connection")
			var sr wire.StatelessReset
			require.NoError(t, wire.ParseStatelessReset(body, &sr))
			require.Equal(t, ResetToken(&resetKey, h.ConnID), sr.Token)
		}
		return v, len(out)
	}
	types := map[wire.Type]int{}
	short := 0
	for _, d := range p.Sent {
		v, _ := check(d.B)
		typ := wire.Type(d.B[1])
		types[typ]++
		switch {
		case typ == wire.TypeInitial, typ == wire.TypeRetry, typ == wire.TypeClose:
			require.Equal(t, ResetNotEligible, v, "%v", typ)
		case len(d.B) < wire.MinResetTrigger:
			if d.From == p.Cli {
				short++ // only a server gives tokens: only a client's datagrams need to draw resets
			}
			require.Equal(t, ResetNotEligible, v, "%v of %d bytes", typ, len(d.B))
		default:
			require.Equal(t, ResetSent, v, "%v of %d bytes", typ, len(d.B))
		}
	}
	require.Positive(t, types[wire.TypeInitial])
	require.Positive(t, types[wire.TypeClose])
	require.Zero(t, short, "every client datagram a reset may answer is long enough to draw one (PINGs are padded)")
	require.Positive(t, types[wire.TypePing])

	// Exactly at the edge, and a reset in answer to a reset.
	base := wire.AppendHeader(nil, wire.Header{Type: wire.TypeData, ConnID: 9})
	v, _ := check(append(bytes.Clone(base), make([]byte, wire.MinResetTrigger-wire.HeaderLen)...))
	require.Equal(t, ResetSent, v, "MinResetTrigger bytes draw one")
	v, _ = check(append(bytes.Clone(base), make([]byte, wire.MinResetTrigger-wire.HeaderLen-1)...))
	require.Equal(t, ResetNotEligible, v, "one byte fewer draws none")
	reset := wire.AppendStatelessReset(wire.AppendHeader(nil, wire.Header{Type: wire.TypeStatelessReset, ConnID: 9}), &wire.StatelessReset{})
	v, _ = check(append(reset, make([]byte, 100)...)) // however long
	require.Equal(t, ResetNotEligible, v)
	retry := wire.AppendRetry(wire.AppendHeader(nil, wire.Header{Type: wire.TypeRetry, ConnID: 9}), &wire.Retry{Token: make([]byte, 100)})
	v, _ = check(retry)
	require.Equal(t, ResetNotEligible, v)
}

// The Resetter's rate: a burst at once, then the rate; a rate of 0 never
// resets.
func TestStatelessResetRateLimit(t *testing.T) {
	trigger := wire.AppendHeader(nil, wire.Header{Type: wire.TypeData, ConnID: 3})
	trigger = append(trigger, make([]byte, 100)...)
	h, _, err := wire.ParseHeader(trigger)
	require.NoError(t, err)
	r := NewResetter(&resetKey, IssuedIDs{}, 100, 10, 0)
	count := func(now time.Duration, n int) (sent, limited int) {
		for range n {
			switch _, v := r.Answer(nil, h, trigger, clock.Mono(now)); v {
			case ResetSent:
				sent++
			case ResetRateLimited:
				limited++
			}
		}
		return
	}
	sent, limited := count(0, 50)
	require.Equal(t, 10, sent, "the burst")
	require.Equal(t, 40, limited)
	sent, _ = count(10*time.Millisecond, 50)
	require.Equal(t, 1, sent, "100/s: one per 10 ms")
	sent, _ = count(20*time.Millisecond+500*time.Microsecond, 50)
	require.Equal(t, 1, sent)
	sent, _ = count(time.Hour, 50)
	require.Equal(t, 10, sent, "the bucket holds no more than the burst")

	never := NewResetter(&resetKey, IssuedIDs{}, 0, 10, 0)
	_, v := never.Answer(nil, h, trigger, 0)
	require.Equal(t, ResetRateLimited, v)
	_, v = never.Answer(nil, h, trigger, clock.Mono(time.Hour))
	require.Equal(t, ResetRateLimited, v)
}

// Answering allocates nothing but the caller's buffer: a flood of
// datagrams for unknown connections costs no garbage.
func TestStatelessResetAnswerDoesNotAllocate(t *testing.T) {
	trigger := append(wire.AppendHeader(nil, wire.Header{Type: wire.TypeUpdate, ConnID: 3}), make([]byte, 60)...)
	h, _, _ := wire.ParseHeader(trigger)
	r := NewResetter(&resetKey, IssuedIDs{}, 1e12, 1<<30, 0)
	out := make([]byte, 0, wire.StatelessResetLen)
	require.Zero(t, testing.AllocsPerRun(100, func() { out, _ = r.Answer(out[:0], h, trigger, 0) }))
	require.Equal(t, ResetToken(&resetKey, 3), r.Token(3))
}

// A Resetter answers only for the connection IDs its endpoint issues:
// another server's ID (here: the same first octet, another server ID
// byte) draws no reset, however often and whatever the rate left — the
// token of a connection that server may hold is never given away (RFC
// 9000 §21.11) —, while its own IDs draw the token as before.
func TestStatelessResetOnlyForIssuedIDs(t *testing.T) {
	// The QUIC-LB plaintext layout's first octet (configuration 0,
	// length 8) and a one-byte server ID.
	issued := IssuedIDs{Prefix: 0x07_01 << 48, Len: 2}
	r := NewResetter(&resetKey, issued, 100, 10, 0)
	trigger := func(id uint64) (wire.Header, []byte) {
		b := append(wire.AppendHeader(nil, wire.Header{Type: wire.TypeData, ConnID: id}), make([]byte, 60)...)
		h, _, err := wire.ParseHeader(b)
		require.NoError(t, err)
		return h, b
	}
	for _, id := range []uint64{0x07_02_0000_0000_0001, 0x07_00_ffff_ffff_ffff, 0xe7_01_0000_0000_0001, 0x01_0000_0000_0001} {
		for range 100 {
			h, b := trigger(id)
			out, v := r.Answer(nil, h, b, 0)
			require.Equal(t, ResetNotIssued, v, "%#x is another server's", id)
			require.Empty(t, out)
		}
	}
	for _, id := range []uint64{0x07_01_0000_0000_0001, 0x07_01_ffff_ffff_ffff} {
		h, b := trigger(id)
		out, v := r.Answer(nil, h, b, 0)
		require.Equal(t, ResetSent, v, "%#x is ours: the refusals above took nothing of the burst", id)
		var sr wire.StatelessReset
		_, body, err := wire.ParseHeader(out)
		require.NoError(t, err)
		require.NoError(t, wire.ParseStatelessReset(body, &sr))
		require.Equal(t, ResetToken(&resetKey, id), sr.Token)
	}
	require.True(t, IssuedIDs{}.Has(0x1234), "the zero value: every ID")
	require.True(t, IssuedIDs{Prefix: 0xe7 << 56, Len: 1}.Has(0xe7_12_3456_789a_bcde))
	require.False(t, IssuedIDs{Prefix: 0xe7 << 56, Len: 1}.Has(0xe6_12_3456_789a_bcde))
	require.True(t, IssuedIDs{Prefix: 0x1234, Len: 8}.Has(0x1234))
}
