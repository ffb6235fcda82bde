//go:build linux

package emu

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"

	"github.com/fresh-udp/fresh/cc"
)

// newTUN builds a TUN router with symmetric links, or skips the test
// (saying why) where it cannot run.
func newTUN(t *testing.T, rate cc.Bandwidth, delay time.Duration, observe func(TUNPacket)) *TUN {
	t.Helper()
	tn, err := NewTUN(TUNConfig{Forward: path(rate, delay), Reverse: path(rate, delay), Seed: 1, Observe: observe})
	if errors.Is(err, ErrNoTUN) {
		t.Skip(err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tn.Close()) })
	return tn
}

// pingRTTs sends n ICMP echo requests from the client namespace to the
// server's address, one at a time, and returns each round-trip time.
func pingRTTs(t *testing.T, tn *TUN, n int) []time.Duration {
	t.Helper()
	var c *icmp.PacketConn
	require.NoError(t, tn.InClient(func() (err error) {
		c, err = icmp.ListenPacket("ip4:icmp", tn.ClientAddr().String())
		return err
	}))
	defer c.Close()
	dst := &net.IPAddr{IP: tn.ServerAddr().AsSlice()}
	buf := make([]byte, 1500)
	var rtts []time.Duration
	for seq := 1; seq <= n; seq++ {
		msg := icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: os.Getpid() & 0xffff, Seq: seq, Data: []byte("fresh tun ping")}}
		b, err := msg.Marshal(nil)
		require.NoError(t, err)
		start := time.Now()
		_, err = c.WriteTo(b, dst)
		require.NoError(t, err)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(2*time.Second)))
		for {
			m, _, err := c.ReadFrom(buf)
			require.NoError(t, err, "ping %d: no reply", seq)
			rm, err := icmp.ParseMessage(1, buf[:m])
			require.NoError(t, err)
			if e, ok := rm.Body.(*icmp.Echo); ok && rm.Type == ipv4.ICMPTypeEchoReply && e.Seq == seq {
				break
			}
		}
		rtts = append(rtts, time.Since(start))
	}
	return rtts
}

func TestTUNPing(t *testing.T) {
	const delay = 10 * time.Millisecond
	tn := newTUN(t, 100*mbps, delay, nil)
	rtts := pingRTTs(t, tn, 5)
	t.Logf("ping RTTs over a %v RTT: %v", 2*delay, rtts)
	for _, rtt := range rtts {
		require.GreaterOrEqual(t, rtt, 2*delay)
		require.Less(t, rtt, 3*2*delay)
	}
	st := tn.Stats()
	require.GreaterOrEqual(t, st.Forward.DatagramsOut, uint64(5))
	require.GreaterOrEqual(t, st.Reverse.DatagramsOut, uint64(5))
}
