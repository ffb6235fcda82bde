package main

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	"github.com/quic-go/quic-go"
)

// TLS alerts (RFC 8446 §6) a QUIC peer sends as CRYPTO_ERROR 0x100+alert
// (RFC 9001 §4.8): the server's reasons for refusing this client.
const (
	alertBadCertificate      = 42
	alertCertificateExpired  = 45
	alertCertificateUnknown  = 46
	alertUnknownCA           = 48
	alertCertificateRequired = 116
	alertNoALPN              = 120
)

// explain adds to a connection's error what to change on this command
// line, as the agent's errors do (cli.Credentials.ExplainDial): quic-go
// reports TLS failures as a bare CRYPTO_ERROR code, which says nothing
// about the flag at fault. It applies to any step of the upload, not only
// Dial: with TLS 1.3 the client's handshake completes before the server
// has checked the client's certificate, so the server's refusal arrives
// as the error of the first stream operation.
func explain(err error, o options) error {
	var (
		unknownCA x509.UnknownAuthorityError
		badName   x509.HostnameError
		invalid   x509.CertificateInvalidError
		te        *quic.TransportError
		idle      *quic.IdleTimeoutError
		hsTimeout *quic.HandshakeTimeoutError
		hint      string
	)
	switch {
	case errors.As(err, &unknownCA) && o.creds.CA == "":
		hint = "the server's certificate is not signed by a CA this host trusts: give -ca with the CA that signed it (certgen's ca.pem)"
	case errors.As(err, &unknownCA):
		hint = fmt.Sprintf("the server's certificate is not signed by -ca %s: give the CA that signed the server's -cert", o.creds.CA)
	case errors.As(err, &badName):
		hint = fmt.Sprintf("the server's certificate is not valid for %q (it is for %s): dial a name it is valid for (-c), give -server-name with one, or make its certificate for this one (certgen -hosts)",
			badName.Host, validFor(badName.Certificate))
	case errors.As(err, &invalid):
		hint = "the server's certificate is not valid (expired, or not made for a server): make it a new one (go run ./examples/certgen)"
	case errors.As(err, &te) && te.Remote && te.ErrorCode.IsCryptoError():
		hint = explainAlert(uint8(te.ErrorCode-quic.TransportErrorCode(0x100)), o)
	case errors.As(err, &idle), errors.As(err, &hsTimeout), errors.Is(err, context.DeadlineExceeded):
		hint = fmt.Sprintf("no answer from %s: is quic -s running there (its -listen address and port), and does a firewall let UDP to that port through?", o.connect)
	}
	if hint == "" {
		return err
	}
	return fmt.Errorf("%w\n  (%s)", err, hint)
}

// explainAlert is what the server's TLS alert means for this client's
// flags; "" for one no flag fixes.
func explainAlert(alert uint8, o options) string {
	switch alert {
	case alertCertificateRequired:
		return "the server requires a client certificate (mutual TLS: it was started with -ca): give -cert and -key (certgen's agent.pem and agent-key.pem)"
	case alertUnknownCA, alertBadCertificate, alertCertificateUnknown, alertCertificateExpired:
		if o.creds.Cert == "" {
			return "the server refused this client's certificate: give -cert and -key signed by the CA the server requires (its -ca)"
		}
		return fmt.Sprintf("the server refused -cert %s: it is not signed by the CA the server requires (its -ca), or it expired", o.creds.Cert)
	case alertNoALPN:
		return "the server is not this example's quic -s (it speaks another application protocol)"
	}
	return ""
}

// validFor lists the names and addresses a certificate is valid for.
func validFor(c *x509.Certificate) string {
	if c == nil {
		return "other names"
	}
	names := append([]string(nil), c.DNSNames...)
	for _, ip := range c.IPAddresses {
		names = append(names, ip.String())
	}
	if len(names) == 0 {
		return "no name"
	}
	return strings.Join(names, ", ")
}
