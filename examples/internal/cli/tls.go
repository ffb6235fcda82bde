package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/fresh-udp/fresh/transport"
)

// UsageError is a mistake in the command line (a flag missing or two that
// exclude each other); Main exits 2 for it, as for an unknown flag, rather
// than 1 for a run that failed.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef is a UsageError with a formatted message.
func Usagef(format string, a ...any) error {
	return &UsageError{fmt.Errorf(format, a...)}
}

// Credentials are the TLS flags the examples share. A listener (monitor,
// bulk -s) needs Cert and Key, its certificate; with CA it also requires
// every client to present a certificate CA signed (mutual TLS). A dialer
// (agent, bulk -c) verifies the server against CA (the system's roots
// without it) and the name dialled or ServerName, and presents Cert and
// Key when the listener asks for one. Insecure turns all of it off.
type Credentials struct {
	Cert, Key, CA, ServerName string
	Insecure                  bool
	// Peer is what a dialer's messages call the server ("monitor");
	// "server" if empty.
	Peer string

	dash      string // how the flags are spelt in messages: "-" or "--"
	generator string // the command that makes throwaway credentials
}

// Register adds -cert, -key, -ca, -insecure and, for a dialer, -server-name
// to fs (set Peer first to name the server in their help). dash spells them in error messages ("-" or "--"); role is
// "server", "client" or "both" (bulk is either).
func (c *Credentials) Register(fs *flag.FlagSet, role, dash string) {
	c.dash = dash
	c.generator = "go run ./examples/certgen -dir certs"
	server := c.Peer
	if server == "" {
		server = "server"
	}
	switch role {
	case "server":
		fs.StringVar(&c.Cert, "cert", "", "this server's certificate, PEM `file` (with -key)")
		fs.StringVar(&c.Key, "key", "", "the private key of -cert, PEM `file`")
		fs.StringVar(&c.CA, "ca", "", "require client certificates signed by this CA, PEM `file` (mutual TLS); without it any client may connect")
	case "client":
		fs.StringVar(&c.Cert, "cert", "", "this client's certificate, PEM `file`, for a "+server+" that requires one (mutual TLS; with -key)")
		fs.StringVar(&c.Key, "key", "", "the private key of -cert, PEM `file`")
		fs.StringVar(&c.CA, "ca", "", "verify the "+server+" against this CA, PEM `file` (default: the system's roots)")
	default:
		fs.StringVar(&c.Cert, "cert", "", "-s: this server's certificate; -c: this client's, for a server that requires one; PEM `file` (with --key)")
		fs.StringVar(&c.Key, "key", "", "the private key of --cert, PEM `file`")
		fs.StringVar(&c.CA, "ca", "", "-s: require client certificates signed by this CA (mutual TLS); -c: verify the server against it (default: the system's roots); PEM `file`")
	}
	if role != "server" {
		prefix := ""
		if role == "both" {
			prefix = "-c: "
		}
		fs.StringVar(&c.ServerName, "server-name", "", prefix+"the `name` the "+server+"'s certificate must be valid for (default: the host dialled)")
	}
	fs.BoolVar(&c.Insecure, "insecure", false, "UNSAFE: plaintext, no TLS: anyone on the path can read, forge and close connections; both ends must agree")
}

func (c *Credentials) flag(name string) string { return c.dash + name }

// check rejects flags that contradict each other.
func (c *Credentials) check() error {
	if c.Insecure {
		var set []string
		for _, f := range []struct{ name, v string }{{"cert", c.Cert}, {"key", c.Key}, {"ca", c.CA}, {"server-name", c.ServerName}} {
			if f.v != "" {
				set = append(set, c.flag(f.name))
			}
		}
		if len(set) > 0 {
			return Usagef("%s and %s exclude each other: plaintext uses no credentials", c.flag("insecure"), strings.Join(set, ", "))
		}
		return nil
	}
	switch {
	case c.Cert != "" && c.Key == "":
		return Usagef("%s %s needs %s: the file with its private key", c.flag("cert"), c.Cert, c.flag("key"))
	case c.Key != "" && c.Cert == "":
		return Usagef("%s %s needs %s: the file with the certificate it belongs to", c.flag("key"), c.Key, c.flag("cert"))
	}
	return nil
}

// ServerTLS is the listener's Config.TLS, or nil with Insecure. Without
// -cert and -key it is a usage error saying how to make them.
func (c *Credentials) ServerTLS() (*tls.Config, error) {
	if err := c.check(); err != nil || c.Insecure {
		return nil, err
	}
	if c.Cert == "" {
		return nil, Usagef("no TLS credentials: give %s FILE and %s FILE (this server's certificate and key, PEM), "+
			"and %s FILE to require client certificates; make throwaway ones with\n"+
			"    %s\n"+
			"(then %s certs/monitor.pem %s certs/monitor-key.pem %s certs/ca.pem), or run with %s (plaintext, unsafe)",
			c.flag("cert"), c.flag("key"), c.flag("ca"), c.generator, c.flag("cert"), c.flag("key"), c.flag("ca"), c.flag("insecure"))
	}
	cert, err := c.keyPair()
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}}
	if c.CA != "" {
		pool, err := c.pool()
		if err != nil {
			return nil, err
		}
		cfg.ClientAuth, cfg.ClientCAs = tls.RequireAndVerifyClientCert, pool
	}
	return cfg, nil
}

// ClientTLS is the dialer's Config.TLS, or nil with Insecure.
func (c *Credentials) ClientTLS() (*tls.Config, error) {
	if err := c.check(); err != nil || c.Insecure {
		return nil, err
	}
	cfg := &tls.Config{ServerName: c.ServerName}
	if c.Cert != "" {
		cert, err := c.keyPair()
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if c.CA != "" {
		pool, err := c.pool()
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// Config sets cfg's TLS (ServerTLS or ClientTLS by server) or Insecure.
func (c *Credentials) Config(cfg *transport.Config, server bool) error {
	var err error
	if server {
		cfg.TLS, err = c.ServerTLS()
	} else {
		cfg.TLS, err = c.ClientTLS()
	}
	cfg.Insecure = c.Insecure
	return err
}

// keyPair loads -cert and -key, each error naming the flag and the file.
func (c *Credentials) keyPair() (tls.Certificate, error) {
	certPEM, err := os.ReadFile(c.Cert)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: %w", c.flag("cert"), err)
	}
	keyPEM, err := os.ReadFile(c.Key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: %w", c.flag("key"), err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	switch {
	case err == nil:
	case strings.Contains(err.Error(), "does not match"):
		return tls.Certificate{}, fmt.Errorf("%s %s and %s %s do not belong together: the key is not the certificate's (%v)",
			c.flag("cert"), c.Cert, c.flag("key"), c.Key, err)
	case strings.Contains(err.Error(), "certificate input"):
		return tls.Certificate{}, fmt.Errorf("%s %s: not a PEM certificate (%v)", c.flag("cert"), c.Cert, err)
	case strings.Contains(err.Error(), "key input"), strings.Contains(err.Error(), "private key"):
		return tls.Certificate{}, fmt.Errorf("%s %s: not a PEM private key (%v)", c.flag("key"), c.Key, err)
	default:
		return tls.Certificate{}, fmt.Errorf("%s %s, %s %s: %w", c.flag("cert"), c.Cert, c.flag("key"), c.Key, err)
	}
	if now := time.Now(); now.After(cert.Leaf.NotAfter) {
		return tls.Certificate{}, fmt.Errorf("%s %s expired on %s", c.flag("cert"), c.Cert, cert.Leaf.NotAfter.Format(time.DateOnly))
	}
	return cert, nil
}

// pool loads -ca.
func (c *Credentials) pool() (*x509.CertPool, error) {
	b, err := os.ReadFile(c.CA)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.flag("ca"), err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s %s: no PEM certificate in it", c.flag("ca"), c.CA)
	}
	return pool, nil
}

// ExplainDial adds to a Dial error what to change on this side's command
// line, where the cause is a TLS one a flag fixes, or the address (no
// port, no such host, nobody listening or answering). An alert the peer sent
// arrives as text (the transport carries its description), so those are
// matched by it.
func (c *Credentials) ExplainDial(err error) error {
	var (
		unknownCA x509.UnknownAuthorityError
		badName   x509.HostnameError
		invalid   x509.CertificateInvalidError
		hint      string
		msg       = err.Error()
		server    = c.Peer
	)
	if server == "" {
		server = "server"
	}
	switch {
	case errors.As(err, &unknownCA) && c.CA == "":
		hint = fmt.Sprintf("the %s's certificate is not signed by a CA this host trusts: give %s with the CA that signed it (certgen's ca.pem)", server, c.flag("ca"))
	case errors.As(err, &unknownCA):
		hint = fmt.Sprintf("the %s's certificate is not signed by %s %s: give the CA that signed it", server, c.flag("ca"), c.CA)
	case errors.As(err, &badName):
		hint = fmt.Sprintf("the %s's certificate is not valid for %q: give %s with a name it is valid for, or make its certificate for this one (certgen -hosts)",
			server, badName.Host, c.flag("server-name"))
	case errors.As(err, &invalid):
		hint = fmt.Sprintf("the %s's certificate is not valid (expired, or not for a server): make it a new one", server)
	case strings.Contains(msg, "certificate required"):
		hint = fmt.Sprintf("the %s requires a client certificate (mutual TLS): give %s and %s", server, c.flag("cert"), c.flag("key"))
	case strings.Contains(msg, "peer sent TLS alert") && c.Cert != "" && strings.Contains(msg, "bad certificate"):
		// bad_certificate is also what a listener's own checks answer
		// (transport.Config.VerifyPeer): fresh-monitor's of the name.
		hint = fmt.Sprintf("the %s rejected %s %s: it is not signed by the CA the %s requires (its %s), or the %s refuses what it names "+
			"(fresh-monitor: a device name, the CommonName, of more than 64 characters or with control characters); the %s's log says which",
			server, c.flag("cert"), c.Cert, server, c.flag("ca"), server, server)
	case strings.Contains(msg, "peer sent TLS alert") && c.Cert != "" &&
		(strings.Contains(msg, "unknown certificate authority") || strings.Contains(msg, "expired")):
		hint = fmt.Sprintf("the %s rejected %s %s: it is not signed by the CA the %s requires (its %s)", server, c.flag("cert"), c.Cert, server, c.flag("ca"))
	case errors.Is(err, transport.ErrHandshake) && strings.Contains(msg, "Insecure"):
		hint = fmt.Sprintf("give %s on both ends, or on neither", c.flag("insecure"))
	default:
		if hint = explainAddr(err, server); hint == "" {
			return err
		}
	}
	return fmt.Errorf("%w\n  (%s)", err, hint)
}

// PeerName is the CommonName of the certificate the peer presented (a
// device's identity with mutual TLS), or "" if it presented none.
func PeerName(conn *transport.Conn) string {
	st, ok := conn.ConnectionState()
	if !ok || len(st.PeerCertificates) == 0 {
		return ""
	}
	return st.PeerCertificates[0].Subject.CommonName
}

// AwaitHandshake waits until an accepted connection's handshake has
// completed (its TLS state, with the peer's certificate, is known), the
// connection ended (a failed handshake: its error is returned) or ctx ended.
// Listener.Accept hands out only connections whose handshake completed,
// so for those it returns at once; it stays as the one place the examples
// check that before acting on the client's identity. With Insecure there
// is no TLS state to wait for.
func AwaitHandshake(ctx context.Context, conn *transport.Conn, insecure bool) error {
	if insecure {
		return nil
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, ok := conn.ConnectionState(); ok {
			return nil
		}
		select {
		case <-conn.Done():
			if _, ok := conn.ConnectionState(); ok {
				return nil
			}
			return conn.Err()
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
