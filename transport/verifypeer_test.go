package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/transport/devcert"
)

// Config.VerifyPeer refuses a client at the handshake: the client's Dial
// fails, Accept never sees it, the Listener counts it under "refused"
// (not bad_certificate, the alert it went with) and logs the hook's
// error once; a client it takes is accepted, and a resuming client is
// asked about again, with the certificate of its first handshake.
func TestVerifyPeerRefusesAtHandshake(t *testing.T) {
	fleet, err := devcert.NewCA("fleet CA")
	require.NoError(t, err)
	srvCert, err := fleet.Issue("localhost", "localhost", "127.0.0.1")
	require.NoError(t, err)
	good, err := fleet.Issue("device-1")
	require.NoError(t, err)
	bad, err := fleet.Issue("bad-device")
	require.NoError(t, err)

	var refuseAll atomic.Bool
	var mu sync.Mutex
	var asked []tls.ConnectionState
	errNotOurs := errors.New("device name not taken here")
	logs := &logRecords{}
	l := listen(t, Config{Logger: slog.New(logs), TLS: &tls.Config{
		Certificates: []tls.Certificate{srvCert},
		ClientAuth:   tls.RequireAndVerifyClientCert, ClientCAs: fleet.Pool(),
	}, VerifyPeer: func(cs tls.ConnectionState) error {
		mu.Lock()
		asked = append(asked, cs)
		mu.Unlock()
		if refuseAll.Load() || strings.HasPrefix(cs.PeerCertificates[0].Subject.CommonName, "bad") {
			return errNotOurs
		}
		return nil
	}})
	acceptAll(l)
	cache := &countingCache{ClientSessionCache: tls.NewLRUClientSessionCache(4)}
	dial := func(cert tls.Certificate) (*Conn, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return Dial(ctx, l.Addr().String(), Config{TLS: &tls.Config{
			RootCAs: fleet.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{cert}, ClientSessionCache: cache,
		}})
	}

	_, err = dial(bad)
	require.ErrorIs(t, err, ErrHandshake)
	require.ErrorContains(t, err, "bad certificate", "the client hears TLS's bad_certificate alert")
	require.Eventually(t, func() bool { return l.Stats().HandshakeFailures.Total() == 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, HandshakeFailures{Refused: 1}, l.Stats().HandshakeFailures)
	lines := logs.rejections()
	require.Len(t, lines, 1)
	require.Equal(t, "refused", lines[0]["reason"])
	require.Contains(t, lines[0]["err"], "peer refused (Config.VerifyPeer): device name not taken here")

	c, err := dial(good)
	require.NoError(t, err)
	_, err = c.Write([]byte("hello"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return l.Stats().HandshakesCompleted == 1 }, 5*time.Second, time.Millisecond)
	// The ticket follows the handshake: the next Dial resumes with it.
	require.Eventually(t, func() bool { return cache.tickets.Load() > 0 }, 5*time.Second, time.Millisecond)
	require.NoError(t, c.Close())

	refuseAll.Store(true)
	_, err = dial(good)
	require.ErrorIs(t, err, ErrHandshake, "a resumption is asked about too")
	require.Eventually(t, func() bool { return l.Stats().HandshakeFailures.Refused == 2 }, 5*time.Second, time.Millisecond, "%+v %v %v", l.Stats().HandshakeFailures, err, logs.rejections())
	mu.Lock()
	last := asked[len(asked)-1]
	mu.Unlock()
	require.True(t, last.DidResume, "the third handshake resumed")
	require.Equal(t, "device-1", last.PeerCertificates[0].Subject.CommonName, "with its first handshake's certificate")
	require.Equal(t, int64(2), l.Stats().HandshakeFailures.Total())
}

// On Dial, VerifyPeer refuses the server: Dial's error wraps
// ErrHandshake, ErrPeerRefused and the hook's error, and the server
// hears an alert. With Insecure there is nothing to verify: a
// configuration error.
func TestVerifyPeerOnDial(t *testing.T) {
	l := listen(t, Config{})
	errPinned := errors.New("not the server this device was set up for")
	cfg := testConfig(Config{VerifyPeer: func(tls.ConnectionState) error { return errPinned }})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := Dial(ctx, l.Addr().String(), cfg)
	require.ErrorIs(t, err, ErrHandshake)
	require.ErrorIs(t, err, ErrPeerRefused)
	require.ErrorIs(t, err, errPinned)
	require.Eventually(t, func() bool { return l.Stats().HandshakeFailures.PeerAlert == 1 }, 5*time.Second, time.Millisecond)

	_, err = Config{Insecure: true, VerifyPeer: func(tls.ConnectionState) error { return nil }}.withDefaults()
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.ErrorContains(t, err, "VerifyPeer")
}
