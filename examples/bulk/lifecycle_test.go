package main

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fresh-udp/fresh/examples/internal/syncbuf"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/examples/internal/testcerts"
	"github.com/fresh-udp/fresh/transport"
)

// startServer runs serve with the flags args (TLS from files added) on a
// loopback port until the test ends, and returns the port, its text
// output and its result.
func startServer(t *testing.T, ctx context.Context, files testcerts.Files, args ...string) (port string, out *syncbuf.Buffer, done <-chan error) {
	t.Helper()
	opts, err := parseFlags(append(append([]string{"-s"}, files.ServerArgs("--")...), args...))
	require.NoError(t, err)
	cfg, err := opts.baseConfig()
	require.NoError(t, err)
	ln, err := transport.Listen("127.0.0.1:0", cfg)
	require.NoError(t, err)
	out = &syncbuf.Buffer{}
	errc := make(chan error, 1)
	go func() { errc <- serve(ctx, ln, opts, out) }()
	t.Cleanup(func() { ln.Close() })
	return strconv.Itoa(ln.Addr().(*net.UDPAddr).Port), out, errc
}

// A second client while a test runs is refused with iperf3's message, the
// running test is not disturbed, and once it is over the server takes the
// next client.
func TestServerBusy(t *testing.T) {
	files := testcerts.Write(t, "bulk-client")
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	port, srvOut, srvDone := startServer(t, ctx, files)
	clientArgs := func(secs string) []string {
		return append([]string{"-c", "127.0.0.1", "-p", port, "-t", secs, "-b", "5M"}, files.ClientArgs("--")...)
	}

	first := &syncbuf.Buffer{}
	firstErr := make(chan error, 1)
	go func() { firstErr <- run(ctx, clientArgs("3"), first) }()
	require.Eventually(t, func() bool { return containsAll(first.String(), "[ ID] Interval") },
		10*time.Second, 10*time.Millisecond, "the first test started: %s", first.String())

	second := &syncbuf.Buffer{}
	err := run(ctx, clientArgs("1"), second)
	require.ErrorIs(t, err, errBusy)
	require.EqualError(t, err, "the server is busy running a test. try again later")
	require.Contains(t, srvOut.String(), "a test is running")

	require.NoError(t, <-firstErr, first.String())
	require.Contains(t, first.String(), "bulk Done.")
	require.NoError(t, run(ctx, clientArgs("0.5"), second), "the server is free again: %s", second.String())
	cancel()
	require.NoError(t, <-srvDone)
}

// rawClient starts a test on the server at port as bulk's client does —
// the parameters, then one data connection — over the Transport tr, and
// returns the control and data connections without running the test.
func rawClient(t *testing.T, ctx context.Context, tr *transport.Transport, files testcerts.Files, port string, args ...string) (ctl *ctrl, data *transport.Conn) {
	t.Helper()
	co, err := parseFlags(append(append([]string{"-c", "127.0.0.1"}, args...), files.ClientArgs("--")...))
	require.NoError(t, err)
	cfg, err := co.baseConfig()
	require.NoError(t, err)
	cfg.Linger = -1 // a client that vanishes does not wait for its data
	ua := func(p string) *net.UDPAddr {
		n, err := strconv.Atoi(p)
		require.NoError(t, err)
		return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: n}
	}
	c, err := tr.Dial(ctx, ua(port), cfg)
	require.NoError(t, err)
	ctl = newCtrl(c)
	ts, fs := co.testParams()
	require.NoError(t, ctl.send(params{Cookie: "x", TestStart: ts, Fresh: fs}))
	var reply paramsReply
	require.NoError(t, ctl.recv(ctx, &reply, 5*time.Second))
	require.Empty(t, reply.Error)
	data, err = tr.Dial(ctx, ua(strconv.Itoa(reply.DataPort)), cfg)
	require.NoError(t, err)
	if !co.reverse {
		_, err = data.Write(make([]byte, 64<<10))
		require.NoError(t, err)
	}
	return ctl, data
}

// A client that closes its connections in the middle of a 30 s test ends
// the server's test at once, with the reason, whichever side sends.
func TestServerEndsTestOfClosedClient(t *testing.T) {
	for _, tc := range []struct {
		name, mode, role string
	}{{"client sends", "", "receiver"}, {"server sends", "-R", "sender"}} {
		t.Run(tc.name, func(t *testing.T) {
			files := testcerts.Write(t, "bulk-client")
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			port, srvOut, srvDone := startServer(t, ctx, files, "-1")
			pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			require.NoError(t, err)
			tr := &transport.Transport{Conn: pc}
			defer tr.Close()
			args := []string{"-t", "30", "-b", "5M"}
			if tc.mode != "" {
				args = append(args, tc.mode)
			}
			ctl, data := rawClient(t, ctx, tr, files, port, args...)
			require.Eventually(t, func() bool { return containsAll(srvOut.String(), "[ ID] Interval") }, 5*time.Second, 10*time.Millisecond)

			start := time.Now()
			data.Close()
			ctl.conn.Close()
			select {
			case err := <-srvDone:
				require.ErrorContains(t, err, "the client went away")
				require.Less(t, time.Since(start), 10*time.Second, "not after -t")
				require.Contains(t, srvOut.String(), tc.role, "the server summarises its side")
			case <-ctx.Done():
				t.Fatalf("the server's test did not end: %s", srvOut.String())
			}
		})
	}
}

// blackhole is a net.PacketConn that drops everything once cut: a client
// whose host vanished (power, network) as the server sees it.
type blackhole struct {
	net.PacketConn
	cut atomic.Bool
}

func (b *blackhole) WriteTo(p []byte, addr net.Addr) (int, error) {
	if b.cut.Load() {
		return len(p), nil
	}
	return b.PacketConn.WriteTo(p, addr)
}

func (b *blackhole) ReadFrom(p []byte) (int, net.Addr, error) {
	for {
		n, addr, err := b.PacketConn.ReadFrom(p)
		if err != nil || !b.cut.Load() {
			return n, addr, err
		}
	}
}

// A client that falls silent in the middle of a 30 s test (nothing heard
// from it, no close) ends the server's test after --rcv-timeout.
func TestServerEndsTestOfSilentClient(t *testing.T) {
	files := testcerts.Write(t, "bulk-client")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const idle = 2 * time.Second // --rcv-timeout 2000
	port, srvOut, srvDone := startServer(t, ctx, files, "-1", "--rcv-timeout", "2000")
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	bh := &blackhole{PacketConn: pc}
	tr := &transport.Transport{Conn: bh}
	defer tr.Close()
	ctl, data := rawClient(t, ctx, tr, files, port, "-t", "30")
	defer ctl.conn.Close()
	defer data.Close()
	require.Eventually(t, func() bool { return containsAll(srvOut.String(), "[ ID] Interval") }, 5*time.Second, 10*time.Millisecond)

	start := time.Now()
	bh.cut.Store(true)
	select {
	case err := <-srvDone:
		require.ErrorIs(t, err, transport.ErrIdleTimeout)
		require.GreaterOrEqual(t, time.Since(start), idle/2, "it waited for the client")
		require.Less(t, time.Since(start), idle+5*time.Second, "not after -t")
	case <-ctx.Done():
		t.Fatalf("the server's test did not end: %s", srvOut.String())
	}
}

// Ctrl-C (the client's context ending) in the middle of a test prints the
// summary of what was sent so far and ends with iperf3's message; the
// server, told so, ends its side at once.
func TestClientInterruptPrintsSummary(t *testing.T) {
	files := testcerts.Write(t, "bulk-client")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	port, srvOut, srvDone := startServer(t, ctx, files, "-1")

	cctx, interrupt := context.WithCancel(ctx)
	defer interrupt()
	out := &syncbuf.Buffer{}
	errc := make(chan error, 1)
	go func() {
		errc <- run(cctx, append([]string{"-c", "127.0.0.1", "-p", port, "-t", "30", "-i", "0.2", "-b", "5M"}, files.ClientArgs("--")...), out)
	}()
	require.Eventually(t, func() bool { return containsAll(out.String(), "0.20-0.40") }, 10*time.Second, 10*time.Millisecond, out.String())
	interrupt()
	start := time.Now()
	err := <-errc
	require.ErrorIs(t, err, errInterrupted)
	require.EqualError(t, err, "interrupt - the client has terminated")
	require.Less(t, time.Since(start), 10*time.Second)
	text := out.String()
	require.Contains(t, text, "- - - - - - - - -", "the summary: %s", text)
	require.Regexp(t, `\[  1\]   0\.00-[0-9.]+ +sec .* sender`, text)
	require.NotContains(t, text, "receiver", "the receiver's figures never came: not printed as zero")
	require.NotContains(t, text, "bulk Done.")

	select {
	case err := <-srvDone:
		require.ErrorContains(t, err, "the client: interrupt - the client has terminated")
	case <-ctx.Done():
		t.Fatalf("the server's test did not end: %s", srvOut.String())
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
