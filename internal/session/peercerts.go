package session

import (
	"crypto/tls"
	"crypto/x509"
)

// peerCerts keeps the peer's certificates of a completed handshake as
// their DER bytes, and parses them again when the application asks for
// the TLS state. crypto/tls hands over parsed certificates: with mutual
// TLS, for a device's one P-256 certificate, several times the 400 or so
// bytes of its DER (the x509.Certificate, its names, extensions and
// public key, and the handshake message its Raw points into;
// bench/results/security.md, "Footprint"). A monitor holds one per device
// for the connection's life and reads it once, when it accepts the
// connection (to name the device), so keeping the bytes and parsing on
// demand (some µs) is the better trade.
type peerCerts struct {
	der [][]byte // the peer's certificates, in ConnectionState.PeerCertificates order; one backing array
	// chains are ConnectionState.VerifiedChains with the peer's own
	// certificates left out (nil), and at for each such place the index
	// of the peer certificate that goes there. The rest (roots and
	// intermediates from the local pool) are shared by every connection.
	chains [][]*x509.Certificate
	at     [][]int
}

// keep takes the parsed peer certificates out of st and keeps their DER.
func (p *peerCerts) keep(st *tls.ConnectionState) {
	if len(st.PeerCertificates) == 0 {
		return
	}
	n := 0
	for _, c := range st.PeerCertificates {
		n += len(c.Raw)
	}
	buf := make([]byte, 0, n)
	p.der = make([][]byte, len(st.PeerCertificates))
	for i, c := range st.PeerCertificates {
		buf = append(buf, c.Raw...)
		p.der[i] = buf[len(buf)-len(c.Raw) : len(buf) : len(buf)]
	}
	if len(st.VerifiedChains) > 0 {
		p.chains = make([][]*x509.Certificate, len(st.VerifiedChains))
		p.at = make([][]int, len(st.VerifiedChains))
		for j, chain := range st.VerifiedChains {
			p.chains[j] = make([]*x509.Certificate, len(chain))
			p.at[j] = make([]int, len(chain))
			for k, c := range chain {
				p.at[j][k] = -1
				for i, peer := range st.PeerCertificates {
					if c == peer {
						p.at[j][k] = i
					}
				}
				if p.at[j][k] < 0 {
					p.chains[j][k] = c
				}
			}
		}
	}
	st.PeerCertificates, st.VerifiedChains = nil, nil
}

// restore puts freshly parsed peer certificates back into st. A
// certificate that parsed at the handshake parses again; should one not,
// st goes without peer certificates rather than with a wrong one.
func (p *peerCerts) restore(st *tls.ConnectionState) {
	if len(p.der) == 0 {
		return
	}
	certs := make([]*x509.Certificate, len(p.der))
	for i, der := range p.der {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return
		}
		certs[i] = c
	}
	st.PeerCertificates = certs
	if p.chains == nil {
		return
	}
	st.VerifiedChains = make([][]*x509.Certificate, len(p.chains))
	for j, chain := range p.chains {
		out := make([]*x509.Certificate, len(chain))
		for k, c := range chain {
			if i := p.at[j][k]; i >= 0 {
				c = certs[i]
			}
			out[k] = c
		}
		st.VerifiedChains[j] = out
	}
}
