// Command monitor is the receiving half of an IoT deployment built on
// fresh: it accepts agents (examples/agent), shows the freshest status
// update each one sends, and takes in their bulk uploads.
//
//	go run ./examples/monitor -listen :4433 -cert monitor.pem -key monitor-key.pem [-ca ca.pem] [-out FILE] [-stats 10s] [-v]
//
// Connections are TLS 1.3: the monitor proves itself with -cert and -key,
// and with -ca it requires every agent to present a certificate that CA
// signed (mutual TLS) and prints the certificate's CommonName as the
// agent's identity. go run ./examples/certgen -dir certs makes a
// throwaway set (certs/ca.pem, monitor.pem, monitor-key.pem, agent.pem,
// agent-key.pem):
//
//	go run ./examples/monitor -listen 127.0.0.1:4433 -cert certs/monitor.pem -key certs/monitor-key.pem -ca certs/ca.pem
//
// -insecure runs in plaintext instead, with no credentials: anyone on the
// path can read the readings and the upload, forge them and close the
// connection. Use it only on a network you trust; the agents must run
// with -insecure too.
//
// For every connected agent it prints at most one line per second: how
// many updates arrived in that second, the age of the newest one when it
// arrived (now − the time the agent generated it, on the agent's clock
// corrected into ours) and its payload, and the upload's goodput. Every
// -stats interval, and when the agent disconnects, it prints the
// connection's transport.Stats: the time-average, 95th-percentile and peak
// age of information, updates received and dropped as stale, stream bytes,
// the clock offset the in-band estimator found.
//
// The upload (the connection's byte stream) is written to -out, or discarded
// without it. With several agents, the first writes FILE, the n-th FILE.n.
// FILE is created before the monitor listens, so a path it cannot write
// fails at start-up. If writing an upload fails later (a full disk), the
// monitor closes that agent's connection at once rather than go on reading
// data it cannot keep, so the agent sees its upload fail.
//
// Flags:
//
//	-listen :4433   UDP address to listen on (host:port; port 0 picks one)
//	-cert FILE      the monitor's certificate, PEM (required unless -insecure)
//	-key FILE       its private key, PEM
//	-ca FILE        require agents' certificates signed by this CA, PEM (mutual TLS)
//	-insecure       plaintext, no TLS (UNSAFE; the agents need -insecure too)
//	-out FILE       write uploads to FILE (default: discard)
//	-ntp SERVER     NTP-correct this host's clock (host or host:port)
//	-stats 10s      interval of the full statistics (0: only at disconnect)
//	-0rtt           accept agents' first readings in 0-RTT (agents resuming with -0rtt FILE)
//	-v              debug logs (log/slog) on stderr; silent otherwise
//
// With -0rtt an agent that resumes its TLS session sends its first reading
// with its first flight, a round trip sooner; the "connected" line says
// so. Only readings are taken in 0-RTT, never uploads, because early data
// can be replayed (see transport.Config.Allow0RTT and SECURITY.md).
//
// It runs until Ctrl-C (or SIGTERM), then closes every connection and exits 0.
// It exits 2 on a usage error (no credentials and no -insecure, say), 1 if
// it cannot start (a credential file missing or unreadable, a certificate
// and key that do not belong together, -out not writable).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fresh-udp/fresh/examples/internal/cli"
	"github.com/fresh-udp/fresh/transport"
)

func main() { cli.Main("monitor", run) }

// options are the parsed flags.
type options struct {
	listen string
	out    string
	ntp    string
	stats  time.Duration
	zrtt   bool
	creds  cli.Credentials
	logger *slog.Logger
}

func parseFlags(args []string) (*options, error) {
	fs := flag.NewFlagSet("monitor", flag.ContinueOnError)
	o := &options{}
	fs.StringVar(&o.listen, "listen", ":4433", "UDP `address` to listen on")
	fs.StringVar(&o.out, "out", "", "write uploads to `FILE` (default: discard); the n-th agent's to FILE.n")
	fs.StringVar(&o.ntp, "ntp", "", "NTP `server` correcting this host's clock (host or host:port)")
	fs.DurationVar(&o.stats, "stats", 10*time.Second, "interval of the full statistics (0: only when an agent leaves)")
	fs.BoolVar(&o.zrtt, "0rtt", false, "accept agents' first readings in 0-RTT (TLS early data; readings only, never uploads)")
	o.creds.Register(fs, "server", "-")
	verbose := fs.Bool("v", false, "debug logs on stderr")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, &cli.UsageError{Err: err}
	}
	if o.zrtt && o.creds.Insecure {
		return nil, cli.Usagef("-0rtt and -insecure exclude each other: 0-RTT resumes a TLS session")
	}
	if fs.NArg() > 0 {
		return nil, cli.Usagef("unexpected argument %q (flags go before it; see -h)", fs.Arg(0))
	}
	if o.stats < 0 {
		return nil, cli.Usagef("-stats %v: must not be negative (0 prints only when an agent leaves)", o.stats)
	}
	o.logger = cli.Logger(*verbose)
	return o, nil
}

// run listens until ctx ends. Lines go to stdout, which it serialises.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	cfg := transport.Config{NTPServer: o.ntp, Logger: o.logger, Allow0RTT: o.zrtt}
	if err := o.creds.Config(&cfg, true); err != nil {
		return err
	}
	outs, err := newOutputs(o.out)
	if err != nil {
		return err
	}
	defer outs.Close()
	ln, err := transport.Listen(o.listen, cfg)
	if err != nil {
		return cli.ExplainListen("-listen", o.listen, err)
	}
	out := &lockedWriter{w: stdout}
	fmt.Fprintf(out, "monitor: listening on %s (%s)\n", ln.Addr(), security(o))

	var wg sync.WaitGroup
	var agents atomic.Int64 // numbers the agents that completed the handshake
	for {
		conn, err := ln.Accept(ctx)
		if err != nil {
			ln.Close() // closes every connection, which ends their goroutines
			wg.Wait()
			if ctx.Err() != nil {
				return nil // Ctrl-C: a normal end
			}
			return err
		}
		o.logger.Debug("accepted", "peer", conn.RemoteAddr())
		wg.Go(func() { serve(ctx, conn, &agents, o, outs, out) })
	}
}

// security says in a few words how agents are authenticated.
func security(o *options) string {
	switch {
	case o.creds.Insecure:
		return "INSECURE: plaintext, agents are not authenticated"
	case o.creds.CA != "":
		return "TLS; agents must present a certificate signed by " + o.creds.CA
	}
	return "TLS; agents are not authenticated (give -ca to require their certificates)"
}

// serve handles one agent until it disconnects or ctx ends: its upload goes
// to the output of its number, its updates to the newest-reading tracker, and once a
// second a line reports both.
func serve(ctx context.Context, conn *transport.Conn, agents *atomic.Int64, o *options, outs *outputs, out io.Writer) {
	peer := conn.RemoteAddr().String()
	// The agent's identity is its certificate's name (with -ca, verified
	// against it), known once the handshake completed.
	if err := cli.AwaitHandshake(ctx, conn, o.creds.Insecure); err != nil {
		if ctx.Err() == nil {
			fmt.Fprintf(out, "%s not connected: %v\n", peer, err)
		}
		conn.Close()
		return
	}
	if name := cli.PeerName(conn); name != "" {
		peer = name + "@" + peer
	}
	// Only an agent that got in counts: one turned away does not take
	// -out's name from the next.
	dst, err := outs.open(int(agents.Add(1)))
	if err != nil {
		// Nowhere to keep its upload: turn the agent away rather than
		// accept bytes that would be thrown away.
		fmt.Fprintf(out, "%s refused: %v\n", peer, err)
		conn.Close()
		return
	}
	how := ""
	if st, ok := conn.ConnectionState(); ok && st.DidResume {
		how = " (session resumed)"
		if conn.Stats().EarlyUpdatesReceived > 0 {
			how = " (session resumed, first reading in 0-RTT)"
		}
	}
	if o.creds.CA != "" {
		fmt.Fprintf(out, "%s connected%s (identity %q, certificate verified against -ca)\n", peer, how, cli.PeerName(conn))
	} else {
		fmt.Fprintf(out, "%s connected%s\n", peer, how)
	}

	var received atomic.Int64
	uploadDone := make(chan struct{})
	go func() {
		defer close(uploadDone)
		receiveUpload(conn, dst, &received, peer, out)
	}()
	var newest newestUpdate
	updCtx, cancel := context.WithCancel(ctx)
	updDone := make(chan struct{})
	go func() {
		defer close(updDone)
		newest.read(updCtx, conn)
	}()
	defer func() {
		// Closing the connection ends both readers; wait for them so the
		// output file is closed before we return.
		cancel()
		conn.Close()
		<-uploadDone
		<-updDone
	}()

	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var statsC <-chan time.Time
	if o.stats > 0 {
		st := time.NewTicker(o.stats)
		defer st.Stop()
		statsC = st.C
	}
	var prevCount, prevBytes int64
	prevT := time.Now()
	for {
		select {
		case <-ctx.Done():
			printStats(out, peer, conn.Stats())
			return
		case <-conn.Done():
			<-uploadDone
			printStats(out, peer, conn.Stats())
			if err := conn.Err(); errors.Is(err, transport.ErrPeerClosed) {
				fmt.Fprintf(out, "%s disconnected\n", peer)
			} else {
				fmt.Fprintf(out, "%s disconnected: %v\n", peer, err)
			}
			return
		case <-statsC:
			printStats(out, peer, conn.Stats())
		case now := <-tick.C:
			u, count := newest.get()
			b := received.Load()
			dt := now.Sub(prevT).Seconds()
			if count == prevCount && b == prevBytes {
				continue // nothing new: stay quiet
			}
			line := fmt.Sprintf("%s %s", now.Format("15:04:05"), peer)
			if count > prevCount {
				line += fmt.Sprintf(" updates %.0f/s, newest age %v: %s",
					float64(count-prevCount)/dt, u.Age.Round(100*time.Microsecond), printable(u.Payload))
			}
			if b > prevBytes {
				line += fmt.Sprintf(" | upload %.2f Mbit/s", float64(b-prevBytes)*8/dt/1e6)
			}
			fmt.Fprintln(out, line)
			prevCount, prevBytes, prevT = count, b, now
		}
	}
}

// receiveUpload copies the connection's stream to dst until EOF, counting
// the bytes in received, and closes dst. If dst fails (a full disk) it
// closes the connection, so the agent's upload fails too instead of being
// acknowledged into a buffer nobody keeps.
func receiveUpload(conn *transport.Conn, dst io.WriteCloser, received *atomic.Int64, peer string, out io.Writer) {
	start := time.Now()
	n, err := io.Copy(dst, countingReader{conn, received})
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	switch {
	case err == nil:
		d := time.Since(start)
		fmt.Fprintf(out, "%s upload complete: %d bytes in %v (%.2f Mbit/s)\n",
			peer, n, d.Round(time.Millisecond), float64(n)*8/d.Seconds()/1e6)
	case errors.Is(err, transport.ErrStreamAborted):
		fmt.Fprintf(out, "%s upload aborted by the agent after %d bytes: incomplete, what was written is a prefix\n", peer, n)
	case errors.As(err, new(*os.PathError)): // the file failed, not the connection
		fmt.Fprintf(out, "%s upload failed after %d bytes: %v; closing the connection\n", peer, n, err)
		conn.Close()
	case n > 0:
		fmt.Fprintf(out, "%s upload ended after %d bytes: %v\n", peer, n, err)
	}
}

// newestUpdate keeps the freshest update an agent sent and how many came.
type newestUpdate struct {
	mu    sync.Mutex
	u     transport.Update
	count int64
}

// read takes updates as they arrive until ctx ends or the connection closes.
// ReadUpdate returns the freshest received since the last call; any older
// one that arrives later is dropped as stale.
func (l *newestUpdate) read(ctx context.Context, conn *transport.Conn) {
	for {
		u, err := conn.ReadUpdate(ctx)
		if err != nil {
			return
		}
		l.mu.Lock()
		l.u = u
		l.count++
		l.mu.Unlock()
	}
}

func (l *newestUpdate) get() (transport.Update, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.u, l.count
}

// printStats writes the connection's statistics on two lines.
func printStats(w io.Writer, peer string, s transport.Stats) {
	fmt.Fprintf(w, "%s stats: age mean %v p95 %v peak %v; updates %d received, %d stale; agent clock offset %v (synced %t)\n",
		peer, s.Age.Mean.Round(100*time.Microsecond), s.Age.P95.Round(100*time.Microsecond), s.Age.Peak.Round(100*time.Microsecond),
		s.UpdatesReceived, s.UpdatesStale, s.ClockOffset.Round(100*time.Microsecond), s.ClockSynced)
	fmt.Fprintf(w, "%s stats: stream %d bytes received; %d packets received, %d duplicates, %d malformed\n",
		peer, s.StreamBytesReceived, s.PacketsReceived, s.Duplicates, s.Malformed)
}

// outputs are the files uploads go to: FILE for the first agent, created
// before the monitor listens, and FILE.n for the n-th.
type outputs struct {
	name  string
	first *os.File // until the first agent takes it
}

func newOutputs(name string) (*outputs, error) {
	o := &outputs{name: name}
	if name == "" {
		return o, nil
	}
	f, err := os.Create(name)
	if err != nil {
		return nil, fmt.Errorf("-out: %w", err)
	}
	o.first = f
	return o, nil
}

// open returns where the n-th agent's upload goes (n counts from 1, each
// once).
func (o *outputs) open(n int) (io.WriteCloser, error) {
	switch {
	case o.name == "":
		return nopCloser{io.Discard}, nil
	case n == 1:
		f := o.first
		o.first = nil
		return f, nil
	}
	return os.Create(fmt.Sprintf("%s.%d", o.name, n))
}

// Close closes FILE if no agent came to take it.
func (o *outputs) Close() error {
	if o.first != nil {
		return o.first.Close()
	}
	return nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// printable quotes a payload unless it is short printable text.
func printable(p []byte) string {
	const max = 120
	s := string(p)
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == '\uFFFD' {
			return fmt.Sprintf("%d bytes %x", len(p), p[:min(len(p), 32)])
		}
	}
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

// lockedWriter serialises writes from several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
