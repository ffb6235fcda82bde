package loopback

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/fresh-udp/fresh/cc"
)

// alpn is the TLS application protocol both quic-go ends agree on.
const alpn = "fresh-bench"

// Certs is the server's and the client's TLS configuration for one
// self-signed certificate.
type Certs struct {
	server, client *tls.Config
}

// NewCerts makes an ECDSA P-256 certificate for 127.0.0.1 and
// localhost, valid for a day, and the configurations that serve and trust
// it. The client verifies the certificate for real (RootCAs), as a
// deployment would; verification happens once per handshake, outside the
// timed transfer.
func NewCerts() (Certs, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Certs{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return Certs{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "loopbench"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return Certs{}, fmt.Errorf("self-signed certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return Certs{}, err
	}
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	return Certs{
		server: &tls.Config{
			Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}},
			NextProtos:   []string{alpn},
		},
		client: &tls.Config{RootCAs: roots, NextProtos: []string{alpn}},
	}, nil
}

// QUIC moves n bytes over one quic-go stream on loopback with quic-go's
// default Config. The detail says whether the client's connection sends
// with GSO (quic-go's own report) and whether ECN is on (quic-go enables it
// on Linux unless QUIC_GO_DISABLE_ECN is true; it does not report it).
func QUIC(ctx context.Context, certs Certs, n cc.ByteCount) (Transfer, error) {
	ln, err := quic.ListenAddr("127.0.0.1:0", certs.server, &quic.Config{})
	if err != nil {
		return Transfer{}, fmt.Errorf("quic-go listen: %w", err)
	}
	defer ln.Close()

	received := make(chan copyResult, 1)
	go func() {
		conn, err := ln.Accept(ctx)
		if err != nil {
			received <- copyResult{err: fmt.Errorf("quic-go accept: %w", err)}
			return
		}
		str, err := conn.AcceptStream(ctx)
		if err != nil {
			received <- copyResult{err: fmt.Errorf("quic-go accept stream: %w", err)}
			return
		}
		received <- drain(str)
	}()

	conn, err := quic.DialAddr(ctx, ln.Addr().String(), certs.client, &quic.Config{})
	if err != nil {
		return Transfer{}, fmt.Errorf("quic-go dial: %w", err)
	}
	defer conn.CloseWithError(0, "done")
	str, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return Transfer{}, fmt.Errorf("quic-go open stream: %w", err)
	}
	// A stalled Write must not outlive the timeout.
	stop := context.AfterFunc(ctx, func() { conn.CloseWithError(1, "timeout") })
	defer stop()

	t, err := timeTransfer(n, str, str.Close, received)
	if err != nil {
		return Transfer{}, fmt.Errorf("quic-go: %w", err)
	}
	st := conn.ConnectionStats()
	t.Lost = int64(st.PacketsLost)
	t.Detail = fmt.Sprintf("avg datagram %d B, GSO %s, ECN %s", avgSize(int64(st.BytesSent), int64(st.PacketsSent)),
		onOff(conn.ConnectionState().GSO), onOff(!quicECNDisabled()))
	return t, nil
}

// quicECNDisabled mirrors quic-go's own check of QUIC_GO_DISABLE_ECN.
func quicECNDisabled() bool {
	disabled, err := strconv.ParseBool(os.Getenv("QUIC_GO_DISABLE_ECN"))
	return err == nil && disabled
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}
