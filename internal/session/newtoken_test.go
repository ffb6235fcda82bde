package session

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/internal/wire"
)

// The server's token for the next connection reaches the client's
// OnNewToken once the handshake completes, in one control packet: not in
// flight (a fade must not back the server's timer off over it), not
// acknowledged, not resent; a lost one is gone. The server lets it go.
func TestNewTokenSentOnceOutOfFlight(t *testing.T) {
	for _, drop := range []bool{false, true} {
		var got [][]byte
		cli, srv := secure(t), secure(t)
		cli.OnNewToken = func(tok []byte) { got = append(got, tok) }
		srv.NewToken = []byte("a token for next time")
		p := NewPair(t, cli, srv, Link{Delay: 10 * time.Millisecond})
		sent := 0
		p.Filter = func(from *Session, d []byte) bool {
			if from == p.Srv && wire.Type(d[1]) == wire.TypeNewToken {
				sent++
				return !drop
			}
			return true
		}
		p.Open()
		p.Run(2 * time.Second)
		require.Equal(t, 1, sent, "drop %v: once", drop)
		require.Nil(t, p.Srv.cfg.NewToken, "given: let go")
		require.Zero(t, p.Srv.tr.TotalInFlight(), "not in flight")
		if drop {
			require.Empty(t, got)
			continue
		}
		require.Equal(t, [][]byte{[]byte("a token for next time")}, got)

		// A client's Token goes in its first Initial.
		cli.Token = got[0]
		c := NewPair(t, cli, secure(t), Link{})
		require.Equal(t, got[0], c.Cli.token)
	}
}

// A server never takes a NewToken (RFC 9000 §19.7: PROTOCOL_VIOLATION);
// a client takes one only under the application keys.
func TestNewTokenOnlyToClientsUnderAppKeys(t *testing.T) {
	p := OpenTLSPair(t, Link{})
	body := wire.AppendNewToken(nil, &wire.NewToken{Token: []byte("x")})
	p.Srv.onNewToken(wire.Header{Type: wire.TypeNewToken, Flags: wire.FlagProtected, Epoch: wire.EpochApp0}, body)
	require.ErrorIs(t, p.Srv.err, ErrProtocol)

	q := OpenTLSPair(t, Link{})
	called := false
	q.Cli.cfg.OnNewToken = func([]byte) { called = true }
	before := q.Cli.st.Malformed
	q.Cli.onNewToken(wire.Header{Type: wire.TypeNewToken, Flags: wire.FlagProtected, Epoch: wire.EpochHandshake}, body)
	require.False(t, called)
	require.Equal(t, before+1, q.Cli.st.Malformed)
	require.NoError(t, q.Cli.err)
}
