package session

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/internal/wire"
)

// The server's token for the next connection reaches the client's
// OnNewToken once the handshake completes, and goes again when its first
// copy is lost; once acknowledged the server lets it go.
func TestNewTokenDeliveredAndResentWhenLost(t *testing.T) {
	var got [][]byte
	cli, srv := secure(t), secure(t)
	cli.OnNewToken = func(tok []byte) { got = append(got, tok) }
	srv.NewToken = []byte("a token for next time")
	p := NewPair(t, cli, srv, Link{Delay: 10 * time.Millisecond})
	dropped := 0
	p.Filter = func(from *Session, d []byte) bool {
		if from == p.Srv && wire.Type(d[1]) == wire.TypeNewToken && dropped == 0 {
			dropped++
			return false
		}
		return true
	}
	p.Open()
	require.True(t, p.DriveUntil(func() bool { return len(got) > 0 && p.Srv.nt.acked }, 10*time.Second))
	require.Equal(t, 1, dropped)
	require.Equal(t, [][]byte{[]byte("a token for next time")}, got)
	require.Nil(t, p.Srv.cfg.NewToken, "given: let go")

	// A client's Token goes in its first Initial.
	cli.Token = got[0]
	c := NewPair(t, cli, secure(t), Link{})
	require.Equal(t, got[0], c.Cli.token)
}

// A server never takes a NewToken (RFC 9000 §19.7: PROTOCOL_VIOLATION);
// a client takes one only under the application keys.
func TestNewTokenOnlyToClientsUnderAppKeys(t *testing.T) {
	p := OpenTLSPair(t, Link{})
	body := wire.AppendNewToken(nil, &wire.NewToken{Token: []byte("x")})
	p.Srv.onNewToken(p.Now, 0, wire.Header{Type: wire.TypeNewToken, Flags: wire.FlagProtected, Epoch: wire.EpochApp0}, body)
	require.ErrorIs(t, p.Srv.err, ErrProtocol)

	q := OpenTLSPair(t, Link{})
	called := false
	q.Cli.cfg.OnNewToken = func([]byte) { called = true }
	before := q.Cli.st.Malformed
	q.Cli.onNewToken(q.Now, 0, wire.Header{Type: wire.TypeNewToken, Flags: wire.FlagProtected, Epoch: wire.EpochHandshake}, body)
	require.False(t, called)
	require.Equal(t, before+1, q.Cli.st.Malformed)
	require.NoError(t, q.Cli.err)
}
