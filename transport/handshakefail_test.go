package transport

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net/netip"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/loglimit"
	"github.com/fresh-udp/fresh/transport/devcert"
)

// logRecords is a slog.Handler that keeps every record, for tests that
// count log lines.
type logRecords struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecords) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logRecords) WithGroup(string) slog.Handler            { return h }
func (h *logRecords) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}

// rejections returns the "handshake rejected" records as attribute maps.
func (h *logRecords) rejections() []map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]string
	for _, r := range h.recs {
		if r.Message != "fresh: handshake rejected" {
			continue
		}
		m := map[string]string{"level": r.Level.String()}
		r.Attrs(func(a slog.Attr) bool {
			m[a.Key] = a.Value.String()
			return true
		})
		out = append(out, m)
	}
	return out
}

// expiredClientCert is a client certificate that expired an hour ago,
// signed by a CA of its own (returned for the Listener's ClientCAs):
// devcert issues only valid ones.
func expiredClientCert(t *testing.T) (tls.Certificate, *x509.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "expiry test CA"},
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(48 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "expired-device"},
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, ca
}

// A Listener with mutual TLS counts each rejected handshake once under
// its reason and logs one line for it (remote, reason, error); the good
// client's handshake counts as completed and logs nothing.
func TestHandshakeRejectionsCountedAndLogged(t *testing.T) {
	fleet, err := devcert.NewCA("fleet CA")
	require.NoError(t, err)
	other, err := devcert.NewCA("another fleet's CA")
	require.NoError(t, err)
	srvCert, err := fleet.Issue("localhost", "localhost", "127.0.0.1")
	require.NoError(t, err)
	good, err := fleet.Issue("device-1")
	require.NoError(t, err)
	foreign, err := other.Issue("device-2")
	require.NoError(t, err)
	expired, expiryCA := expiredClientCert(t)
	clientCAs := fleet.Pool()
	clientCAs.AddCert(expiryCA)

	logs := &logRecords{}
	l := listen(t, Config{Logger: slog.New(logs), TLS: &tls.Config{
		Certificates: []tls.Certificate{srvCert},
		ClientAuth:   tls.RequireAndVerifyClientCert, ClientCAs: clientCAs,
	}})
	dial := func(certs []tls.Certificate, alpn ...string) (*Conn, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		cfg := &tls.Config{RootCAs: fleet.Pool(), ServerName: "localhost", NextProtos: alpn}
		if len(certs) > 0 {
			// Presented whatever CAs the server asks for: crypto/tls
			// would send no certificate rather than one of another CA.
			cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &certs[0], nil }
		}
		return Dial(ctx, l.Addr().String(), Config{TLS: cfg})
	}

	rejected := []struct {
		reason string
		certs  []tls.Certificate
		alpn   []string
	}{
		{"no_certificate", nil, nil},
		{"unknown_authority", []tls.Certificate{foreign}, nil},
		{"expired_certificate", []tls.Certificate{expired}, nil},
		{"no_alpn", []tls.Certificate{good}, []string{"h3"}},
	}
	for i, r := range rejected {
		_, err := dial(r.certs, r.alpn...)
		require.ErrorIs(t, err, ErrHandshake, r.reason)
		// Counted when the connection ends, just after its CLOSE left
		// (the client may have read it first); waited for so that the
		// log lines come in this order.
		require.Eventually(t, func() bool { return l.Stats().HandshakeFailures.Total() == int64(i+1) }, 5*time.Second, time.Millisecond)
	}
	c, err := dial([]tls.Certificate{good})
	require.NoError(t, err)
	acc, err := l.Accept(context.Background())
	require.NoError(t, err)

	st := l.Stats()
	require.Equal(t, HandshakeFailures{NoCertificate: 1, UnknownAuthority: 1, ExpiredCertificate: 1, NoALPN: 1}, st.HandshakeFailures)
	require.Equal(t, int64(len(rejected)+1), st.HandshakesStarted)
	require.Equal(t, int64(1), st.HandshakesCompleted)
	require.Zero(t, st.HandshakeTimeouts)

	lines := logs.rejections()
	require.Len(t, lines, len(rejected), "one line per rejected handshake: %v", lines)
	for i, r := range rejected {
		line := lines[i]
		require.Equal(t, r.reason, line["reason"], "%v", line)
		require.Equal(t, "WARN", line["level"])
		require.True(t, netip.MustParseAddrPort(line["remote"]).Addr().IsLoopback(), "%v", line)
		require.Contains(t, line["err"], "handshake failed", "%v", line)
		require.NotContains(t, line, "suppressed")
	}
	require.Contains(t, lines[0]["err"], "didn't provide a certificate")
	require.Contains(t, lines[1]["err"], "unknown authority")
	require.Contains(t, lines[2]["err"], "expired")

	// The accepted connection's end is no handshake failure.
	require.NoError(t, c.Close())
	require.NoError(t, acc.Close())
	require.Eventually(t, func() bool { return l.Stats().Connections == 0 }, 5*time.Second, time.Millisecond)
	require.Equal(t, int64(len(rejected)), l.Stats().HandshakeFailures.Total())
	require.Len(t, logs.rejections(), len(rejected))
}

// handshakeReason reads the reason from the errors a session ends with
// (built here as the session wraps them).
func TestHandshakeReason(t *testing.T) {
	local := func(err error, alert tls.AlertError) error {
		return fmt.Errorf("%w: %w", ErrHandshake, fmt.Errorf("%w%.0w", err, alert)) // crypto/tls's quicError
	}
	verify := func(err error) error { return &tls.CertificateVerificationError{Err: err} }
	for _, tc := range []struct {
		err  error
		want hsReason
	}{
		{local(errors.New("tls: client didn't provide a certificate"), alertCertificateRequired), hsNoCertificate},
		{local(verify(x509.UnknownAuthorityError{}), alertUnknownCA), hsUnknownAuthority},
		{local(verify(x509.CertificateInvalidError{Reason: x509.Expired}), alertCertificateExpired), hsExpiredCertificate},
		{local(verify(x509.CertificateInvalidError{Reason: x509.IncompatibleUsage}), alertBadCertificate), hsBadCertificate},
		{local(errors.New("VerifyPeerCertificate: device revoked"), alertBadCertificate), hsBadCertificate},
		{local(errors.New("tls: client requested unsupported application protocols"), alertNoApplicationProtocol), hsNoALPN},
		{local(errors.New("tls: no cipher suite supported by both client and server"), 40), hsTLS},
		{fmt.Errorf("%w: %w: peer sent TLS alert %q%.0w", ErrPeerClosed, ErrHandshake, "tls: bad certificate", tls.AlertError(42)), hsPeerAlert},
		{ErrPeerClosed, hsPeerClosed},
		{local(fmt.Errorf("%w: %w", ErrPeerRefused, errors.New("device name too long")), alertBadCertificate), hsRefused},
		{fmt.Errorf("%w: %w", ErrPeerClosed, ErrProtocol), hsProtocol},
		{fmt.Errorf("%w: the client sent no TLS ClientHello", ErrHandshake), hsProtocol},
		{fmt.Errorf("%w: %w", ErrHandshake, context.DeadlineExceeded), hsTimeout},
		{ErrIdleTimeout, hsTimeout},
		{ErrClosed, hsClosed},
		{errors.New("something else"), hsOther},
	} {
		require.Equal(t, tc.want, handshakeReason(tc.err), "%v", tc.err)
	}
}

// Every field of HandshakeFailures is one reason, with a token of its own.
func TestHandshakeFailuresFields(t *testing.T) {
	var f HandshakeFailures
	require.Equal(t, int(numHSReasons), reflect.TypeFor[HandshakeFailures]().NumField())
	ptrs := f.fields()
	v := reflect.ValueOf(&f).Elem()
	for i := range v.NumField() {
		require.Same(t, v.Field(i).Addr().Interface(), ptrs[i], "fields() out of order at %s", v.Type().Field(i).Name)
		*ptrs[i] = int64(i + 1)
	}
	seen := map[string]bool{}
	var total int64
	for reason, n := range f.All() {
		require.False(t, seen[reason], reason)
		seen[reason] = true
		total += n
	}
	require.Len(t, seen, int(numHSReasons))
	require.Equal(t, total, f.Total())
}

// A flood of rejected handshakes logs loglimit.Burst lines a window; the
// first line after says how many it did not log. The counters count all.
func TestHandshakeFailureLogRateLimited(t *testing.T) {
	logs := &logRecords{}
	clk := &stepClock{}
	l := listen(t, Config{Logger: slog.New(logs), Clock: clk})
	from := netip.MustParseAddrPort("192.0.2.1:4433")
	err := fmt.Errorf("%w: %w", ErrHandshake, context.DeadlineExceeded)
	for range 3 * loglimit.Burst {
		l.handshakeFailed(from, err)
	}
	require.Len(t, logs.rejections(), loglimit.Burst)
	clk.advance(loglimit.Window)
	l.handshakeFailed(from, err)
	lines := logs.rejections()
	require.Len(t, lines, loglimit.Burst+1)
	require.Equal(t, fmt.Sprint(2*loglimit.Burst), lines[loglimit.Burst]["suppressed"])
	require.Equal(t, int64(3*loglimit.Burst+1), l.Stats().HandshakeFailures.Timeout)
	require.Equal(t, int64(3*loglimit.Burst+1), l.Stats().HandshakeTimeouts)
}

// stepClock is a clock.Clock that moves only when told.
type stepClock struct {
	mu  sync.Mutex
	now clock.Mono
}

func (c *stepClock) Now() clock.Mono {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) Wall() time.Time { return time.Unix(0, int64(c.Now())) }

func (c *stepClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
