package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/fresh-udp/fresh/examples/internal/cli"
	"github.com/fresh-udp/fresh/transport"
)

// errInterrupted is the client's error when Ctrl-C (SIGINT) or SIGTERM
// ended its test, after it printed the summary so far; iperf3's words.
var errInterrupted = errors.New("interrupt - the client has terminated")

// errBusy is the server's answer to a client while another's test runs,
// in iperf3's words (it runs one test at a time too).
var errBusy = errors.New("the server is busy running a test. try again later")

// client runs one test against the server and reports it.
func client(ctx context.Context, o *options, out io.Writer) error {
	rep := &reporter{w: out, json: o.json, stream: o.jsonStream}
	err := runClient(ctx, o, out, rep)
	if err != nil && ctx.Err() != nil && !errors.Is(err, errInterrupted) {
		// Interrupted before the test ran (dialling, the parameters):
		// there is nothing to summarise.
		err = errInterrupted
	}
	return rep.finish(err)
}

// testParams are the test's parameters as both sides report them.
func (o *options) testParams() (testStart, freshSettings) {
	ts := testStart{Protocol: "fresh", NumStreams: o.parallel, Blksize: o.blksize,
		Duration: o.duration.Seconds(), TargetBitrate: o.rate, Interval: o.interval.Seconds()}
	if o.reverse {
		ts.Reverse = 1
	}
	if o.bidir {
		ts.Bidir = 1
	}
	f := freshSettings{CC: o.cc, DSCP: "BE", Window: o.window}
	if o.dscp.IsSet() {
		ts.TOS = int(o.dscp.Code()) << 2
		f.DSCP = o.dscp.String()
	}
	return ts, f
}

func runClient(ctx context.Context, o *options, out io.Writer, rep *reporter) error {
	text := out
	if o.json {
		text = io.Discard
	}
	host := o.host
	if o.network != "" {
		ips, err := net.DefaultResolver.LookupNetIP(ctx, o.network, o.host)
		if err != nil || len(ips) == 0 {
			return fmt.Errorf("-c %s: no %s address: %v", o.host, map[string]string{"ip4": "IPv4", "ip6": "IPv6"}[o.network], err)
		}
		host = ips[0].Unmap().String()
	}
	ts, fs := o.testParams()
	res := &rep.res
	res.Start = newStart(ts, fs, newCookie())
	res.Start.ConnectingTo = &hostPort{Host: o.host, Port: o.port}
	res.Intervals, res.End.Streams = []intervalJ{}, []endStream{}
	res.End.SenderTCPCongestion, res.End.ReceiverTCPCongestion = o.cc, o.cc
	res.End.Fresh = freshEnd{CC: o.cc, DSCP: fs.DSCP}

	fmt.Fprintf(text, "Connecting to host %s, port %d\n", o.host, o.port)
	if o.reverse {
		fmt.Fprintf(text, "Reverse mode, remote host %s is sending\n", o.host)
	}
	base, err := o.baseConfig()
	if err != nil {
		return err
	}
	c, err := transport.Dial(ctx, net.JoinHostPort(host, strconv.Itoa(o.port)), base)
	if err != nil {
		return o.creds.ExplainDial(err)
	}
	defer c.Close()
	ctl := newCtrl(c)
	if err := ctl.send(params{Cookie: res.Start.Cookie, TestStart: ts, Fresh: fs}); err != nil {
		return fmt.Errorf("sending the parameters: %w", err)
	}
	var reply paramsReply
	if err := ctl.recv(ctx, &reply, 10*time.Second); err != nil {
		return fmt.Errorf("no answer to the parameters (is the server fresh's bulk -s?): %w", err)
	}
	switch {
	case reply.Busy:
		return errBusy
	case reply.Error != "":
		return fmt.Errorf("the server refused the test: %s", cli.Text(reply.Error))
	}

	// The data connections, to the test's own port.
	cfg := base
	cfg.CC, cfg.StreamDSCP, cfg.SendBuffer, cfg.ReceiveWindow = o.cc, o.dscp, o.window, o.window
	dataAddr := net.JoinHostPort(c.RemoteAddr().(*net.UDPAddr).IP.String(), strconv.Itoa(reply.DataPort))
	var conns []*transport.Conn
	defer func() { closeAll(conns) }()
	for range o.parallel {
		dc, err := transport.Dial(ctx, dataAddr, cfg)
		if err != nil {
			return fmt.Errorf("data connection: %w", err)
		}
		conns = append(conns, dc)
	}
	res.Start.Connected = connectedOf(conns)
	res.Start.TCPMSSDefault = conns[0].Stats().DatagramSize
	for _, cn := range res.Start.Connected {
		fmt.Fprintf(text, "[%3d] local %s port %d connected to %s port %d\n", cn.Socket, cn.LocalHost, cn.LocalPort, cn.RemoteHost, cn.RemotePort)
	}
	if o.verbose {
		fmt.Fprintf(text, "Starting Test: protocol: fresh (cc %s, dscp %s), %d streams, %d byte blocks, omitting 0 seconds, %g second test, tos %d\n",
			o.cc, fs.DSCP, o.parallel, o.blksize, ts.Duration, ts.TOS)
	}
	rep.started()
	fmt.Fprintln(text, "[ ID] Interval           Transfer     Bitrate         Retr  Cwnd")

	t := &test{o: ts, streams: newStreams(conns, ts, true, o.window), conns: conns, fresh: fs, rep: rep, text: text, who: "client"}
	cpu := cpuNow()
	// Ctrl-C during the test or the wait for the server's results prints
	// this side's summary so far, as iperf3's client does, and tells the
	// server, which ends its side at once instead of running out -t.
	interrupted := func(mine results) error {
		_ = ctl.send(results{Error: errInterrupted.Error()})
		t.finish(res, mine, results{})
		if f, ok := t.senderFresh(mine, results{}); ok {
			res.End.Fresh = f
		}
		// The test's data is not whole: abort its connections rather than
		// linger for bytes nobody will read, so Ctrl-C exits at once.
		for _, dc := range conns {
			_ = dc.Abort()
		}
		conns = nil
		return errInterrupted
	}
	if err := t.run(ctx); err != nil {
		if ctx.Err() != nil {
			return interrupted(t.local(cpu.since()))
		}
		return err
	}
	mine := t.local(cpu.since())
	if err := ctl.send(mine); err != nil {
		return fmt.Errorf("sending the results: %w", err)
	}
	var peer results
	// The server answers once it has read everything sent.
	if err := ctl.recv(ctx, &peer, drainTimeout(o.duration)); err != nil {
		if ctx.Err() != nil {
			return interrupted(mine)
		}
		return fmt.Errorf("reading the server's results: %w", err)
	}
	if peer.Error != "" {
		return fmt.Errorf("the server: %s", cli.Text(peer.Error))
	}
	t.finish(res, mine, peer)
	// The figures of the side that sent: with -R the server's, as a
	// receiver measures no RTT.
	f, known := t.senderFresh(mine, peer)
	if !known {
		f = *mine.Fresh
	}
	res.End.Fresh = f
	if o.verbose {
		// iperf3's roles: with -R the client is the receiver.
		local, remote := "sender", "receiver"
		if o.reverse {
			local, remote = remote, local
		}
		fmt.Fprintf(text, "CPU Utilization: local/%s %.1f%% (%.1f%%u/%.1f%%s), remote/%s %.1f%% (%.1f%%u/%.1f%%s)\n",
			local, res.End.CPU.HostTotal, res.End.CPU.HostUser, res.End.CPU.HostSystem,
			remote, res.End.CPU.RemoteTotal, res.End.CPU.RemoteUser, res.End.CPU.RemoteSystem)
	}
	switch {
	case !known:
		fmt.Fprintf(text, "cc %s: no RTT figures: the server sent the data and did not report its own\n", f.CC)
	case o.verbose:
		fmt.Fprintf(text, "fresh: cc %s, dscp %s, srtt %dµs, min rtt %dµs, min owd %dµs, %d packets sent, %d lost, %d retransmitted\n",
			f.CC, f.DSCP, f.SRTT, f.MinRTT, f.MinOWD, f.PacketsSent, f.PacketsLost, f.Retransmitted)
	default:
		fmt.Fprintf(text, "cc %s: srtt %dµs, min rtt %dµs, %d packets lost\n", f.CC, f.SRTT, f.MinRTT, f.PacketsLost)
	}
	fmt.Fprintln(text, "\nbulk Done.")
	// Close the data connections, then the control one: the server reads
	// to the control connection's EOF before it closes its side.
	closeAll(conns)
	conns = nil
	if err := c.CloseWrite(); err != nil && !errors.Is(err, transport.ErrPeerClosed) {
		return err
	}
	return nil
}

// systemInfo stands in for iperf3's uname line.
func systemInfo() string {
	h, _ := os.Hostname()
	return fmt.Sprintf("%s %s/%s %s", h, runtime.GOOS, runtime.GOARCH, runtime.Version())
}
