package transport

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"iter"
	"log/slog"
	"net/netip"
)

// HandshakeFailures counts a Listener's connections whose handshake did
// not complete, by the reason an operator acts on (ListenerStats). Each
// failed handshake is counted once, when its connection ends, under the
// first reason below that matches its error. All lists them with the
// reason tokens that the Listener's log lines and fresh-monitor's
// fresh_handshakes_failed_total{reason} carry.
type HandshakeFailures struct {
	// NoCertificate (no_certificate): the client presented no
	// certificate to a Listener that requires one (tls.Config.ClientAuth
	// RequireAnyClientCert or RequireAndVerifyClientCert; TLS 1.3's
	// certificate_required alert, RFC 8446 §4.4.2.4). A device without
	// its credentials, or a scanner; also a device whose certificate is
	// of another CA, as crypto/tls's client presents none of its
	// certificates that no CA of the server's request signed.
	NoCertificate int64
	// UnknownAuthority (unknown_authority): the client presented a
	// certificate that chains to no CA in tls.Config.ClientCAs: a device
	// of another fleet, or one whose CA the Listener was not given.
	UnknownAuthority int64
	// ExpiredCertificate (expired_certificate): the client's certificate
	// (or one of its chain) is outside its validity period: expired, or
	// not yet valid on this host's clock.
	ExpiredCertificate int64
	// BadCertificate (bad_certificate): any other certificate the
	// Listener refused: not for client authentication, a chain that fails
	// verification otherwise, or an error of the tls.Config's
	// VerifyPeerCertificate or VerifyConnection.
	BadCertificate int64
	// Refused (refused): Config.VerifyPeer refused the client: its
	// certificate is valid, but the application does not take what it
	// says (fresh-monitor: a device name outside its limits, see
	// monitor.VerifyPeerName); the log line's error says why.
	Refused int64
	// NoALPN (no_alpn): the client offers none of the Listener's
	// application protocols (tls.Config.NextProtos; "fresh/1" by
	// default, RFC 7301): a client of another protocol on this port.
	NoALPN int64
	// TLS (tls): the TLS handshake failed here for another reason: no
	// version, cipher suite or key-exchange group in common, a message
	// that does not decode.
	TLS int64
	// PeerAlert (peer_alert): the client ended the handshake with a TLS
	// alert (RFC 9001 §4.8): it refused this Listener's certificate
	// (unknown CA, wrong name, expired) or something else of ours; the
	// log line's error names the alert.
	PeerAlert int64
	// PeerClosed (peer_closed): the client closed the connection during
	// the handshake without an alert: it gave up (its own timeout, or
	// its application's Close).
	PeerClosed int64
	// Protocol (protocol): the client broke the handshake's protocol: a
	// plaintext Initial to a TLS Listener (or the other way round),
	// handshake messages too large, transport parameters of another
	// version, a protocol violation.
	Protocol int64
	// Timeout (timeout): the handshake did not complete within
	// Config.HandshakeTimeout (or the client fell silent for
	// IdleTimeout): a client that vanished, or a path that loses the
	// handshake's large datagrams. ListenerStats.HandshakeTimeouts is
	// the same count.
	Timeout int64
	// Closed (closed): the Listener or its Transport was closed (or its
	// socket failed) while the connection handshook: not the client's
	// doing, and logged at debug level only.
	Closed int64
	// Other (other): none of the above.
	Other int64
}

// hsReason is a reason of HandshakeFailures, an index into hsReasonNames
// and into listenerCounters.hsFailed.
type hsReason int

const (
	hsNoCertificate hsReason = iota
	hsUnknownAuthority
	hsExpiredCertificate
	hsBadCertificate
	hsRefused
	hsNoALPN
	hsTLS
	hsPeerAlert
	hsPeerClosed
	hsProtocol
	hsTimeout
	hsClosed
	hsOther
	numHSReasons
)

// hsReasonNames are the reason tokens, in HandshakeFailures' order.
var hsReasonNames = [numHSReasons]string{
	"no_certificate", "unknown_authority", "expired_certificate", "bad_certificate", "refused", "no_alpn", "tls",
	"peer_alert", "peer_closed", "protocol", "timeout", "closed", "other",
}

func (r hsReason) String() string { return hsReasonNames[r] }

// fields are f's counters in hsReason order.
func (f *HandshakeFailures) fields() [numHSReasons]*int64 {
	return [numHSReasons]*int64{
		&f.NoCertificate, &f.UnknownAuthority, &f.ExpiredCertificate, &f.BadCertificate, &f.Refused, &f.NoALPN, &f.TLS,
		&f.PeerAlert, &f.PeerClosed, &f.Protocol, &f.Timeout, &f.Closed, &f.Other,
	}
}

// All yields each reason's token and count, in a fixed order.
func (f HandshakeFailures) All() iter.Seq2[string, int64] {
	return func(yield func(string, int64) bool) {
		for r, p := range f.fields() {
			if !yield(hsReasonNames[r], *p) {
				return
			}
		}
	}
}

// Total is the number of failed handshakes, whatever the reason.
func (f HandshakeFailures) Total() int64 {
	var n int64
	for _, p := range f.fields() {
		n += *p
	}
	return n
}

// TLS alerts (RFC 8446 §6.2) that name what was wrong with the client's
// certificate; crypto/tls does not export them.
const (
	alertBadCertificate         tls.AlertError = 42
	alertUnsupportedCertificate tls.AlertError = 43
	alertCertificateRevoked     tls.AlertError = 44
	alertCertificateExpired     tls.AlertError = 45
	alertCertificateUnknown     tls.AlertError = 46
	alertUnknownCA              tls.AlertError = 48
	alertCertificateRequired    tls.AlertError = 116
	alertNoApplicationProtocol  tls.AlertError = 120
)

// handshakeReason classifies why a Listener's handshake failed, from the
// error its connection ended with. The session wraps the error of every
// local TLS failure with the alert crypto/tls sent for it (and the x509
// error, when a certificate was refused), and a peer's alert with
// ErrPeerClosed, so neither needs the message's text.
func handshakeReason(err error) hsReason {
	var (
		alert   tls.AlertError
		invalid x509.CertificateInvalidError
	)
	switch {
	case errors.Is(err, ErrClosed):
		return hsClosed
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, ErrIdleTimeout):
		return hsTimeout
	case errors.Is(err, ErrPeerClosed) && errors.As(err, &alert):
		return hsPeerAlert
	case errors.Is(err, ErrPeerClosed) && errors.Is(err, ErrProtocol):
		return hsProtocol
	case errors.Is(err, ErrPeerClosed):
		return hsPeerClosed
	case errors.Is(err, ErrPeerRefused): // before the alert it was sent with, bad_certificate
		return hsRefused
	case errors.As(err, new(x509.UnknownAuthorityError)):
		return hsUnknownAuthority
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return hsExpiredCertificate
	case errors.As(err, new(*tls.CertificateVerificationError)):
		return hsBadCertificate
	case errors.As(err, &alert):
		switch alert {
		case alertCertificateRequired:
			return hsNoCertificate
		case alertUnknownCA:
			return hsUnknownAuthority
		case alertCertificateExpired:
			return hsExpiredCertificate
		case alertBadCertificate, alertUnsupportedCertificate, alertCertificateRevoked, alertCertificateUnknown:
			return hsBadCertificate
		case alertNoApplicationProtocol:
			return hsNoALPN
		}
		return hsTLS
	case errors.Is(err, ErrHandshake), errors.Is(err, ErrProtocol), errors.Is(err, ErrOptimisticAck):
		return hsProtocol
	}
	return hsOther
}

// Rejected handshakes are logged at most loglimit.Burst lines per
// loglimit.Window: a flood of clients with bad credentials (each passed
// Retry, so each is a real address) must not turn into a flood of log
// lines. The counters count every one; the next line logged says how many
// were not (its "suppressed" attribute).

// handshakeFailed counts a connection of the Listener that ended before
// its handshake completed, under its reason, and logs it: one line per
// connection (forget runs once per connection), at warning level but for
// the Listener's own Close (debug).
func (l *Listener) handshakeFailed(from netip.AddrPort, err error) {
	r := handshakeReason(err)
	l.t.st.hsFailed[r].Add(1)
	level := slog.LevelWarn
	if r == hsClosed {
		level = slog.LevelDebug
	}
	log := l.cfg.Logger
	ctx := context.Background()
	if !log.Enabled(ctx, level) {
		return
	}
	ok, suppressed := l.hsLog.Allow(l.cfg.Clock.Now())
	if !ok {
		return
	}
	attrs := []slog.Attr{slog.String("remote", from.String()), slog.String("reason", r.String()), slog.Any("err", err)}
	if suppressed > 0 {
		attrs = append(attrs, slog.Int64("suppressed", suppressed))
	}
	log.LogAttrs(ctx, level, "fresh: handshake rejected", attrs...)
}
