//go:build linux

package emu

import (
	"bytes"
	"context"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/fresh-udp/fresh/transport"
	"github.com/fresh-udp/fresh/transport/devcert"
)

// tunDiscovery moves ~3 MB over a default (TLS) fresh connection through
// the TUN router, the client's device MTU set to deviceMTU (0: the
// default 1500), and returns the client's Stats and the steady-state
// (second-half) median UDP payload of its packets.
func tunDiscovery(t *testing.T, deviceMTU int) (transport.Stats, int) {
	var (
		mu    sync.Mutex
		sizes []int // UDP payload of every client → server packet
	)
	tn := newTUN(t, 50*mbps, 5*time.Millisecond, func(p TUNPacket) {
		if p.Forward && len(p.Data) > 28 {
			mu.Lock()
			sizes = append(sizes, len(p.Data)-28) // IPv4 and UDP headers
			mu.Unlock()
		}
	})
	if deviceMTU > 0 {
		require.NoError(t, tn.InClient(func() error {
			l, err := netlink.LinkByName(tunName)
			if err != nil {
				return err
			}
			return netlink.LinkSetMTU(l, deviceMTU)
		}))
	}
	tlsConf, err := devcert.Loopback()
	require.NoError(t, err)
	cfg := transport.Config{TLS: tlsConf}
	var l *transport.Listener
	require.NoError(t, tn.InServer(func() (err error) {
		l, err = transport.Listen(net.JoinHostPort(tn.ServerAddr().String(), "0"), cfg)
		return err
	}))
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var cli *transport.Conn
	require.NoError(t, tn.InClient(func() (err error) {
		cli, err = transport.Dial(ctx, l.Addr().String(), cfg)
		return err
	}))
	defer cli.Close()
	srv, err := l.Accept(ctx)
	require.NoError(t, err)
	defer srv.Close()

	data := bytes.Repeat([]byte("fresh finds the path MTU "), 1<<17)
	errc := make(chan error, 1)
	go func() {
		_, err := cli.Write(data)
		if err == nil {
			err = cli.CloseWrite()
		}
		errc <- err
	}()
	got, err := io.ReadAll(srv)
	require.NoError(t, err)
	require.NoError(t, <-errc)
	require.Equal(t, data, got)

	st := cli.Stats()
	mu.Lock()
	defer mu.Unlock()
	steady := slices.Clone(sizes[len(sizes)/2:])
	slices.Sort(steady)
	median := steady[len(steady)/2]
	limit := transport.DefaultMaxDatagram
	if deviceMTU > 0 {
		limit = min(limit, deviceMTU-28)
	}
	require.LessOrEqual(t, steady[len(steady)-1], limit, "nothing above the path's MTU crossed")
	t.Logf("datagram %d B after %d probes (%d lost); %d packets forward, steady-state median %d B",
		st.DatagramSize, st.PMTUProbesSent, st.PMTUProbesLost, len(sizes), median)
	return st, median
}

// Over the TUN router (1500-byte device MTU, as an Ethernet path) path MTU
// discovery takes a default connection from 1200-byte datagrams to the
// default ceiling, 1452: the steady state's stream datagrams are at least
// 1400 bytes, and the data arrives whole, through the kernel's IPv4 stack
// with both ends in their own namespaces.
func TestTUNPathMTUDiscovery(t *testing.T) {
	st, median := tunDiscovery(t, 0)
	require.Equal(t, transport.DefaultMaxDatagram, st.DatagramSize, "the default ceiling: a 1500-byte path carries it")
	require.GreaterOrEqual(t, median, 1400, "steady-state datagrams")
	require.Zero(t, st.PMTUBlackHoles)
}

// With the client's device MTU at 1400 the kernel refuses the larger
// probes (Don't Fragment: EMSGSIZE) instead of fragmenting them, so
// discovery stops at the largest candidate that fits, 1280 (1400 + 28 >
// 1400), and the refused probes cost nothing else.
func TestTUNPathMTUDiscoveryDeviceMTU(t *testing.T) {
	st, median := tunDiscovery(t, 1400)
	require.Equal(t, 1280, st.DatagramSize)
	require.Equal(t, 1280, median)
	require.Zero(t, st.PMTUBlackHoles)
	require.Zero(t, st.PacketsLost)
}
