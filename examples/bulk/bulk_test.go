package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fresh-udp/fresh/examples/internal/syncbuf"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/dscp"
	"github.com/fresh-udp/fresh/examples/internal/testcerts"
	"github.com/fresh-udp/fresh/transport"
)

// loopback runs a one-off server with serverArgs and a client with
// clientArgs (the port added) in-process over loopback, with mutual TLS
// (a new CA, the server's and the client's certificates), and returns
// both outputs.
func loopback(t *testing.T, serverArgs, clientArgs []string) (srv, cli []byte) {
	t.Helper()
	files := testcerts.Write(t, "bulk-client")
	return loopbackWith(t, append(files.ServerArgs("--"), serverArgs...), append(files.ClientArgs("--"), clientArgs...))
}

// loopbackWith is loopback with the arguments as given.
func loopbackWith(t *testing.T, serverArgs, clientArgs []string) (srv, cli []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o, err := parseFlags(append([]string{"-s", "-1"}, serverArgs...))
	require.NoError(t, err)
	cfg, err := o.baseConfig()
	require.NoError(t, err)
	ln, err := transport.Listen("127.0.0.1:0", cfg)
	require.NoError(t, err)
	defer ln.Close()
	var srvOut bytes.Buffer
	srvErr := make(chan error, 1)
	go func() { srvErr <- serve(ctx, ln, o, &srvOut) }()
	port := strconv.Itoa(ln.Addr().(*net.UDPAddr).Port)
	var out bytes.Buffer
	err = run(ctx, append([]string{"-c", "127.0.0.1", "-p", port}, clientArgs...), &out)
	require.NoError(t, err, out.String())
	require.NoError(t, <-srvErr, srvOut.String())
	return srvOut.Bytes(), out.Bytes()
}

func decode(t *testing.T, b []byte) result {
	t.Helper()
	var res result
	require.NoError(t, json.Unmarshal(b, &res), string(b))
	require.Empty(t, res.Error)
	return res
}

// TestClientServerJSON runs a 2 s test with -J on both sides and checks
// the results: the receiver's figures came back and account for every
// byte the sender wrote, and both sides echo the test's parameters.
func TestClientServerJSON(t *testing.T) {
	srvOut, cliOut := loopback(t, []string{"-J"}, []string{"-t", "2", "-C", "cubic", "-b", "50M", "-J"})
	for _, res := range []result{decode(t, cliOut), decode(t, srvOut)} {
		require.Equal(t, "cubic", res.End.SenderTCPCongestion)
		ts := res.Start.TestStart
		require.Equal(t, testStart{Protocol: "fresh", NumStreams: 1, Blksize: 128 << 10, Duration: 2,
			TargetBitrate: 50e6, Interval: 1}, ts)
		require.Len(t, res.Intervals, 2, "one interval per second of -t 2")
		sent, recv := res.End.SumSent, res.End.SumReceived
		require.Positive(t, sent.Bytes)
		require.NotNil(t, sent.Retransmits)
		require.Positive(t, recv.Bytes, "the receiver reported what it read")
		require.Positive(t, recv.BitsPerSecond)
		require.Equal(t, sent.Bytes, recv.Bytes, "every byte written was read, no more")
		require.Len(t, res.End.Streams, 1)
		require.Equal(t, "BE", res.End.Fresh.DSCP)
		require.Positive(t, res.End.Fresh.PacketsSent)
	}
	cli, srv := decode(t, cliOut), decode(t, srvOut)
	require.Equal(t, cli.Start.Cookie, srv.Start.Cookie)
	require.True(t, cli.End.SumSent.Sender)
	require.False(t, srv.End.SumSent.Sender)
	require.Equal(t, cli.End.SumReceived.Bytes, srv.End.SumReceived.Bytes, "both report the receiver's count")
	var sumIntervals int64
	for _, iv := range cli.Intervals {
		sumIntervals += iv.Sum.Bytes
	}
	require.Equal(t, cli.End.SumSent.Bytes, sumIntervals, "the client's intervals add up to the sender's total")
}

// summary is what a script reading iperf3's -J output typically takes.
type summary struct {
	ReceivedBitsPerSecond float64
	SentRetransmits       int64
	FirstIntervalBytes    int64
	Duration              float64
}

// readSummary stands in for "the same script" run on iperf3's and on
// bulk's -J output.
func readSummary(b []byte) (summary, error) {
	var r struct {
		Start struct {
			TestStart struct {
				Duration *float64 `json:"duration"`
			} `json:"test_start"`
		} `json:"start"`
		Intervals []struct {
			Sum struct {
				Bytes *int64 `json:"bytes"`
			} `json:"sum"`
		} `json:"intervals"`
		End struct {
			SumReceived struct {
				BitsPerSecond *float64 `json:"bits_per_second"`
			} `json:"sum_received"`
			SumSent struct {
				Retransmits *int64 `json:"retransmits"`
			} `json:"sum_sent"`
		} `json:"end"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return summary{}, err
	}
	switch {
	case r.Start.TestStart.Duration == nil:
		return summary{}, errors.New("no start.test_start.duration")
	case len(r.Intervals) == 0 || r.Intervals[0].Sum.Bytes == nil:
		return summary{}, errors.New("no intervals[0].sum.bytes")
	case r.End.SumReceived.BitsPerSecond == nil:
		return summary{}, errors.New("no end.sum_received.bits_per_second")
	case r.End.SumSent.Retransmits == nil:
		return summary{}, errors.New("no end.sum_sent.retransmits")
	}
	return summary{
		ReceivedBitsPerSecond: *r.End.SumReceived.BitsPerSecond,
		SentRetransmits:       *r.End.SumSent.Retransmits,
		FirstIntervalBytes:    *r.Intervals[0].Sum.Bytes,
		Duration:              *r.Start.TestStart.Duration,
	}, nil
}

// TestSameScript reads bulk's -J output and, where iperf3 is installed,
// iperf3's (over TCP on loopback) with one function.
func TestSameScript(t *testing.T) {
	_, cliOut := loopback(t, nil, []string{"-t", "1", "-i", "0.5", "-b", "20M", "-J"})
	outputs := map[string][]byte{"bulk": cliOut}
	if path, err := exec.LookPath("iperf3"); err != nil {
		t.Log("iperf3 not installed: reading bulk's output only")
	} else {
		outputs["iperf3"] = runIperf3(t, path, "-t", "1", "-i", "0.5", "-b", "20M", "-J")
	}
	for name, b := range outputs {
		s, err := readSummary(b)
		require.NoError(t, err, "%s: %s", name, b)
		require.Equal(t, 1.0, s.Duration, name)
		require.Positive(t, s.ReceivedBitsPerSecond, name)
		require.Positive(t, s.FirstIntervalBytes, name)
		require.GreaterOrEqual(t, s.SentRetransmits, int64(0), name)
	}
}

// runIperf3 runs iperf3 -s -1 and iperf3 -c 127.0.0.1 with args on a free
// loopback port and returns the client's output.
func runIperf3(t *testing.T, path string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	require.NoError(t, l.Close())
	srv := exec.CommandContext(ctx, path, "-s", "-1", "-B", "127.0.0.1", "-p", port)
	require.NoError(t, srv.Start())
	defer func() { _ = srv.Wait() }()
	defer cancel()
	for range 50 {
		// iperf3 -J reports a refused connection in its JSON's error,
		// with or without a failing exit status.
		out, err := exec.CommandContext(ctx, path, append([]string{"-c", "127.0.0.1", "-p", port}, args...)...).Output()
		var res struct {
			Error string `json:"error"`
		}
		jerr := json.Unmarshal(out, &res)
		if err == nil && jerr == nil && res.Error == "" {
			return out
		}
		if !strings.Contains(res.Error, "refused") {
			require.Fail(t, "iperf3 failed", "%v: %s", err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("iperf3's server did not come up")
	return nil
}

// TestReverseTOS: -R makes the server send; -S's TOS byte reaches both
// ends' stream DSCP.
func TestReverseTOS(t *testing.T) {
	srvOut, cliOut := loopback(t, []string{"-J"}, []string{"-t", "1", "-R", "-S", "0x10", "-b", "20M", "-J"})
	cli, srv := decode(t, cliOut), decode(t, srvOut)
	for _, res := range []result{cli, srv} {
		require.Equal(t, 1, res.Start.TestStart.Reverse)
		require.Equal(t, 16, res.Start.TestStart.TOS)
		require.Equal(t, "4", res.End.Fresh.DSCP, "DSCP 4 = TOS 0x10")
		require.Positive(t, res.End.SumReceived.Bytes)
	}
	require.True(t, srv.End.SumSent.Sender, "the server sent")
	require.False(t, cli.End.SumSent.Sender)
	require.Positive(t, srv.End.Fresh.PacketsSent)
	require.Nil(t, cli.Intervals[0].Streams[0].Retransmits, "the client only received")
}

// TestBidirParallelDSCP: --bidir -P 2 moves data both ways on both
// connections, marked with --dscp's class on both ends.
func TestBidirParallelDSCP(t *testing.T) {
	srvOut, cliOut := loopback(t, []string{"--json-stream"}, []string{"-t", "1", "--bidir", "-P", "2", "--dscp", "af41", "-b", "10M", "-J"})
	cli := decode(t, cliOut)
	require.Equal(t, 2, cli.Start.TestStart.NumStreams)
	require.Equal(t, 1, cli.Start.TestStart.Bidir)
	require.Equal(t, 34<<2, cli.Start.TestStart.TOS)
	require.Len(t, cli.Start.Connected, 2)
	require.Len(t, cli.End.Streams, 4, "two connections, two directions")
	require.Positive(t, cli.End.SumReceived.Bytes)
	require.NotNil(t, cli.End.SumReceivedBidirReverse)
	require.Positive(t, cli.End.SumReceivedBidirReverse.Bytes, "the server sent too")
	require.NotNil(t, cli.Intervals[0].SumBidirReverse)
	require.Equal(t, "AF41", cli.End.Fresh.DSCP)

	// The server's --json-stream: start, intervals, end, one a line.
	lines := strings.Split(strings.TrimSpace(string(srvOut)), "\n")
	var events []string
	var end endJ
	for _, l := range lines {
		var ev struct {
			Event string          `json:"event"`
			Data  json.RawMessage `json:"data"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &ev), l)
		events = append(events, ev.Event)
		if ev.Event == "end" {
			require.NoError(t, json.Unmarshal(ev.Data, &end))
		}
	}
	require.Equal(t, "start", events[0])
	require.Equal(t, "end", events[len(events)-1])
	require.Contains(t, events, "interval")
	require.Equal(t, "AF41", end.Fresh.DSCP, "the server marked its stream too")
	require.Positive(t, end.SumReceived.Bytes)
	require.Positive(t, end.SumReceivedBidirReverse.Bytes)
}

func TestFlags(t *testing.T) {
	for _, args := range [][]string{
		{},                          // neither -s nor -c
		{"-s", "-c", "x"},           // both
		{"-c", "x", "-C", "nosuch"}, // unknown controller
		{"-c", "x", "-l", "0"},
		{"-c", "x", "-t", "0s"},
		{"-c", "x", "-t", "ten"},
		{"-c", "x", "-l", "lots"},
		{"-c", "x", "-w", "-1M"},
		{"-c", "x", "-P", "0"},
		{"-c", "x", "-R", "--bidir"},
		{"-c", "x", "-4", "-6"},
		{"-c", "x", "-b", "fast"},
		{"-c", "x", "-b", "10M/100"},
		{"-c", "x", "-S", "0x11"}, // ECN bits
		{"-c", "x", "-S", "300"},
		{"-c", "x", "--dscp", "XYZ"},
	} {
		_, err := parseFlags(args)
		require.Error(t, err, "%q", args)
	}
	o, err := parseFlags([]string{"-c", "h", "-l", "64K", "-w", "1M"})
	require.NoError(t, err)
	require.Equal(t, 64<<10, o.blksize)
	require.Equal(t, 1<<20, o.window)
	require.Equal(t, 10*time.Second, o.duration, "iperf3's default -t")
	require.Equal(t, 1, o.parallel)

	// Bare seconds as iperf3's, Go durations as before.
	for in, want := range map[string]time.Duration{"10": 10 * time.Second, "0.5": 500 * time.Millisecond,
		"10s": 10 * time.Second, "1m": time.Minute, "250ms": 250 * time.Millisecond} {
		o, err := parseFlags([]string{"-c", "h", "-t", in, "-i", in})
		require.NoError(t, err, in)
		require.Equal(t, want, o.duration, in)
		require.Equal(t, want, o.interval, in)
	}
	// Rates in iperf3's decimal units, and as bulk and the other examples
	// write them (internal/units).
	for in, want := range map[string]float64{"10M": 10e6, "500K": 500e3, "500k": 500e3, "1G": 1e9,
		"1.5m": 1.5e6, "64000": 64000, "1e6": 1e6, "0": 0, "10Mbps": 10e6, "10 Mbit/s": 10e6, "95.4 Mbits/sec": 95.4e6} {
		o, err := parseFlags([]string{"-c", "h", "-b", in})
		require.NoError(t, err, in)
		require.Equal(t, want, o.rate, in)
	}
	// --rcv-timeout: iperf3's milliseconds, or a Go duration.
	for in, want := range map[string]time.Duration{"5000": 5 * time.Second, "250": 250 * time.Millisecond, "5s": 5 * time.Second, "1m": time.Minute} {
		o, err := parseFlags([]string{"-c", "h", "--rcv-timeout", in})
		require.NoError(t, err, in)
		require.Equal(t, want, o.idleTimeout, in)
		cfg, err := o.baseConfig()
		require.NoError(t, err)
		require.Equal(t, want, cfg.IdleTimeout, "every connection's Config")
	}
	for _, in := range []string{"0", "-1", "ten", "0s", "86400001", "25h", "-9223372036854775807"} {
		_, err := parseFlags([]string{"-c", "h", "--rcv-timeout", in})
		require.ErrorContains(t, err, "rcv-timeout", in)
	}
	// A refused size or rate names the flag and the forms it takes.
	for _, tc := range []struct{ args, want []string }{
		{[]string{"-b", "fast"}, []string{"-b", "10Mbps, 10 Mbit/s"}},
		{[]string{"-b", "10MB"}, []string{"-b", "a rate is in bits", "80Mbps"}},
		{[]string{"-b", "10M/100"}, []string{"-b", "bursts (/N) are not supported"}},
		{[]string{"-l", "lots"}, []string{"-l", "1GB, 50MB"}},
		{[]string{"-l", "2G"}, []string{"-l 2GiB", "up to 1G"}},
	} {
		_, err := parseFlags(append([]string{"-c", "h"}, tc.args...))
		for _, w := range tc.want {
			require.ErrorContains(t, err, w, "%q", tc.args)
		}
	}
	o, err = parseFlags([]string{"-c", "h", "-P", "4", "-R", "--time", "3", "--port", "5202"})
	require.NoError(t, err)
	require.Equal(t, 4, o.parallel)
	require.True(t, o.reverse)
	require.Equal(t, 3*time.Second, o.duration)
	require.Equal(t, 5202, o.port)
	o, err = parseFlags([]string{"-c", "h", "--bidir", "-4"})
	require.NoError(t, err)
	require.True(t, o.bidir)
	require.Equal(t, "ip4", o.network)

	// -S takes a TOS byte as iperf3 does; --dscp a class name or number.
	for in, want := range map[string]dscp.Codepoint{"0x10": 0, "16": 0, "020": 0, "184": dscp.EF, "0xb8": dscp.EF} {
		o, err := parseFlags([]string{"-c", "h", "-S", in})
		require.NoError(t, err, in)
		if want == 0 {
			want, _ = dscp.FromCode(4)
		}
		require.Equal(t, want, o.dscp, in)
		ts, f := o.testParams()
		require.Equal(t, int(want.Code())<<2, ts.TOS, in)
		require.Equal(t, want.String(), f.DSCP, in)
	}
	for in, code := range map[string]uint8{"EF": 46, "af41": 34, "CS1": 8, "10": 10} {
		o, err := parseFlags([]string{"-c", "h", "--dscp", in})
		require.NoError(t, err, in)
		require.Equal(t, code, o.dscp.Code(), in)
		ts, _ := o.testParams()
		require.Equal(t, int(code)<<2, ts.TOS, in)
	}
	// What the server makes of the parameters: the same DSCP.
	o, err = parseFlags([]string{"-c", "h", "--dscp", "AF41", "-C", "cubic", "-w", "1M"})
	require.NoError(t, err)
	ts, f := o.testParams()
	cfg, err := checkParams(params{TestStart: ts, Fresh: f}, transport.Config{})
	require.NoError(t, err)
	require.Equal(t, dscp.AF41, cfg.StreamDSCP)
	require.Equal(t, "cubic", cfg.CC)
	require.Equal(t, 1<<20, cfg.SendBuffer)

	// A client that sends only iperf3's tos gets its DSCP.
	cfg, err = checkParams(params{TestStart: testStart{Protocol: "fresh", NumStreams: 1, Blksize: 1, Duration: 1, TOS: 184},
		Fresh: freshSettings{CC: "owd"}}, transport.Config{})
	require.NoError(t, err)
	require.Equal(t, dscp.EF, cfg.StreamDSCP)

	// iperf3's flags bulk does not implement are refused by name.
	for _, args := range [][]string{{"-u"}, {"--udp"}, {"-Z"}, {"--cport", "5000"}, {"-n", "1G"}, {"-O", "2"}} {
		_, err := parseFlags(append([]string{"-c", "h"}, args...))
		require.Error(t, err, "%q", args)
		require.ErrorContains(t, err, strings.TrimLeft(args[0], "-"), "%q", args)
		require.ErrorContains(t, err, "not supported", "%q", args)
	}
}

// TestLogfile: --logfile appends the output to a file instead of stdout.
func TestLogfile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "bulk.log")
	require.NoError(t, os.WriteFile(f, []byte("before\n"), 0o644))
	_, out := loopback(t, nil, []string{"-t", "1", "-b", "10M", "--logfile", f})
	require.Empty(t, out)
	b, err := os.ReadFile(f)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(b), "before\n"), "appended")
	require.Contains(t, string(b), "receiver")
	require.Contains(t, string(b), "bulk Done.")
}

func TestFormat(t *testing.T) {
	require.Equal(t, "1.46 Gbits/sec", formatBits(1.46e9))
	require.Equal(t, "95.4 Mbits/sec", formatBits(95.4e6))
	require.Equal(t, " 232 KBytes", formatBytes(232*1024))
	require.Equal(t, "2.26 MBytes", formatBytes(2.26*(1<<20)))
}

// TestTLS: the text output names the client's certificate; --insecure on
// both ends runs in plaintext; a client that does not trust the server,
// or that presents no certificate to a server with --ca, fails with what
// to give; credentials that are missing or contradict each other fail
// before anything is dialled.
func TestTLS(t *testing.T) {
	srvOut, _ := loopback(t, nil, []string{"-t", "0.5", "-b", "5M"})
	require.Contains(t, string(srvOut), `Client authenticated as "bulk-client"`)

	// A one-off server (-1) serves the first client that gets in, not
	// the first that knocks: one without a certificate does not use it up.
	{
		files := testcerts.Write(t, "c0")
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		o, err := parseFlags(append([]string{"-s", "-1"}, files.ServerArgs("--")...))
		require.NoError(t, err)
		cfg, err := o.baseConfig()
		require.NoError(t, err)
		ln, err := transport.Listen("127.0.0.1:0", cfg)
		require.NoError(t, err)
		var srvText syncbuf.Buffer
		srvErr := make(chan error, 1)
		go func() { srvErr <- serve(ctx, ln, o, &srvText) }()
		port := strconv.Itoa(ln.Addr().(*net.UDPAddr).Port)
		err = run(ctx, []string{"-c", "127.0.0.1", "-p", port, "-t", "0.5", "--ca", files.CA}, io.Discard)
		require.ErrorContains(t, err, "certificate required")
		require.NoError(t, run(ctx, append([]string{"-c", "127.0.0.1", "-p", port, "-t", "0.5", "-b", "5M"}, files.ClientArgs("--")...), io.Discard))
		require.NoError(t, <-srvErr)
		ln.Close()
		cancel()
	}

	srvOut, cliOut := loopbackWith(t, []string{"--insecure", "-J"}, []string{"--insecure", "-t", "0.5", "-b", "5M", "-J"})
	require.Positive(t, decode(t, cliOut).End.SumReceived.Bytes)
	require.Positive(t, decode(t, srvOut).End.SumReceived.Bytes)

	files, other := testcerts.Write(t, "c1"), testcerts.Write(t, "c2")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	o, err := parseFlags(append([]string{"-s"}, files.ServerArgs("--")...))
	require.NoError(t, err)
	cfg, err := o.baseConfig()
	require.NoError(t, err)
	ln, err := transport.Listen("127.0.0.1:0", cfg)
	require.NoError(t, err)
	defer ln.Close()
	var srvText syncbuf.Buffer
	srvErr := make(chan error, 1)
	sctx, stop := context.WithCancel(ctx)
	go func() { srvErr <- serve(sctx, ln, o, &srvText) }()
	port := strconv.Itoa(ln.Addr().(*net.UDPAddr).Port)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cert", files.ClientCert, "--key", files.ClientKey}, "give --ca with the CA that signed it"},
		{[]string{"--ca", files.CA}, "requires a client certificate (mutual TLS): give --cert and --key"},
		{other.ClientArgs("--"), "not signed by --ca " + other.CA},
		{append(files.ClientArgs("--"), "--server-name", "bulk.example"), `not valid for "bulk.example": give --server-name`},
		{[]string{"--insecure"}, "give --insecure on both ends, or on neither"},
	} {
		err := run(ctx, append([]string{"-c", "127.0.0.1", "-p", port, "-t", "0.5"}, tc.args...), io.Discard)
		require.ErrorContains(t, err, tc.want, "%q", tc.args)
	}
	// -4 resolves the host to an address; the server is still verified
	// against the name given with -c.
	var out bytes.Buffer
	require.NoError(t, run(ctx, append([]string{"-c", "localhost", "-4", "-p", port, "-t", "0.5", "-b", "5M"}, files.ClientArgs("--")...), &out), out.String())
	stop()
	require.NoError(t, <-srvErr)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-s"}, "no TLS credentials: give --cert FILE and --key FILE"},
		{[]string{"-s", "--cert", files.ServerCert}, "--cert " + files.ServerCert + " needs --key"},
		{[]string{"-s", "--insecure", "--ca", files.CA}, "--insecure and --ca exclude each other"},
		{[]string{"-s", "--cert", files.ServerCert, "--key", other.ServerKey}, "do not belong together"},
		{[]string{"-s", "--cert", "/no/cert.pem", "--key", files.ServerKey}, "--cert: open /no/cert.pem"},
		{[]string{"-c", "127.0.0.1", "--ca", "/no/ca.pem"}, "--ca: open /no/ca.pem"},
	} {
		err := run(ctx, append(tc.args, "-p", "0"), io.Discard)
		require.ErrorContains(t, err, tc.want, "%q", tc.args)
	}
}

// With --ca, the test's data port takes data connections only from the
// certificate that asked for the test: another client of the same CA that
// finds the port is turned away, and the test's own connections still
// get in.
func TestDataConnectionsAreTheClients(t *testing.T) {
	files := testcerts.Write(t, "c1")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	o, err := parseFlags(append([]string{"-s", "-1"}, files.ServerArgs("--")...))
	require.NoError(t, err)
	cfg, err := o.baseConfig()
	require.NoError(t, err)
	ln, err := transport.Listen("127.0.0.1:0", cfg)
	require.NoError(t, err)
	defer ln.Close()
	var srvText syncbuf.Buffer
	srvErr := make(chan error, 1)
	go func() { srvErr <- serve(ctx, ln, o, &srvText) }()

	clientCfg := func(cert, key string) transport.Config {
		co, err := parseFlags([]string{"-c", "127.0.0.1", "--ca", files.CA, "--cert", cert, "--key", key})
		require.NoError(t, err)
		c, err := co.baseConfig()
		require.NoError(t, err)
		return c
	}
	mine, other := clientCfg(files.ClientCert, files.ClientKey), clientCfg(files.OtherCert, files.OtherKey)
	c, err := transport.Dial(ctx, ln.Addr().String(), mine)
	require.NoError(t, err)
	defer c.Close()
	ctl := newCtrl(c)
	co, err := parseFlags([]string{"-c", "h", "-t", "0.3"})
	require.NoError(t, err)
	ts, fs := co.testParams()
	require.NoError(t, ctl.send(params{Cookie: "x", TestStart: ts, Fresh: fs}))
	var reply paramsReply
	require.NoError(t, ctl.recv(ctx, &reply, 5*time.Second))
	require.Empty(t, reply.Error)
	dataAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(reply.DataPort))

	// Its handshake succeeds (a valid certificate of the CA); the server
	// closes it as soon as it sees whose it is, which the intruder sees
	// as Dial's error or as the connection ending.
	intruder, err := transport.Dial(ctx, dataAddr, other)
	if err == nil {
		defer intruder.Close() // its socket stays open until Close, as a net.Conn's
		<-intruder.Done()
		err = intruder.Err()
	}
	require.ErrorIs(t, err, transport.ErrPeerClosed, "the server closed it")
	require.Eventually(t, func() bool { return strings.Contains(srvText.String(), "not the test's client certificate") },
		5*time.Second, 10*time.Millisecond, srvText.String())

	dc, err := transport.Dial(ctx, dataAddr, mine)
	require.NoError(t, err)
	defer dc.Close()
	require.Eventually(t, func() bool { return strings.Contains(srvText.String(), "connected to 127.0.0.1 port") },
		5*time.Second, 10*time.Millisecond, srvText.String())
	cancel()
	<-srvErr
}
