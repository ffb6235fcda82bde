package quichook_test

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fresh-udp/fresh/transport/devcert"
	"github.com/fresh-udp/fresh/transport/quichook"
)

const alpn = "fresh-quichook-test"

func tlsConfigs(t *testing.T) (srv, cli *tls.Config) {
	t.Helper()
	c, err := devcert.Loopback()
	require.NoError(t, err)
	c.NextProtos = []string{alpn}
	return c, c.Clone()
}

// endpoint is one quic-go Transport over a hook, or over a plain socket
// when hook is nil.
type endpoint struct {
	tr   *quic.Transport
	hook *quichook.PacketConn
	pc   net.PacketConn
}

func newEndpoint(t *testing.T, hooked bool, cfg quichook.Config) *endpoint {
	t.Helper()
	e := &endpoint{}
	if hooked {
		h, err := quichook.ListenPacket("127.0.0.1:0", cfg)
		require.NoError(t, err)
		e.hook, e.pc = h, h
	} else {
		uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		require.NoError(t, err)
		e.pc = uc
	}
	e.tr = &quic.Transport{Conn: e.pc}
	t.Cleanup(func() {
		e.tr.Close()
		e.pc.Close()
	})
	return e
}

func randomBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, seed+1))
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

// upload moves data from client to server over one stream and returns
// what the server read. to is where the client dials (the server, or a
// relay in front of it).
func upload(t *testing.T, cli, srv *endpoint, to net.Addr, data []byte, timeout time.Duration) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	st, ct := tlsConfigs(t)
	ln, err := srv.tr.Listen(st, &quic.Config{})
	require.NoError(t, err)
	defer ln.Close()
	if to == nil {
		to = srv.pc.LocalAddr()
	}
	type result struct {
		b   []byte
		err error
	}
	got := make(chan result, 1)
	go func() {
		conn, err := ln.Accept(ctx)
		if err != nil {
			got <- result{err: err}
			return
		}
		defer conn.CloseWithError(0, "")
		s, err := conn.AcceptStream(ctx)
		if err != nil {
			got <- result{err: err}
			return
		}
		b, err := io.ReadAll(s)
		got <- result{b, err}
	}()
	conn, err := cli.tr.Dial(ctx, to, ct, &quic.Config{})
	require.NoError(t, err)
	defer conn.CloseWithError(0, "")
	s, err := conn.OpenStreamSync(ctx)
	require.NoError(t, err)
	_, err = s.Write(data)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	r := <-got
	require.NoError(t, r.err)
	return r.b
}

func TestUpload20MB(t *testing.T) {
	leakCheck(t)
	data := randomBytes(20<<20, 1)
	for _, name := range []string{"owd", "cubic"} {
		t.Run(name, func(t *testing.T) {
			cfg := quichook.Config{CC: name}
			srv, cli := newEndpoint(t, true, cfg), newEndpoint(t, true, cfg)
			start := time.Now()
			got := upload(t, cli, srv, nil, data, 30*time.Second)
			el := time.Since(start)
			require.Equal(t, sha256.Sum256(data), sha256.Sum256(got), "byte-exact")
			cs, ss := cli.hook.Stats(), srv.hook.Stats()
			require.Len(t, cs.Peers, 1)
			p := cs.Peers[0]
			require.True(t, p.Hooked)
			require.Equal(t, name, p.CC)
			require.Greater(t, cs.ShimSent, int64(len(data)/1500), "the upload went through the shim")
			require.Greater(t, cs.FeedbackReceived, int64(0))
			require.Zero(t, cs.Malformed)
			require.Zero(t, ss.Malformed)
			t.Logf("%s: %.0f Mbit/s; client %+v", name, float64(len(data))*8/el.Seconds()/1e6, cs)
		})
	}
}

// readLoop reads from h in a goroutine, as quic-go's read loop would (the
// hook handles shim datagrams in its reads and drops the rest here),
// until h is closed; done closes when the goroutine has returned.
func readLoop(h *quichook.PacketConn) (done <-chan struct{}) {
	d := make(chan struct{})
	go func() {
		defer close(d)
		buf := make([]byte, 1<<16)
		for {
			if _, _, err := h.ReadFrom(buf); err != nil {
				return
			}
		}
	}()
	return d
}

// leakCheck fails t if goroutines started during it outlive its cleanups
// (registered first, so it runs after every other cleanup).
func leakCheck(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}
