package session

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/seal"
	"github.com/fresh-udp/fresh/internal/wire"
)

// initialDatagram is a client's Initial for connID, carrying token.
func initialDatagram(connID uint64, token []byte) []byte {
	return wire.AppendInitial(wire.AppendHeader(nil, wire.Header{Type: wire.TypeInitial, ConnID: connID}), wire.Initial{Token: token})
}

// victimRun drives a server session that received one forged Initial, as
// the transport's Conn does, for 60 s of virtual time, while its
// application writes a stream and updates at once; nothing ever answers
// (the Initial's source address is a victim's). It returns the bytes sent
// and how often the driver was woken for a deadline that had already
// passed (a busy loop if it keeps happening).
func victimRun(t *testing.T, cfg Config) (sent int, spins int) {
	t.Helper()
	srv, err := New(cfg, 7, false, 0)
	require.NoError(t, err)
	require.True(t, srv.Handle(0, 0, initialDatagram(7, nil)))
	_, err = srv.Write(bytes.Repeat([]byte("x"), 1<<20))
	require.NoError(t, err)
	require.NoError(t, srv.SendUpdate(0, 0, []byte("status")))
	buf := make([]byte, 0, 1500)
	now := clock.Mono(0)
	for now < clock.Mono(60*time.Second) && spins < 1000 {
		for {
			d, _, ok := srv.Poll(now, int64(now)/1000, buf)
			if !ok {
				break
			}
			sent += len(d)
		}
		next := srv.NextTimeout(now)
		if next == 0 {
			break
		}
		if !now.Before(next) {
			spins++
			next = now.Add(time.Microsecond)
		}
		now = next
		srv.Timeout(now)
	}
	require.True(t, srv.Closed(), "the idle timeout ends the session")
	return sent, spins
}

// A server never sends an unvalidated address more than three times what
// it received from it (RFC 9000 §8.1), however much the application has
// to send, and the limit does not make its driver spin.
func TestAmplificationLimit(t *testing.T) {
	sent, spins := victimRun(t, Config{})
	require.LessOrEqual(t, sent, 3*wire.MinInitialSize)
	require.Positive(t, sent, "the Accept goes out")
	require.Less(t, spins, 10, "the driver was woken for deadlines it could not serve")
	t.Logf("limited: %d bytes sent for one %d-byte Initial", sent, wire.MinInitialSize)

	// Without the limit (an address validated by a Retry token) the same
	// forged Initial draws the stream's initial window and more.
	sent, _ = victimRun(t, Config{AddressValidated: true})
	require.Greater(t, sent, 10*wire.MinInitialSize)
	t.Logf("unlimited: %d bytes sent", sent)
}

// Every packet from the peer other than an Initial lifts the limit: it
// answered our Accept, so it receives at its address. MarkAddressValidated
// does the same.
func TestAmplificationLimitLifted(t *testing.T) {
	for _, how := range []string{"ping", "mark"} {
		t.Run(how, func(t *testing.T) {
			srv, err := New(Config{}, 7, false, 0)
			require.NoError(t, err)
			require.True(t, srv.Handle(0, 0, initialDatagram(7, nil)))
			require.False(t, srv.AddressValidated())
			_, err = srv.Write(make([]byte, 64<<10))
			require.NoError(t, err)
			buf := make([]byte, 0, 1500)
			poll := func(now clock.Mono) (n int) {
				for {
					d, _, ok := srv.Poll(now, 0, buf)
					if !ok {
						return n
					}
					n += len(d)
				}
			}
			require.LessOrEqual(t, poll(0), 3*wire.MinInitialSize)
			switch how {
			case "ping":
				ping := wire.AppendHeader(nil, wire.Header{Type: wire.TypePing, ConnID: 7})
				require.True(t, srv.Handle(clock.Mono(time.Millisecond), 0, ping))
			case "mark":
				srv.MarkAddressValidated()
			}
			require.True(t, srv.AddressValidated())
			require.Greater(t, poll(clock.Mono(time.Millisecond)), 3*wire.MinInitialSize, "the initial window goes out")
		})
	}
}

// A client takes the first Retry while handshaking and answers it at once
// with its Initial carrying the token; later Retries, and Retries after
// the handshake, change nothing (RFC 9000 §17.2.5.2).
func TestClientRetry(t *testing.T) {
	cli, err := New(Config{}, 9, true, 0)
	require.NoError(t, err)
	buf := make([]byte, 0, 1500)
	initialToken := func(now clock.Mono) ([]byte, bool) {
		d, _, ok := cli.Poll(now, 0, buf)
		if !ok {
			return nil, false
		}
		h, body, err := wire.ParseHeader(d)
		require.NoError(t, err)
		require.Equal(t, wire.TypeInitial, h.Type)
		var in wire.Initial
		require.NoError(t, wire.ParseInitial(body, len(d), &in))
		return bytes.Clone(in.Token), true
	}
	retry := func(connID uint64, token string) []byte { return AppendRetry(nil, connID, 0, []byte(token)) }

	tok, ok := initialToken(0)
	require.True(t, ok)
	require.Empty(t, tok, "the first Initial has no token")
	_, ok = initialToken(clock.Mono(time.Millisecond))
	require.False(t, ok, "the retransmission waits for its backoff")

	require.False(t, cli.Handle(clock.Mono(2*time.Millisecond), 0, retry(10, "other")), "another connection's Retry")
	now := clock.Mono(3 * time.Millisecond)
	require.True(t, cli.Handle(now, 0, retry(9, "cookie")))
	tok, ok = initialToken(now)
	require.True(t, ok, "the Retry is answered at once")
	require.Equal(t, []byte("cookie"), tok)

	require.True(t, cli.Handle(now, 0, retry(9, "second")))
	_, ok = initialToken(now)
	require.False(t, ok, "a second Retry is ignored")
	tok, ok = initialToken(now.Add(time.Second))
	require.True(t, ok)
	require.Equal(t, []byte("cookie"), tok, "retransmissions keep the first token")

	accept := wire.AppendAccept(wire.AppendHeader(nil, wire.Header{Type: wire.TypeAccept, ConnID: 9}), &wire.Accept{})
	require.True(t, cli.Handle(now.Add(time.Second), 0, accept))
	require.True(t, cli.Opened())
	require.True(t, cli.Handle(now.Add(time.Second), 0, retry(9, "late")))
	require.Equal(t, []byte("cookie"), cli.token)
	require.Equal(t, int64(1), cli.Stats(now).Malformed, "only the other connection's Retry")
}

// A server ignores Retries (only clients take them); a Retry whose
// integrity tag fails (corrupted, or forged without it) is dropped and
// counted as unauthenticated, and a malformed one that carries a valid
// tag (a broken server's) as malformed; neither is taken, in either mode.
func TestRetryIgnoredOrMalformed(t *testing.T) {
	srv, err := New(Config{}, 7, false, 0)
	require.NoError(t, err)
	r := AppendRetry(nil, 7, 0, []byte("t"))
	require.True(t, srv.Handle(0, 0, r))
	require.Nil(t, srv.token)
	require.False(t, srv.AddressValidated(), "a Retry proves nothing about the client")

	for _, cfg := range []Config{{}, secure(t)} {
		cli, err := New(cfg, 7, true, 0)
		require.NoError(t, err)
		for bit := range 8 * len(r) {
			bad := bytes.Clone(r)
			bad[bit/8] ^= 1 << (bit % 8)
			cli.Handle(0, 0, bad) // a flip in the type byte may make it another frame
		}
		require.False(t, cli.retried, "no flipped bit leaves a Retry that is taken")
		st := cli.Stats(0)
		// Every flip past the version, type, flags and connection ID
		// (which make it no Retry of this connection) fails the tag.
		require.GreaterOrEqual(t, st.Unauthenticated, int64(8*(len(r)-12)-2), "the packet number's top bits make it malformed instead")
		untagged := wire.AppendRetry(wire.AppendHeader(nil, wire.Header{Type: wire.TypeRetry, ConnID: 7}), &wire.Retry{Token: []byte("t"), Tag: make([]byte, wire.RetryTagLen)})
		require.False(t, cli.Handle(0, 0, untagged), "a zero tag")
		require.Equal(t, st.Unauthenticated+1, cli.Stats(0).Unauthenticated)
		badBody := append(wire.AppendHeader(nil, wire.Header{Type: wire.TypeRetry, ConnID: 7}), 0, 9, 't')
		require.True(t, cli.Handle(0, 0, seal.AppendRetryTag(badBody)), "tagged, but its length disagrees")
		require.Equal(t, st.Malformed+1, cli.Stats(0).Malformed)
		require.False(t, cli.retried, "no bad Retry uses up the one a client takes")
		require.True(t, cli.Handle(0, 0, bytes.Clone(r)))
		require.True(t, cli.retried)
		cli.Abort(ErrClosed)
	}
}
