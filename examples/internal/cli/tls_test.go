package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/transport"
	"github.com/fresh-udp/fresh/transport/devcert"
)

// A device refused by the listener's own checks of its certificate
// (transport.Config.VerifyPeer, as fresh-monitor refuses a name it cannot
// store) is told that this, not only another CA, may be why.
func TestExplainDialRefusedCertificate(t *testing.T) {
	ca, err := devcert.NewCA("fleet CA")
	require.NoError(t, err)
	srv, err := ca.Issue("localhost", "localhost", "127.0.0.1")
	require.NoError(t, err)
	dev, err := ca.Issue("a-name-too-long")
	require.NoError(t, err)
	ln, err := transport.Listen("127.0.0.1:0", transport.Config{
		TLS:        &tls.Config{Certificates: []tls.Certificate{srv}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool()},
		VerifyPeer: func(tls.ConnectionState) error { return errors.New("name refused") },
	})
	require.NoError(t, err)
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = transport.Dial(ctx, ln.Addr().String(), transport.Config{TLS: &tls.Config{
		RootCAs: ca.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{dev},
	}})
	require.ErrorIs(t, err, transport.ErrHandshake)
	c := Credentials{Peer: "monitor", Cert: "agent.pem", CA: "ca.pem"}
	err = c.ExplainDial(err)
	require.ErrorContains(t, err, "the monitor rejected cert agent.pem") // no flag prefix: Credentials made by hand
	require.ErrorContains(t, err, "a device name, the CommonName, of more than 64 characters")
}
