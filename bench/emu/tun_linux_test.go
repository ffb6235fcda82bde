//go:build linux

package emu

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"

	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/internal/realtime"
	"github.com/fresh-udp/fresh/transport"
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

	// SetPath: a longer forward delay shows in the next pings.
	longer := scenario.Duration(3 * delay)
	require.NoError(t, tn.SetPath(&scenario.PathChange{Delay: &longer}, nil))
	rtts = pingRTTs(t, tn, 2)
	t.Logf("after SetPath (forward delay %v): %v", longer.D(), rtts)
	for _, rtt := range rtts {
		require.GreaterOrEqual(t, rtt, 4*delay)
		require.Less(t, rtt, 3*4*delay)
	}
	zero := scenario.Rate(0)
	require.ErrorIs(t, tn.SetPath(nil, &scenario.PathChange{Rate: &zero}), ErrInvalidConfig)
	require.NoError(t, tn.Close())
	require.ErrorIs(t, tn.SetPath(&scenario.PathChange{Delay: &longer}, nil), ErrClosed)
}

// TestTUNCloseOnSignal: SIGTERM closes the router. The test handles
// SIGTERM itself, so the re-raised signal reaches its channel instead of
// ending the test binary.
func TestTUNCloseOnSignal(t *testing.T) {
	tn := newTUN(t, 100*mbps, time.Millisecond, nil)
	mine := make(chan os.Signal, 2)
	signal.Notify(mine, syscall.SIGTERM)
	defer signal.Stop(mine)
	stop := CloseOnSignal(tn)
	defer stop()
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGTERM))
	for range 2 { // ours, then CloseOnSignal's re-raise after Close
		select {
		case <-mine:
		case <-time.After(5 * time.Second):
			t.Fatal("no SIGTERM")
		}
	}
	require.ErrorIs(t, tn.InClient(func() error { return nil }), ErrClosed)
}

// TestTUNKernelTCP moves a few MB over kernel TCP from the client
// namespace to the server's through a 20 Mbit/s bottleneck: goodput is
// at most the link rate and, in the long real-time suite (the router is
// a userspace program: a loaded machine slows it), at least half of it,
// and Observe sees the TCP packets after the queue and the propagation
// delay.
func TestTUNKernelTCP(t *testing.T) {
	const (
		rate  = 20 * mbps
		delay = 10 * time.Millisecond
		size  = 3 << 20
	)
	var (
		mu                 sync.Mutex
		tcpFwd, tcpRev     int
		badQueue, tooEarly int
		minTransit         = time.Hour
	)
	observe := func(p TUNPacket) {
		if len(p.Data) < 20 || p.Data[9] != 6 { // TCP only
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if p.Forward {
			tcpFwd++
		} else {
			tcpRev++
		}
		if p.Queue < 0 {
			badQueue++
		}
		transit := p.Out.Sub(p.In)
		minTransit = min(minTransit, transit)
		if transit < delay {
			tooEarly++
		}
	}
	fwd, rev := path(rate, delay), path(rate, delay)
	fwd.Queue = scenario.Queue{Limit: 100}
	rev.Queue = scenario.Queue{Limit: 100}
	tn, err := NewTUN(TUNConfig{Forward: fwd, Reverse: rev, Seed: 2, Observe: observe})
	if errors.Is(err, ErrNoTUN) {
		t.Skip(err)
	}
	require.NoError(t, err)
	defer func() { require.NoError(t, tn.Close()) }()

	var ln net.Listener
	require.NoError(t, tn.InServer(func() (err error) {
		ln, err = net.Listen("tcp4", net.JoinHostPort(tn.ServerAddr().String(), "0"))
		return err
	}))
	defer ln.Close()
	type result struct {
		n   int64
		end time.Time
		err error
	}
	got := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- result{err: err}
			return
		}
		defer c.Close()
		n, err := io.Copy(io.Discard, c)
		got <- result{n, time.Now(), err}
	}()

	data := bytes.Repeat([]byte("fresh-tun"), size/9+1)[:size]
	start := time.Now()
	var c net.Conn
	require.NoError(t, tn.InClient(func() (err error) {
		c, err = net.DialTimeout("tcp4", ln.Addr().String(), 5*time.Second)
		return err
	}))
	_, err = c.Write(data)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	var r result
	select {
	case r = <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("transfer did not finish")
	}
	require.NoError(t, r.err)
	require.EqualValues(t, size, r.n)
	goodput := float64(size*8) / r.end.Sub(start).Seconds()
	st := tn.Stats()
	t.Logf("%d bytes in %v: goodput %.2f Mbit/s over a %.0f Mbit/s link; forward %+v", size, r.end.Sub(start), goodput/1e6, float64(rate)/1e6, st.Forward)
	require.LessOrEqual(t, goodput, float64(rate))
	realtime.Check(t, goodput >= 0.5*float64(rate), "goodput %.2f Mbit/s ≥ half the %.0f Mbit/s link", goodput/1e6, float64(rate)/1e6)
	require.Zero(t, st.Forward.NotIPv4+st.Reverse.NotIPv4)

	mu.Lock()
	defer mu.Unlock()
	t.Logf("observed TCP packets: %d forward, %d reverse; shortest router transit %v", tcpFwd, tcpRev, minTransit)
	require.Greater(t, tcpFwd, size/1500)
	require.Positive(t, tcpRev)
	require.Zero(t, badQueue, "packets with a negative queue time")
	require.Zero(t, tooEarly, "packets that left before the propagation delay")
}

// TestTUNTransport moves data over a fresh transport connection dialled in
// the client namespace to a listener in the server's.
func TestTUNTransport(t *testing.T) {
	tn := newTUN(t, 50*mbps, 5*time.Millisecond, nil)
	var l *transport.Listener
	require.NoError(t, tn.InServer(func() (err error) {
		l, err = transport.Listen(net.JoinHostPort(tn.ServerAddr().String(), "0"), transport.Config{Insecure: true})
		return err
	}))
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var cli *transport.Conn
	require.NoError(t, tn.InClient(func() (err error) {
		cli, err = transport.Dial(ctx, l.Addr().String(), transport.Config{Insecure: true})
		return err
	}))
	defer cli.Close()
	srv, err := l.Accept(ctx)
	require.NoError(t, err)
	defer srv.Close()

	data := bytes.Repeat([]byte("fresh over tun "), 1<<16) // ~1 MB
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
	st := tn.Stats()
	require.GreaterOrEqual(t, st.Forward.BytesOut, uint64(len(data)))
}
