package cli

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/transport"
)

// A listening address that cannot be opened is explained with the flag
// that gave it.
func TestExplainListen(t *testing.T) {
	taken, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer taken.Close()
	for addr, want := range map[string]string{
		taken.LocalAddr().String(): "the port is in use (another server, or another program): stop it or give -listen another port",
		"4433":                     "want HOST:PORT or :PORT, such as :4433",
	} {
		_, err := transport.Listen(addr, transport.Config{Insecure: true})
		require.Error(t, err, addr)
		err = ExplainListen("-listen", addr, err)
		require.ErrorContains(t, err, "-listen "+addr+": ")
		require.ErrorContains(t, err, want)
	}
}

// A Dial that fails on its address says what to check.
func TestExplainDialAddress(t *testing.T) {
	closed, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	refused := closed.LocalAddr().String()
	require.NoError(t, closed.Close()) // nothing listens there now: loopback answers with a refusal
	c := Credentials{Peer: "monitor", Insecure: true}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for addr, want := range map[string]string{
		"127.0.0.1": "want HOST:PORT, such as 127.0.0.1:4433",
		refused:     "nothing listens there: is the monitor running",
	} {
		_, err := transport.Dial(ctx, addr, transport.Config{Insecure: true})
		require.Error(t, err, addr)
		require.ErrorContains(t, c.ExplainDial(err), want, addr)
	}
	require.Equal(t, "x", c.ExplainDial(errString("x")).Error(), "an error it knows nothing about is left alone")
}

type errString string

func (e errString) Error() string { return string(e) }
