// Command monitor is the receiving half of an IoT deployment built on
// fresh: it accepts agents (examples/agent), shows the freshest status
// update each one sends, and takes in their bulk uploads.
//
//	go run ./examples/monitor -listen :4433 -cert monitor.pem -key monitor-key.pem [-ca ca.pem] [-out FILE [-force]] [-stats 10s] [-v]
//
// Connections are TLS 1.3: the monitor proves itself with -cert and -key,
// and with -ca it requires every agent to present a certificate that CA
// signed (mutual TLS) and prints the certificate's CommonName as the
// agent's identity: as it is when it is a plain token (letters, digits,
// "-", "_", ".", ":"), Go-quoted otherwise, so that nothing an agent puts
// in its certificate can start a line of its own or pass for other
// fields. go run ./examples/certgen -dir certs makes a
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
// A monitor that crashes and is started again on the same port with the
// same -key resets the connections of its previous life at once: it
// answers each agent's next datagram with a stateless reset (RFC 9000
// §10.3) whose token only a server with that key can compute, and the
// agent stops with "monitor restarted: connection reset" instead of
// sending into the void until its idle timeout (30 s). The reset key
// (transport.Transport.StatelessResetKey) is derived from the TLS private
// key (HKDF with a label), so this needs no flag and no file of its own.
// With -insecure there are no resets.
//
// For every connected agent it prints at most one line per second: how
// many updates arrived in that second, the age of the newest one when it
// arrived (now − the time the agent generated it, on the agent's clock
// corrected into ours) and its payload (printable text in backquotes,
// anything else in hex), and the upload's goodput. Every
// -stats interval, and when the agent disconnects, it prints the
// connection's transport.Stats: the time-average, 95th-percentile and peak
// age of information, updates received and dropped as stale, stream bytes,
// the clock offset the in-band estimator found.
//
// Each upload (the connection's byte stream) goes to a file of its own,
// named after -out with the agent's name and its number in this run put
// before the extension: with -out upload.bin, agent "sensor-17" (its
// certificate's CommonName; its address without a certificate) connecting
// third writes upload.sensor-17.3.bin. The name is printed when the agent
// connects. An existing file is never overwritten unless -force: the agent
// is turned away instead, with the reason. -out's directory must be
// writable when the monitor starts. Without -out uploads are read and
// discarded.
//
// The monitor commits what it stored (transport.Conn.Commit): after
// writing and syncing the file (File.Sync), every MiB and at the end, so
// the agent's "upload complete" means the bytes are on the monitor's disk,
// not merely acknowledged. If storing fails (a full disk, a write error),
// the monitor stops reading, commits only what it stored and closes the
// connection with the reason (CloseWithError, code "storage failed"), so
// the agent says how far it got and why it failed. Without -out the
// upload is committed as it is read: there is nothing to store.
//
// Flags:
//
//	-listen :4433   UDP address to listen on (host:port; port 0 picks one)
//	-cert FILE      the monitor's certificate, PEM (required unless -insecure)
//	-key FILE       its private key, PEM
//	-ca FILE        require agents' certificates signed by this CA, PEM (mutual TLS)
//	-insecure       plaintext, no TLS (UNSAFE; the agents need -insecure too)
//	-out FILE       write each upload to FILE with the agent's name and number before the extension (default: discard)
//	-force          overwrite upload files that exist (default: refuse the upload)
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
// and key that do not belong together, -out's directory not writable).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/fresh-udp/fresh/examples/internal/cli"
	"github.com/fresh-udp/fresh/examples/internal/syncbuf"
	"github.com/fresh-udp/fresh/transport"
)

func main() { cli.Main("monitor", run) }

// options are the parsed flags.
type options struct {
	listen string
	out    string
	force  bool
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
	fs.StringVar(&o.out, "out", "", "write each upload to `FILE` with the agent's name and number before the extension: upload.bin -> upload.NAME.N.bin (default: discard)")
	fs.BoolVar(&o.force, "force", false, "overwrite upload files that exist (without it such an upload is refused)")
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
	if o.force && o.out == "" {
		return nil, cli.Usagef("-force without -out: it lets uploads overwrite existing files, and without -out there are none")
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
	outs, err := newOutputs(o.out, o.force)
	if err != nil {
		return err
	}
	resetKey, err := transport.ResetKeyFromTLS(cfg.TLS)
	if err != nil {
		return err
	}
	udp, err := transport.ListenUDP(o.listen, false)
	if err != nil {
		return cli.ExplainListen("-listen", o.listen, err)
	}
	defer udp.Close()
	tr := &transport.Transport{Conn: udp, StatelessResetKey: resetKey}
	defer tr.Close()
	ln, err := tr.Listen(cfg)
	if err != nil {
		return err
	}
	out := syncbuf.NewWriter(stdout)
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
	name := cli.PeerName(conn)
	if name != "" {
		// The name is the agent's choice (its certificate's): printed
		// quoted unless it is a plain token, so that it cannot start a
		// line of its own or pass for other fields.
		peer = cli.Name(name) + "@" + peer
	} else {
		name = conn.RemoteAddr().String()
	}
	// Only an agent that got in counts: one turned away at the handshake
	// takes no number.
	dst, err := outs.open(name, int(agents.Add(1)))
	if err != nil {
		// Nowhere to keep its upload: turn the agent away, with the
		// reason, rather than accept bytes that would be thrown away.
		fmt.Fprintf(out, "%s refused: %v\n", peer, err)
		_ = conn.CloseWithError(cli.CodeStorageFailed, err.Error())
		return
	}
	where := ""
	if dst.name != "" {
		where = "; its upload goes to " + dst.name
	}
	how := ""
	if st, ok := conn.ConnectionState(); ok && st.DidResume {
		how = " (session resumed)"
		if conn.Stats().EarlyUpdatesReceived > 0 {
			how = " (session resumed, first reading in 0-RTT)"
		}
	}
	if o.creds.CA != "" {
		fmt.Fprintf(out, "%s connected%s (identity %q, certificate verified against -ca)%s\n", peer, how, cli.PeerName(conn), where)
	} else {
		fmt.Fprintf(out, "%s connected%s%s\n", peer, how, where)
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

// receiveUpload stores the connection's stream in dst until EOF, counting
// the bytes read in received, and commits what it stored (commit). If
// storing fails (a full disk) it stops reading, commits what was stored
// and closes the connection with the reason, so the agent learns both
// instead of having bytes acknowledged into a buffer nobody keeps.
func receiveUpload(conn *transport.Conn, dst *upload, received *atomic.Int64, peer string, out io.Writer) {
	start := time.Now()
	stored, err := storeUpload(conn, dst, received)
	switch {
	case err == nil:
		d := time.Since(start)
		fmt.Fprintf(out, "%s upload complete: %d bytes stored and committed in %v (%.2f Mbit/s)%s\n",
			peer, stored, d.Round(time.Millisecond), float64(stored)*8/d.Seconds()/1e6, dst.where())
	case errors.Is(err, errCommitUndelivered):
		fmt.Fprintf(out, "%s upload complete: %d bytes stored%s; the agent left before the commit reached it\n", peer, stored, dst.where())
	case errors.Is(err, transport.ErrStreamAborted):
		fmt.Fprintf(out, "%s upload aborted by the agent after %d bytes: incomplete, what was written is a prefix%s\n", peer, stored, dst.where())
	case errors.As(err, new(*storeError)): // the file failed, not the connection
		fmt.Fprintf(out, "%s upload failed after %d bytes stored: %v; closing the connection\n", peer, stored, err)
		_ = conn.CloseWithError(cli.CodeStorageFailed, err.Error())
	case received.Load() > 0:
		fmt.Fprintf(out, "%s upload ended after %d bytes stored: %v\n", peer, stored, err)
	}
}

// commitEvery is how many bytes the monitor stores between syncs and
// commits: each sync waits for the disk, so not per read, and the agent
// still sees its upload's progress.
const commitEvery = 1 << 20

// errCommitUndelivered: the upload is whole and stored, but the agent had
// closed the connection before the commit saying so could be sent.
var errCommitUndelivered = errors.New("stored, but the agent left before the commit reached it")

// storeError is a failure of the upload's storage (writing, syncing or
// closing the file), as opposed to the connection's.
type storeError struct{ err error }

func (e *storeError) Error() string { return e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

// storeUpload copies the stream into dst, syncing and committing every
// commitEvery bytes and at EOF, and returns how many bytes are stored:
// written and synced, which is what it committed. It closes dst.
func storeUpload(conn *transport.Conn, dst *upload, received *atomic.Int64) (stored int64, err error) {
	buf := make([]byte, 256<<10)
	var written int64 // written to dst, not yet synced beyond stored
	commit := func() error {
		if written == stored {
			return nil
		}
		if err := dst.Sync(); err != nil {
			return &storeError{err}
		}
		stored = written
		return conn.Commit(stored)
	}
	defer func() {
		if cerr := dst.Close(); cerr != nil && err == nil {
			err = &storeError{cerr}
		}
	}()
	for {
		n, rerr := conn.Read(buf)
		received.Add(int64(n))
		if n > 0 {
			w, werr := dst.Write(buf[:n])
			written += int64(w)
			if werr != nil {
				// What was written before the failure may still be
				// stored: commit it if it syncs, then report the failure.
				_ = commit()
				return stored, &storeError{werr}
			}
			if written-stored >= commitEvery {
				if err := commit(); err != nil {
					return stored, err
				}
			}
		}
		if rerr == io.EOF {
			err := commit()
			if errors.Is(err, transport.ErrPeerClosed) {
				// The whole upload is stored; the agent closed before
				// our commit could reach it (one that does not wait).
				return stored, errCommitUndelivered
			}
			return stored, err
		}
		if rerr != nil {
			_ = commit() // an abort: keep what arrived, say it is a prefix
			return stored, rerr
		}
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

// outputs are the files uploads go to: one per upload, named after -out
// (see uploadName).
type outputs struct {
	name  string // -out
	force bool   // -force: overwrite a file that exists
}

// newOutputs checks at start-up that -out's directory takes files, so a
// path the monitor cannot write fails before it listens.
func newOutputs(name string, force bool) (*outputs, error) {
	o := &outputs{name: name, force: force}
	if name == "" {
		return o, nil
	}
	if fi, err := os.Stat(name); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("-out %s: is a directory; give a file name, such as %s", name, filepath.Join(name, "upload.bin"))
	}
	dir := filepath.Dir(name)
	probe, err := os.CreateTemp(dir, ".monitor-probe-*")
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the probe's name would only confuse
		}
		return nil, fmt.Errorf("-out %s: cannot create files in %s: %w", name, dir, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	return o, nil
}

// uploadName is the file of the n-th agent's upload, named agent: -out
// with ".AGENT.N" before its extension (upload.bin: upload.AGENT.N.bin),
// AGENT cut to letters, digits, '-', '_' and '.' so that a certificate's
// name cannot lead out of the directory.
func uploadName(out, agent string, n int) string {
	clean := []rune(agent)
	for i, r := range clean {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			clean[i] = '_'
		}
	}
	a := strings.Trim(string(clean), ".")
	if a == "" {
		a = "agent"
	}
	ext := filepath.Ext(out)
	return fmt.Sprintf("%s.%s.%d%s", strings.TrimSuffix(out, ext), a, n, ext)
}

// upload is where one agent's upload goes.
type upload struct {
	sink
	name string // the file; empty when discarded
}

func (u *upload) where() string {
	if u.name == "" {
		return ""
	}
	return " (" + u.name + ")"
}

// sink is an upload's storage: a file, whose Sync puts the bytes on disk.
type sink interface {
	io.Writer
	Sync() error
	Close() error
}

// createSink opens the file an upload is stored in; tests replace it to
// inject storage failures. Without force an existing file is refused.
var createSink = func(name string, force bool) (sink, error) {
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if !force {
		flags |= os.O_EXCL
	}
	return os.OpenFile(name, flags, 0o644)
}

// open returns where the n-th agent's upload goes (n counts from 1, each
// once).
func (o *outputs) open(agent string, n int) (*upload, error) {
	if o.name == "" {
		return &upload{sink: discard{}}, nil
	}
	name := uploadName(o.name, agent, n)
	f, err := createSink(name, o.force)
	if errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("-out: %s exists (from an earlier run?): give -force to overwrite it, or another -out", name)
	}
	if err != nil {
		return nil, fmt.Errorf("-out: %w", err)
	}
	return &upload{sink: f, name: name}, nil
}

// discard is the sink without -out: nothing to store, so nothing to sync.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) Sync() error                 { return nil }
func (discard) Close() error                { return nil }

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

// printable is a reading as the monitor prints it: printable text (valid
// UTF-8, every character strconv.IsPrint) in backquotes, its first 120
// characters, so that it is one field whatever it says — it cannot hold a
// backquote, a line break, or the " | upload" that follows it on the
// line; anything else as its length and first bytes in hex.
func printable(p []byte) string {
	const max = 120
	s := string(p)
	text := utf8.ValidString(s) && !strings.ContainsRune(s, '`') &&
		strings.IndexFunc(s, func(r rune) bool { return !strconv.IsPrint(r) }) < 0
	if !text {
		return fmt.Sprintf("%d bytes %x", len(p), p[:min(len(p), 32)])
	}
	if r := []rune(s); len(r) > max {
		return "`" + string(r[:max]) + "`…"
	}
	return "`" + s + "`"
}
