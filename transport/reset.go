package transport

import (
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/netip"

	"github.com/fresh-udp/fresh"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/session"
	"github.com/fresh-udp/fresh/internal/wire"
)

// Stateless reset (RFC 9000 §10.3; the rules are internal/session's
// reset.go): a Transport with a Listener answers a datagram for a
// connection ID it does not hold with a StatelessReset, and gives every
// connection its Listener accepts the token that makes such a reset
// believable to the client. So a monitor that restarts on the same port
// with the same Transport.StatelessResetKey tells the devices of its
// previous life at their next datagram that their connection is gone
// (their Conn ends with ErrStatelessReset), instead of letting them send
// into the void until IdleTimeout.
//
// Only a Transport with a Listener sends resets: only a server gives
// tokens, so a reset from a client's Transport could never be believed.
//
// And it sends them only for the connection IDs its Listener issues
// (Transport.issuedIDs: its ServerID's): the key is shared by every life
// of a server and by every process of a port, and a process that answered
// another's IDs would hand anyone who saw a live connection's ID its token
// (RFC 9000 §21.11's stateless reset oracle). A process knows the IDs it
// issues by its ServerID; without one, its IDs cannot be told from
// another's, so a shared key on a shared port is refused (checkResetKey).

// resetState is a Transport's stateless reset side, used by its read loop
// alone (route, and the Listener's open that route calls).
type resetState struct {
	r   *session.Resetter
	clk clock.Clock
	buf []byte
}

// initReset sets the reset side up with the Transport's key, or a random
// one drawn now.
func (t *Transport) initReset(clk clock.Clock) {
	key := t.StatelessResetKey
	if key == nil {
		key = new([session.ResetKeyLen]byte)
		_, _ = rand.Read(key[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	}
	rate, burst := t.StatelessResetRate, t.StatelessResetBurst
	if rate == 0 {
		rate = session.DefaultResetRate
	}
	if burst == 0 {
		burst = session.DefaultResetBurst
	}
	t.rst = resetState{
		r:   session.NewResetter(key, t.issuedIDs(), rate, burst, clk.Now()), // rate < 0: never
		clk: clk,
		buf: make([]byte, 0, wire.StatelessResetLen),
	}
}

// resetToken is the token of connection id, for its session's Config.
func (t *Transport) resetToken(id uint64) *[wire.StatelessResetTokenLen]byte {
	tok := t.rst.r.Token(id)
	return &tok
}

// sendReset answers datagram b (header h) from from, for a connection the
// Transport does not hold, with a StatelessReset if the rules and the rate
// allow one.
func (t *Transport) sendReset(h wire.Header, b []byte, from netip.AddrPort) {
	out, v := t.rst.r.Answer(t.rst.buf[:0], h, b, t.rst.clk.Now())
	switch v {
	case session.ResetRateLimited:
		t.st.resetsRateLimited.Add(1)
		return
	case session.ResetNotIssued:
		t.st.resetsWithheld.Add(1)
		return
	case session.ResetNotEligible:
		return
	}
	if err := t.sock.writeTo(out, from); err != nil {
		t.log.Debug("fresh: stateless reset not sent", "to", from, "err", err)
		return
	}
	t.st.resetsSent.Add(1)
}

// checkResetKey refuses a StatelessResetKey on a socket that shares its
// port (SO_REUSEPORT) when the Transport has no ServerID: the other
// Transports of the port (its other processes) hold the same key as a
// rule, and without server IDs none can tell its connection IDs from the
// others', so each would answer the others' IDs with their tokens. It
// cannot see every sharing (a load balancer spreading one key's hosts by
// address); the package doc's Scale-out says the rule.
func (t *Transport) checkResetKey() error {
	if t.StatelessResetKey == nil || len(t.ServerID) > 0 || !reusesPort(t.Conn) {
		return nil
	}
	return fresh.InvalidField("transport.Transport.StatelessResetKey",
		"set on a socket that shares its port (SO_REUSEPORT) without a ServerID: every Transport on the port would answer "+
			"the others' connection IDs with their stateless reset tokens, so anyone who sees a client's connection ID could "+
			"draw its token from another process and end the connection (RFC 9000 §21.11); give each Transport of the port "+
			"its own ServerID, or leave the key nil (a random key of its own, no resets across restarts)")
}

// resetKeyLabel separates the stateless reset key from anything else
// derived from the same private key. It was the examples' label, kept so
// that keys derived before the function moved here stay the same.
const resetKeyLabel = "fresh examples: stateless reset key v1"

// ResetKeyFromTLS derives a StatelessResetKey from a server's TLS private
// key (cfg's first certificate's): HKDF-SHA256 (RFC 5869) of the key's
// PKCS #8 encoding with a label. Every life of a server started with the
// same key gets the same reset key, so a restarted server resets the
// connections of its previous life with no key file of its own. Servers
// sharing the TLS key (several processes behind one port, several hosts)
// get the same reset key too, which is safe only if each has a ServerID
// of its own (see Transport.StatelessResetKey). The reset key is as secret as the TLS
// key, which an attacker able to forge resets would need anyway to
// impersonate the server. It returns nil, nil without a certificate (a
// plaintext Listener has no resets).
func ResetKeyFromTLS(cfg *tls.Config) (*[32]byte, error) {
	if cfg == nil || len(cfg.Certificates) == 0 || cfg.Certificates[0].PrivateKey == nil {
		return nil, nil
	}
	der, err := x509.MarshalPKCS8PrivateKey(cfg.Certificates[0].PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("transport: deriving the stateless reset key from the TLS key: %w", err)
	}
	k, err := hkdf.Key(sha256.New, der, nil, resetKeyLabel, 32)
	if err != nil {
		return nil, fmt.Errorf("transport: deriving the stateless reset key from the TLS key: %w", err)
	}
	return (*[32]byte)(k), nil
}
