package main

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/dscp"
	"github.com/fresh-udp/fresh/examples/internal/cli"
	"github.com/fresh-udp/fresh/examples/internal/syncbuf"
	"github.com/fresh-udp/fresh/transport"
)

// serve accepts tests until ctx ends (or, with -1, after one). As
// iperf3's server it runs one test at a time: a client that connects
// meanwhile is told the server is busy (errBusy) and hung up on.
func serve(ctx context.Context, ln *transport.Listener, o *options, stdout io.Writer) error {
	out := syncbuf.NewWriter(stdout)
	text := io.Writer(out)
	if o.json {
		text = io.Discard
	}
	banner := func() {
		fmt.Fprintln(text, "-----------------------------------------------------------")
		fmt.Fprintf(text, "Server listening on %d (fresh over UDP)\n", ln.Addr().(*net.UDPAddr).Port)
		fmt.Fprintln(text, "-----------------------------------------------------------")
	}
	banner()
	// With -1 the loop stops accepting once the one test is over; its
	// error is serve's.
	actx, stopAccepting := context.WithCancel(ctx)
	defer stopAccepting()
	var (
		wg      sync.WaitGroup
		busy    atomic.Bool
		oneRan  atomic.Bool // -1: the one test has started; no other may
		oneDone = make(chan error, 1)
	)
	defer wg.Wait()
	for {
		conn, err := ln.Accept(actx)
		if err != nil {
			select {
			case err := <-oneDone:
				return err
			default:
			}
			if ctx.Err() != nil || errors.Is(err, transport.ErrListenerClosed) {
				return nil
			}
			return err
		}
		if !busy.CompareAndSwap(false, true) {
			wg.Go(func() { refuseBusy(ctx, conn, o, text) })
			continue
		}
		wg.Go(func() {
			defer busy.Store(false)
			if o.oneOff {
				// One client's test: a connection that fails its
				// handshake (no certificate, another CA) is not that
				// client.
				if err := cli.AwaitHandshake(ctx, conn, o.creds.Insecure); err != nil {
					conn.Close()
					if ctx.Err() == nil {
						fmt.Fprintf(text, "bulk: connection from %s: %v\n", conn.RemoteAddr(), err)
					}
					return
				}
				if !oneRan.CompareAndSwap(false, true) {
					// Accepted as the one test ended: the server is
					// on its way out.
					conn.Close()
					return
				}
				oneDone <- serveTest(ctx, ln, conn, o, out, text)
				stopAccepting()
				return
			}
			if err := serveTest(ctx, ln, conn, o, out, text); err != nil {
				fmt.Fprintf(text, "bulk: %v\n", err)
			}
			banner()
		})
	}
}

// refuseBusy answers a client that connected during another's test: it
// reads the client's parameters (so the answer is not mistaken for a
// server that never read them), answers errBusy and waits for the client
// to hang up, as the normal end of a test does.
func refuseBusy(ctx context.Context, c *transport.Conn, o *options, text io.Writer) {
	defer c.Close()
	if err := cli.AwaitHandshake(ctx, c, o.creds.Insecure); err != nil {
		return
	}
	fmt.Fprintf(text, "Refused a test from %s: a test is running\n", c.RemoteAddr())
	ctl := newCtrl(c)
	var p params
	_ = ctl.recv(ctx, &p, 10*time.Second)
	if ctl.send(paramsReply{Busy: true, Error: errBusy.Error()}) != nil {
		return
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.Copy(io.Discard, ctl.br)
}

// serveTest runs one client's test on its control connection c.
func serveTest(ctx context.Context, ln *transport.Listener, c *transport.Conn, o *options, out, text io.Writer) error {
	defer c.Close()
	rep := &reporter{w: out, json: o.json, stream: o.jsonStream}
	err := runServerTest(ctx, ln, c, o, text, rep)
	if err != nil && rep.res.Start.Cookie == "" {
		// Not a test (no parameters): nothing to report but the error.
		if o.json {
			rep.res.Intervals = []intervalJ{}
			rep.res.End.Streams = []endStream{}
		}
	}
	return rep.finish(err)
}

// checkParams validates a client's parameters and returns the data
// connections' configuration.
func checkParams(p params, logger transport.Config) (transport.Config, error) {
	ts := p.TestStart
	cfg := logger
	switch {
	case ts.Protocol != "fresh":
		return cfg, fmt.Errorf("protocol %q: this server runs fresh tests", ts.Protocol)
	case ts.NumStreams < 1 || ts.NumStreams > 128:
		return cfg, fmt.Errorf("num_streams %d: want 1..128", ts.NumStreams)
	case ts.Blksize <= 0 || ts.Blksize > 1<<30:
		return cfg, fmt.Errorf("blksize %d: want 1..1G", ts.Blksize)
	case ts.Duration <= 0 || ts.Duration > 86400:
		return cfg, fmt.Errorf("duration %g: want up to a day", ts.Duration)
	case ts.Interval < 0 || ts.TargetBitrate < 0:
		return cfg, errors.New("negative interval or target_bitrate")
	case ts.Reverse == 1 && ts.Bidir == 1:
		return cfg, errors.New("reverse and bidir together")
	case p.Fresh.Window < 0 || p.Fresh.Window > 1<<40:
		return cfg, fmt.Errorf("window %d out of range", p.Fresh.Window)
	case !slices.Contains(cc.Names(), p.Fresh.CC):
		return cfg, fmt.Errorf("controller %q unknown here (known: %s)", p.Fresh.CC, strings.Join(cc.Names(), ", "))
	}
	// fresh.dscp names the class; a client that sent only iperf3's tos
	// gets its upper six bits.
	d, err := dscp.FromCode(uint8(ts.TOS >> 2))
	if p.Fresh.DSCP != "" {
		d, err = dscp.Parse(p.Fresh.DSCP)
	}
	switch {
	case err != nil:
		return cfg, fmt.Errorf("dscp: %w", err)
	case ts.TOS < 0 || ts.TOS > 255:
		return cfg, fmt.Errorf("tos %d: want 0..255", ts.TOS)
	}
	cfg.CC, cfg.StreamDSCP, cfg.SendBuffer, cfg.ReceiveWindow = p.Fresh.CC, d, p.Fresh.Window, p.Fresh.Window
	return cfg, nil
}

func runServerTest(ctx context.Context, ln *transport.Listener, c *transport.Conn, o *options, text io.Writer, rep *reporter) error {
	ra := c.RemoteAddr().(*net.UDPAddr)
	if err := cli.AwaitHandshake(ctx, c, o.creds.Insecure); err != nil {
		return fmt.Errorf("connection from %s: %w", ra, err)
	}
	fmt.Fprintf(text, "Accepted connection from %s, port %d\n", ra.IP, ra.Port)
	client := peerCert(c)
	if client != nil {
		fmt.Fprintf(text, "Client authenticated as %q (certificate verified against --ca)\n", client.Subject.CommonName)
	}
	ctl := newCtrl(c)
	var p params
	if err := ctl.recv(ctx, &p, 10*time.Second); err != nil {
		return fmt.Errorf("reading the test's parameters from %s: %w", ra, err)
	}
	res := &rep.res
	ts := p.TestStart
	res.Start = newStart(ts, p.Fresh, p.Cookie)
	res.Start.AcceptedConnection = &hostPort{Host: ra.IP.String(), Port: ra.Port}
	res.Intervals, res.End.Streams = []intervalJ{}, []endStream{}
	res.End.SenderTCPCongestion, res.End.ReceiverTCPCongestion = p.Fresh.CC, p.Fresh.CC
	base, err := o.baseConfig()
	if err != nil {
		return err
	}
	cfg, err := checkParams(p, base)
	if err != nil {
		_ = ctl.send(paramsReply{Error: err.Error()})
		return err
	}
	res.End.Fresh = freshEnd{CC: cfg.CC, DSCP: cfg.StreamDSCP.String()}

	// This test's data listener: the client's settings, an ephemeral port.
	host, _, _ := net.SplitHostPort(ln.Addr().String())
	dl, err := transport.Listen(net.JoinHostPort(host, "0"), cfg)
	if err != nil {
		_ = ctl.send(paramsReply{Error: "cannot open the data port"})
		return err
	}
	defer dl.Close()
	if err := ctl.send(paramsReply{DataPort: dl.Addr().(*net.UDPAddr).Port}); err != nil {
		return err
	}
	var conns []*transport.Conn
	defer func() { closeAll(conns) }()
	actx, cancel := context.WithTimeout(ctx, 15*time.Second)
	for len(conns) < ts.NumStreams {
		dc, err := dl.Accept(actx)
		if err != nil {
			cancel()
			return fmt.Errorf("waiting for the data connections: %w", err)
		}
		if err := cli.AwaitHandshake(actx, dc, o.creds.Insecure); err != nil {
			dc.Close()
			if actx.Err() != nil {
				cancel()
				return fmt.Errorf("waiting for the data connections: %w", err)
			}
			// One data connection that failed its handshake does not
			// end the test: the client's own are still to come.
			fmt.Fprintf(text, "data connection from %s: %v\n", dc.RemoteAddr(), err)
			continue
		}
		// With client certificates the test's data comes from the
		// client that asked for it, not from another holder of a
		// certificate who found the port.
		if client != nil && !client.Equal(peerCert(dc)) {
			fmt.Fprintf(text, "data connection from %s refused: not the test's client certificate\n", dc.RemoteAddr())
			dc.Close()
			continue
		}
		conns = append(conns, dc)
	}
	cancel()
	res.Start.Connected = connectedOf(conns)
	res.Start.TCPMSSDefault = conns[0].Stats().DatagramSize
	for _, cn := range res.Start.Connected {
		fmt.Fprintf(text, "[%3d] local %s port %d connected to %s port %d\n", cn.Socket, cn.LocalHost, cn.LocalPort, cn.RemoteHost, cn.RemotePort)
	}
	if o.verbose {
		fmt.Fprintf(text, "Starting Test: protocol: fresh (cc %s, dscp %s), %d streams, %d byte blocks, omitting 0 seconds, %g second test, tos %d\n",
			cfg.CC, res.End.Fresh.DSCP, ts.NumStreams, ts.Blksize, ts.Duration, ts.TOS)
	}
	rep.started()
	fmt.Fprintln(text, "[ ID] Interval           Transfer     Bitrate         Retr  Cwnd")
	settings := freshSettings{CC: cfg.CC, DSCP: cfg.StreamDSCP.String()}
	t := &test{o: ts, streams: newStreams(conns, ts, false, p.Fresh.Window), conns: conns, fresh: settings, rep: rep, text: text, who: "server"}
	// The client writes its results first, once its part is done; the
	// control connection is read meanwhile, so that a client that went
	// away (closed the connection, was interrupted, or fell silent for the
	// idle timeout) ends the test now instead of after -t.
	tctx, endTest := context.WithCancelCause(ctx)
	defer endTest(nil)
	dur := time.Duration(ts.Duration * float64(time.Second))
	peerc := make(chan error, 1)
	var (
		peer    results
		peerErr error
		peerIn  bool // peerErr is set: the reader below is done
	)
	awaitPeer := func() error {
		if !peerIn {
			peerErr, peerIn = <-peerc, true
		}
		return peerErr
	}
	defer func() {
		endTest(nil)
		_ = awaitPeer()
	}()
	go func() {
		err := ctl.recv(tctx, &peer, dur+drainTimeout(dur))
		switch {
		case err != nil && tctx.Err() == nil:
			err = fmt.Errorf("the client went away: %w", err)
			endTest(err)
		case err == nil && peer.Error != "":
			err = fmt.Errorf("the client: %s", cli.Text(peer.Error))
			endTest(err)
		}
		peerc <- err
	}()
	cpu := cpuNow()
	if err := t.run(tctx); err != nil {
		if tctx.Err() == nil {
			// A data connection that failed may be the client leaving
			// (its Ctrl-C closes the data first): its reason, if it comes
			// soon, says more than the data's error.
			select {
			case <-tctx.Done():
			case <-time.After(2 * time.Second):
			}
		}
		if cause := context.Cause(tctx); tctx.Err() != nil && ctx.Err() == nil {
			// The client ended the test: this side's figures so far.
			mine := t.local(cpu.since())
			t.finish(res, mine, results{})
			if f, ok := t.senderFresh(mine, results{}); ok {
				res.End.Fresh = f
			}
			return cause
		}
		_ = ctl.send(results{Error: err.Error()}) // the client may be gone
		return err
	}
	mine := t.local(cpu.since())
	if err := awaitPeer(); err != nil {
		err = fmt.Errorf("reading the client's results: %w", err)
		_ = ctl.send(results{Error: err.Error()})
		return err
	}
	if err := ctl.send(mine); err != nil {
		return fmt.Errorf("sending the results: %w", err)
	}
	if peer.Error != "" {
		return fmt.Errorf("the client: %s", peer.Error)
	}
	t.finish(res, mine, peer)
	// The figures of the side that sent (the client's, but with -R or
	// --bidir), as the client reports them.
	if f, ok := t.senderFresh(mine, peer); ok {
		res.End.Fresh = f
	} else {
		res.End.Fresh = *mine.Fresh
	}
	// Wait for the client to read the results and hang up (its control
	// stream's EOF), so our Close does not overtake it.
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.Copy(io.Discard, ctl.br)
	return nil
}

// peerCert is the certificate the peer presented, or nil.
func peerCert(c *transport.Conn) *x509.Certificate {
	st, ok := c.ConnectionState()
	if !ok || len(st.PeerCertificates) == 0 {
		return nil
	}
	return st.PeerCertificates[0]
}
