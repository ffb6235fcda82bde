package transport

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pair dials a listener on loopback and returns both ends.
func pair(t *testing.T, srvCfg, cliCfg Config) (*Listener, *Conn, *Conn) {
	t.Helper()
	l, err := Listen("127.0.0.1:0", testConfig(srvCfg))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, err := Dial(ctx, l.Addr().String(), testConfig(cliCfg))
	require.NoError(t, err)
	srv, err := l.Accept(ctx)
	require.NoError(t, err)
	return l, cli, srv
}

// requireTransfer writes data on from, half-closes it, and requires to to
// read exactly data and then io.EOF.
func requireTransfer(t *testing.T, from, to *Conn, data []byte) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		_, err := from.Write(data)
		if err == nil {
			err = from.CloseWrite()
		}
		errc <- err
	}()
	got, err := io.ReadAll(to)
	require.NoError(t, err)
	require.NoError(t, <-errc)
	require.Equal(t, sha256.Sum256(data), sha256.Sum256(got))
}

func randomBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, seed))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestStreamLoopback(t *testing.T) {
	l, cli, srv := pair(t, Config{}, Config{})
	defer l.Close()
	data := randomBytes(3<<20, 1)
	requireTransfer(t, cli, srv, data)
	require.NoError(t, cli.Close())
	require.NoError(t, srv.Close())
}

// Config.KeyUpdateInterval reaches the session: the client updates its
// keys every 200 packets, the server follows each time, and the stream
// arrives intact with nothing dropped as unauthenticated.
func TestKeyUpdateInterval(t *testing.T) {
	l, cli, srv := pair(t, Config{}, Config{KeyUpdateInterval: 200})
	defer l.Close()
	requireTransfer(t, cli, srv, randomBytes(2<<20, 2))
	cs, ss := cli.Stats(), srv.Stats()
	t.Logf("client: %d key updates, %d packets sent; server: %d key updates", cs.KeyUpdates, cs.PacketsSent, ss.KeyUpdates)
	require.Greater(t, cs.KeyUpdates, int64(1))
	require.Positive(t, ss.KeyUpdates)
	require.Zero(t, cs.Unauthenticated+ss.Unauthenticated)
	require.NoError(t, cli.Close())
	require.NoError(t, srv.Close())
}

func TestUpdatesLoopback(t *testing.T) {
	l, cli, srv := pair(t, Config{}, Config{})
	defer l.Close()
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var last time.Time
	for i := range 20 {
		require.NoError(t, cli.SendUpdate([]byte{byte(i)}))
		u, err := srv.ReadUpdate(ctx)
		require.NoError(t, err)
		require.True(t, u.Generated.After(last))
		last = u.Generated
		require.True(t, bytes.Equal(u.Payload, []byte{byte(i)}) || u.Payload[0] > byte(0))
	}
	st := cli.Stats()
	require.Greater(t, st.UpdatesSent, int64(0))
}
