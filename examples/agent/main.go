// Command agent is the device half of an IoT deployment built on fresh: it
// samples a sensor and keeps a monitor (examples/monitor) updated with the
// freshest reading while it uploads a file over the same connection.
//
//	go run ./examples/agent -server monitor.example:4433 -ca ca.pem [-cert agent.pem -key agent-key.pem] [-upload FILE | -upload-bytes N] [flags]
//
// The connection is TLS 1.3. The agent verifies the monitor's certificate
// against -ca (the system's roots without it) and the host of -server, or
// -server-name if the certificate names the monitor otherwise; with -cert
// and -key it presents its own certificate, which a monitor running with
// -ca requires (mutual TLS) and whose CommonName identifies the agent.
// go run ./examples/certgen -dir certs makes a throwaway set:
//
//	go run ./examples/agent -server 127.0.0.1:4433 -ca certs/ca.pem -cert certs/agent.pem -key certs/agent-key.pem
//
// -insecure runs in plaintext instead: no one is authenticated and anyone
// on the path can read, forge and cut off the readings and the upload. Use
// it only on a network you trust; the monitor must run with -insecure too.
//
// Updates and upload share one fresh connection but not one queue:
//
//   - Every 1/-rate-hz the agent takes a reading (a small JSON object from a
//     simulated temperature/humidity/vibration sensor) and hands it to
//     Conn.SendUpdate. That never blocks and never queues: the newest
//     reading replaces one not yet sent, and the Age Control Protocol sends
//     as many per second as keep the monitor's view freshest (at most
//     -rate-hz), marked with -dscp so a DiffServ bottleneck serves them
//     ahead of the upload. Lost updates are not retransmitted; the next
//     reading is newer anyway.
//   - The upload (-upload FILE, or -upload-bytes N random bytes) goes on the
//     connection's reliable byte stream under the -cc congestion controller;
//     when it is written the agent half-closes the stream (CloseWrite) and
//     keeps sending updates.
//
// An upload is complete when the monitor has committed it: stored every
// byte (written and synced to its disk) and said so with Conn.Commit. An
// acknowledgement only says the bytes reached the monitor's receive
// buffer, so the agent waits for the commit (Conn.WaitCommitted) and then
// prints "agent: upload complete: N bytes committed". A monitor that
// cannot store it (a full disk) commits what it stored and closes with
// the reason; the agent then prints "upload failed: monitor could not
// store it after N bytes: REASON" and exits 1.
//
// If the monitor goes away, the agent says so and exits 1 rather than
// upload into the void until -duration; run it again (or from a
// supervisor that restarts it) to reconnect. How it knows, by what the
// transport tells it:
//
//   - The monitor restarted (it crashed and was started again with the
//     same key): its first answer is a stateless reset, and the agent
//     prints "monitor restarted: connection reset" at once.
//   - The monitor was killed, or its host lost it: nothing answers. After
//     four retransmission timeouts in a row without an answer (about 3 s
//     on a short path) the agent prints "path dead". If the monitor's host
//     answered the agent's datagrams with ICMP port unreachable (nothing
//     listens there: the monitor process is gone, and a new one could not
//     take over this connection anyway), it gives up at once: "monitor
//     went away: … the monitor is not running". Otherwise (a frozen
//     monitor, a cut network) it waits -give-up (10 s) for an answer, then
//     gives up: "monitor went away: no answer from … and stayed dead for
//     …". Either message names -server and what to check.
//   - The monitor closed the connection (it was stopped, or closed this
//     agent's): "the monitor at … closed the connection".
//   - Nothing at all was heard for the idle timeout (30 s; only when
//     -give-up is longer): "monitor went away: nothing heard from … for
//     the idle timeout".
//   - -duration ran out while the path was dead, before -give-up: the
//     error says the monitor did not answer, not "raise -duration".
//
// It runs until Ctrl-C (or SIGTERM) or -duration, then closes the
// connection; an upload written but not yet committed is waited for up to
// 5 s more. It exits non-zero if the upload did not complete (every byte
// committed by the monitor) — also when -duration ended it first, in which
// case it aborts the connection so the monitor cannot take the part it got
// for the whole.
//
// Once per -stats interval it prints a status line:
//
//	3.0s upload  0.75 MB acked  1.92 Mbit/s | srtt 43.1ms owd min/cur 20.2/23.9ms | cwnd 14.4 kB | updates 27 sent (acp 26.3/s)
//
// upload: stream bytes the monitor acknowledged so far, and the goodput over
// the interval; srtt: smoothed round-trip time; owd min/cur: the one-way
// delay the congestion controller acts on, its minimum (the path's
// propagation delay) and current value (propagation plus queueing). One-way
// delays need the two clocks' offset, which the in-band estimator learns
// from the packets in a few seconds; until then the controller uses
// delays derived from the round-trip time and the field reads "delay … (from
// rtt)" instead of "owd".
// cwnd: the congestion window; updates: readings sent in the interval and
// the rate ACP currently allows. "| PATH DEAD" ends the line while the
// monitor does not answer.
//
// A "clock:" line says, whenever it changes, whether this host's clock is
// NTP-synchronised (with -ntp: offset and server stratum) and whether the
// one-way delays are measured yet: the monitor corrects them with its
// in-band estimate of the clock offset, trusted after a few seconds.
// NTP on both hosts does not make that estimate unnecessary: fresh does not
// assume the two clocks agree unless told so (transport.Config.TrustPeerClock).
//
// Flags:
//
//	-server HOST:PORT   the monitor (required)
//	-ca FILE            verify the monitor against this CA, PEM (default: the system's roots)
//	-cert FILE          this agent's certificate, PEM, for a monitor that requires one
//	-key FILE           its private key, PEM
//	-server-name NAME   the name the monitor's certificate must be valid for (default: HOST)
//	-insecure           plaintext, no TLS (UNSAFE; the monitor needs -insecure too)
//	-cc owd             stream congestion controller: owd, cubic, reno, htcp, rttdelay, …
//	-rate-hz 200        sensing rate, readings per second (also ACP's ceiling)
//	-dscp CS7           DSCP of the updates: CSn, AFxy, EF, BE, or 0..63
//	-upload FILE        upload FILE ("-": standard input)
//	-upload-bytes N     upload N random bytes (if no -upload; 0: updates only);
//	                    N may have a unit: 1e9, 1GB, 10MiB, 64K
//	-send-buffer 0      the most bytes the upload may have written but not yet
//	                    acknowledged (transport.Config.SendBuffer; 0: its default,
//	                    4 MiB). The buffer starts at 64 KiB and grows toward this
//	                    while the path's bandwidth-delay product needs it. Units as
//	                    -upload-bytes
//	-ntp SERVER         NTP-correct the clock that stamps updates (host or host:port)
//	-duration 0         stop after this long (0: run until Ctrl-C)
//	-stats 1s           interval of the status line (0: only at the end)
//	-give-up 10s        once the path is dead, wait this long for the monitor to answer
//	                    again, then exit 1: the monitor went away (0: at once)
//	-0rtt FILE          keep the TLS session ticket and the monitor's token for the next
//	                    connection in FILE (mode 0600) and resume from them: the next run
//	                    skips the certificate exchange and the Retry and, with a monitor
//	                    running -0rtt, sends its first reading in its first flight (0-RTT)
//	-qlog DIR           write a qlog trace of the connection into DIR for qvis
//	                    (default $QLOGDIR; empty: off)
//	-v                  debug logs (log/slog) on stderr; warnings only otherwise
//
// A device that sleeps between readings and runs the agent once per
// wake-up should give -0rtt: its first reading then reaches the monitor a
// round trip sooner (one full RTT; bench/RESULTS.md, "0-RTT"), and the
// handshake sends no certificates. Only updates travel in 0-RTT, never the
// upload: early data can be replayed, and only an update, which the
// monitor keeps only if it is the newest, is harmless to replay (SECURITY.md).
//
// The agent uses only the standard library and fresh's own packages, so it
// cross-compiles for small Linux devices: CGO_ENABLED=0 GOOS=linux GOARCH=arm
// GOARM=7 go build ./examples/agent (see measure.sh for its size and memory).
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/dscp"
	"github.com/fresh-udp/fresh/examples/internal/cli"
	"github.com/fresh-udp/fresh/internal/units"
	"github.com/fresh-udp/fresh/qlog"
	"github.com/fresh-udp/fresh/transport"
)

func main() { cli.Main("agent", run) }

// options are the parsed flags.
type options struct {
	server      string
	cc          string
	hz          float64
	dscp        dscp.Codepoint
	upload      string
	uploadBytes units.Size
	sendBuffer  units.Size
	ntp         string
	duration    time.Duration
	stats       time.Duration
	giveUp      time.Duration
	creds       cli.Credentials
	tickets     string
	qlog        string
	logger      *slog.Logger
}

func parseFlags(args []string) (*options, error) {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	o := &options{dscp: dscp.CS7, creds: cli.Credentials{Peer: "monitor"}}
	fs.StringVar(&o.server, "server", "", "the monitor's `HOST:PORT` (required)")
	fs.StringVar(&o.cc, "cc", "owd", "stream congestion `controller` (owd, cubic, reno, htcp, rttdelay, …)")
	fs.Float64Var(&o.hz, "rate-hz", 200, "sensing rate, readings per second (also the most updates ACP sends)")
	fs.Var(&o.dscp, "dscp", "DSCP `class` of the updates: CSn, AFxy, EF, BE, or 0..63")
	fs.StringVar(&o.upload, "upload", "", "upload `FILE` (\"-\": standard input)")
	fs.Var(&o.uploadBytes, "upload-bytes", "upload `N` random bytes (without -upload): 1e9, 1GB, 10MiB, 64K (K, M, G alone are binary)")
	fs.Var(&o.sendBuffer, "send-buffer", "at most `bytes` of upload written but not yet acknowledged; the buffer grows to it as the path needs (0: transport default, 4 MiB)")
	fs.StringVar(&o.ntp, "ntp", "", "NTP `server` correcting the clock (host or host:port)")
	fs.DurationVar(&o.duration, "duration", 0, "stop after this long (0: until Ctrl-C)")
	fs.DurationVar(&o.stats, "stats", time.Second, "interval of the status line (0: only at the end)")
	fs.DurationVar(&o.giveUp, "give-up", 10*time.Second, "once the path is dead (no answer to four retransmission timeouts in a row), wait this long for the monitor to answer again, then exit 1: the monitor went away (0: at once)")
	fs.StringVar(&o.tickets, "0rtt", "", "keep the TLS session ticket and the monitor's token in `FILE` (mode 0600): the next run resumes without a Retry and sends its first reading in 0-RTT (the monitor needs -0rtt)")
	fs.StringVar(&o.qlog, "qlog", os.Getenv(qlog.EnvDir), "write a qlog trace of the connection (for qvis) into `dir` (default $QLOGDIR; empty: off)")
	o.creds.Register(fs, "client", "-")
	verbose := fs.Bool("v", false, "debug logs on stderr")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: agent -server HOST:PORT -ca CA.pem [-cert FILE -key FILE] [-upload FILE | -upload-bytes N] [flags]\n\n")
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), statusLegend)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, &cli.UsageError{Err: err}
	}
	switch {
	case fs.NArg() > 0:
		return nil, cli.Usagef("unexpected argument %q (flags go before it; see -h)", fs.Arg(0))
	case o.server == "":
		return nil, cli.Usagef("-server HOST:PORT is required: the address the monitor listens on")
	case o.hz <= 0:
		return nil, cli.Usagef("-rate-hz %g: must be positive", o.hz)
	case o.upload != "" && o.uploadBytes > 0:
		return nil, cli.Usagef("-upload and -upload-bytes exclude each other: give one")
	case o.duration < 0:
		return nil, cli.Usagef("-duration %v: must not be negative (0 runs until Ctrl-C)", o.duration)
	case o.stats < 0:
		return nil, cli.Usagef("-stats %v: must not be negative (0 prints only at the end)", o.stats)
	case o.giveUp < 0:
		return nil, cli.Usagef("-give-up %v: must not be negative (0 gives up as soon as the path is dead)", o.giveUp)
	case o.tickets != "" && o.creds.Insecure:
		return nil, cli.Usagef("-0rtt and -insecure exclude each other: 0-RTT resumes a TLS session")
	case int64(o.sendBuffer) > 1<<40:
		return nil, cli.Usagef("-send-buffer %s: too large, at most 1TiB", &o.sendBuffer)
	}
	if _, err := cc.New(o.cc, cc.DefaultMSS); err != nil {
		return nil, cli.Usagef("-cc: %w", err)
	}
	o.logger = cli.Logger(*verbose)
	return o, nil
}

// statusLegend explains the status line in -h.
const statusLegend = `
Status line (every -stats):
  upload MB acked, Mbit/s   stream bytes the monitor acknowledged; goodput over the interval
  srtt                      smoothed round-trip time
  owd min/cur               one-way delay the congestion controller acts on: its minimum (the
                            path's propagation and serialisation) and current value (plus queueing)
  delay min/cur (from rtt)  the same, derived from the round-trip time: shown until the in-band
                            estimator has learned the clock offset (a few seconds) and the
                            controller has had a sample since; once the upload is over the
                            controller gets none, so its last values and source stay
  cwnd                      congestion window
  updates sent (acp /s)     readings sent in the interval; the update rate ACP allows now
  PATH DEAD                 the monitor does not answer (see -give-up)
The "clock:" line (when it changes): this host's NTP state (-ntp: offset, stratum) and
whether one-way delays are measured yet (the monitor's in-band estimate of the clock
offset is trusted after a few seconds of packets; until then RTT/2 stands in).
TLS: -ca verifies the monitor (go run ./examples/certgen -dir certs makes a CA and
certificates); -cert/-key identify this agent to a monitor that requires it (its -ca).
The upload is complete once the monitor committed every byte (stored it on its disk):
"agent: upload complete: N bytes committed". Exit status 1 if it did not (cut short,
or "upload failed: monitor could not store it after N bytes: REASON"), if the monitor
went away ("monitor went away: ...", "monitor restarted: connection reset", "the
monitor at ... closed the connection"), or on any other error; 2 on a usage error.
`

// openUpload opens what to upload before anything is dialled, so a missing
// file or a directory fails at once. size is −1 when unknown (stdin).
func openUpload(o *options) (src io.Reader, size int64, closeFn func() error, err error) {
	noop := func() error { return nil }
	switch {
	case o.upload == "-":
		return os.Stdin, -1, noop, nil
	case o.upload != "":
		f, err := os.Open(o.upload)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("-upload: %w", err)
		}
		fi, err := f.Stat()
		if err == nil && fi.IsDir() {
			err = errors.New("is a directory; give a file")
		}
		if err != nil {
			f.Close()
			return nil, 0, nil, fmt.Errorf("-upload %s: %w", o.upload, err)
		}
		size = -1
		if fi.Mode().IsRegular() {
			size = fi.Size()
		}
		return f, size, f.Close, nil
	case o.uploadBytes > 0:
		return io.LimitReader(rand.Reader, int64(o.uploadBytes)), int64(o.uploadBytes), noop, nil
	}
	return nil, 0, noop, nil
}

// run dials the monitor and runs until ctx ends or -duration passes: the
// sensor offers readings, the upload streams, and a status line shows what
// the connection does.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	cfg := transport.Config{
		CC:            o.cc,
		MaxUpdateRate: o.hz,
		UpdateDSCP:    o.dscp,
		SendBuffer:    int(o.sendBuffer),
		IdleTimeout:   idleTimeout,
		Logger:        o.logger,
	}
	if err := o.creds.Config(&cfg, false); err != nil {
		return err
	}
	if o.qlog != "" {
		if err := os.MkdirAll(o.qlog, 0o755); err != nil {
			return cli.Usagef("-qlog: %v", err)
		}
		cfg.Tracer = qlog.DirTracer(o.qlog)
	}
	dial := transport.Dial
	if o.tickets != "" {
		tickets, err := cli.OpenTicketFile("-0rtt", o.tickets)
		if err != nil {
			return err
		}
		cfg.TLS.ClientSessionCache = tickets
		cfg.TokenStore = tickets.Tokens() // and the monitor's token: no Retry next time
		cfg.Allow0RTT = true
		dial = transport.DialEarly // returns before the handshake when the ticket allows 0-RTT
	}
	src, size, closeSrc, err := openUpload(o)
	if err != nil {
		return err
	}
	defer closeSrc()
	interrupted := ctx // Ctrl-C or SIGTERM, as opposed to -duration running out
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}
	// With -ntp the transport keeps the clock NTP-corrected; Stats.NTP
	// says whether it is synchronised.
	cfg.NTPServer = o.ntp

	conn, err := dial(ctx, o.server, cfg)
	// The two jobs: readings as updates, the upload on the stream. Sensing
	// starts at once: with 0-RTT the first reading goes with the
	// handshake's first flight.
	var wg sync.WaitGroup
	sensCtx, stopSensing := context.WithCancel(ctx)
	defer stopSensing()
	if err == nil {
		sens := newSensor(o.hz)
		if o.tickets != "" {
			// The first reading at once, before the handshake can end: it
			// goes in the first flight when the ticket allows 0-RTT.
			_ = conn.SendUpdate(sens.read())
		}
		wg.Go(func() { sense(sensCtx, conn, sens) })
		if err = awaitHandshake(ctx, conn); err != nil {
			stopSensing()
			wg.Wait()
			conn.Abort()
		}
	}
	switch {
	case err != nil && interrupted.Err() != nil:
		return nil // stopped by the user before the monitor answered
	case err != nil && ctx.Err() != nil:
		return fmt.Errorf("no answer from %s within -duration %v", o.server, o.duration)
	case errors.As(err, new(*transport.ApplicationError)):
		// The monitor took the connection and closed it at once: it
		// cannot store an upload (its -out file exists, say).
		var ae *transport.ApplicationError
		errors.As(err, &ae)
		return fmt.Errorf("upload refused: the monitor at %s closed the connection at once (code %d): %s", o.server, ae.Code, cli.Text(ae.Reason))
	case err != nil:
		return fmt.Errorf("-server %s: %w", o.server, o.creds.ExplainDial(err))
	}
	fmt.Fprintf(stdout, "agent: connected to %s from %s (%s), cc %s, updates at up to %g Hz marked %v\n",
		conn.RemoteAddr(), conn.LocalAddr(), security(conn), o.cc, o.hz, o.dscp)
	start := time.Now()

	var written atomic.Int64
	uploaded := make(chan error, 1)
	if src != nil {
		wg.Go(func() { uploaded <- upload(conn, src, &written) })
	}

	up, runErr := watch(ctx, conn, o, uploaded, &written, start, stdout)

	stopSensing()
	select {
	case err := <-uploaded: // it finished as watch returned
		up.written = up.written || err == nil
	default:
	}
	if src != nil && up.written && !up.committed && runErr == nil && interrupted.Err() == nil {
		// Written but not yet committed when -duration ended: the
		// monitor may still be storing the last bytes.
		wctx, cancel := context.WithTimeout(context.Background(), commitWait)
		err := conn.WaitCommitted(wctx, written.Load())
		cancel()
		if err == nil {
			up.committed = true
			fmt.Fprintf(stdout, "agent: upload complete: %d bytes committed by the monitor after %v\n",
				written.Load(), time.Since(start).Round(time.Millisecond))
		} else if ferr := storageFailure(conn, err); ferr != nil {
			runErr = ferr
		}
	}
	var closeErr error
	// A path still dead when the agent stops (-duration ran out before
	// -give-up): the monitor is not answering, which is what to say.
	deadAtEnd := !up.gone && conn.Err() == nil && conn.Stats().PathDead
	switch closed := conn.Err() != nil; { // the monitor closed it: nothing to tell it
	case up.gone && !closed:
		// Nobody to tell or to wait for: end the connection at once (an
		// abort, so that a monitor that does hear from us again cannot
		// take a partial upload for a whole one).
		_ = conn.Abort()
	case src != nil && !up.written && !closed:
		// Cut short (-duration, Ctrl-C, an error): abort, so the monitor
		// reads the bytes it has as a broken upload, never as a whole one.
		closeErr = conn.Abort()
		if deadAtEnd {
			fmt.Fprintln(stdout, "agent: upload cut short: the monitor, which does not answer (path dead), is told it is aborted in case it hears")
		} else {
			fmt.Fprintln(stdout, "agent: upload cut short: the monitor is told it is aborted")
		}
	default:
		closeErr = conn.Close() // waits (Config.Linger, 5 s) for the upload's last bytes
	}
	wg.Wait()
	s := conn.Stats()
	committed := conn.Committed()
	fmt.Fprintf(stdout, "agent: done after %v: %d stream bytes acknowledged, %d committed, %d packets lost, %d retransmitted; "+
		"updates %d sent, %d superseded, %d lost\n",
		time.Since(start).Round(time.Millisecond), s.StreamBytesAcked, committed, s.PacketsLost, s.Retransmitted,
		s.UpdatesSent, s.UpdatesSuperseded, s.UpdatesLost)
	fmt.Fprintf(stdout, "agent: clock: %s\n", cli.ClockState(s))
	incomplete := src != nil && !up.committed
	of := "an upload of unknown size"
	if size >= 0 {
		of = fmt.Sprintf("%d bytes", size)
	}
	switch {
	case up.storageFailed:
		return runErr // it says how far the monitor got and why it stopped
	case runErr != nil && incomplete:
		return fmt.Errorf("%w; upload incomplete: %d of %s committed by the monitor (%d acknowledged)", runErr, committed, of, s.StreamBytesAcked)
	case runErr != nil:
		return runErr
	case incomplete:
		why := "Ctrl-C"
		switch {
		case interrupted.Err() == nil && deadAtEnd:
			why = fmt.Sprintf("-duration %v, while the monitor did not answer (path dead; -give-up %v had not run out): %s",
				o.duration, o.giveUp, checkMonitor(o.server))
		case interrupted.Err() == nil:
			why = fmt.Sprintf("-duration %v (raise it, or upload less)", o.duration)
		}
		return fmt.Errorf("upload incomplete: %d of %s committed by the monitor (%d acknowledged) when the agent stopped at %s", committed, of, s.StreamBytesAcked, why)
	case closeErr != nil && !errors.Is(closeErr, transport.ErrPeerClosed):
		return closeErr
	}
	return nil
}

// commitWait is how long the agent waits, after -duration, for the
// monitor to commit an upload it has written in full.
var commitWait = 5 * time.Second

// idleTimeout is the connection's idle timeout (transport.Config's
// default, named here so that the agent's message can say it): the
// transport ends a connection that heard nothing from the monitor for
// this long.
const idleTimeout = 30 * time.Second

// uploadState is how far the upload got.
type uploadState struct {
	written       bool // every byte written and the stream half-closed
	committed     bool // the monitor committed every byte
	storageFailed bool // the monitor said it could not store it
	gone          bool // the monitor went away (watch's error says how)
}

// checkMonitor is what to check when the monitor went away.
func checkMonitor(server string) string {
	return fmt.Sprintf("check that the monitor at -server %s is running (its log or supervisor says why it stopped) and reachable from here, then run the agent again", server)
}

// whyEnded is the agent's error for a connection the transport ended, by
// what ended it: a stateless reset (the monitor restarted and lost the
// connection), the idle timeout (nothing heard), the monitor's close (it
// shut down, or closed this agent's connection), or anything else. (A
// close with an application error is storageFailure's.)
func whyEnded(server string, err error) error {
	switch {
	case errors.Is(err, transport.ErrStatelessReset):
		return fmt.Errorf("monitor restarted: connection reset (the monitor at -server %s lost this connection: it restarted, or dropped the connection's state; run the agent again to reconnect): %w", server, err)
	case errors.Is(err, transport.ErrIdleTimeout):
		return fmt.Errorf("monitor went away: nothing heard from %s for the idle timeout (%v): the monitor stopped, or the network between is down; %s: %w",
			server, idleTimeout, checkMonitor(server), err)
	case errors.Is(err, transport.ErrPeerClosed) && !errors.Is(err, transport.ErrProtocol) && !errors.Is(err, transport.ErrStreamAborted):
		return fmt.Errorf("the monitor at %s closed the connection (it was stopped, or it closed this agent's; its log says which); run the agent again to reconnect: %w", server, err)
	}
	return fmt.Errorf("connection ended: %w", err)
}

// deadPath decides, from a snapshot of a dead path, whether the monitor
// went away: at once if the monitor's host answered our datagrams since
// the monitor's last packet with ICMP port unreachable (nothing listens
// there: the monitor process is gone, and the connection cannot come back
// — a restarted monitor holds none of its state), otherwise once the path
// has been dead for -give-up. It returns nil while the agent waits.
func deadPath(o *options, deadFor time.Duration, icmp bool) error {
	switch {
	case icmp:
		return fmt.Errorf("monitor went away: four retransmission timeouts in a row brought no answer from %s, and its host reports that nothing listens on that port (ICMP port unreachable): the monitor is not running; %s",
			o.server, checkMonitor(o.server))
	case deadFor >= o.giveUp:
		return fmt.Errorf("monitor went away: no answer from %s: the path went dead (four retransmission timeouts in a row unanswered) and stayed dead for %v (-give-up %v): the monitor stopped, or the network between is down; %s",
			o.server, deadFor.Round(100*time.Millisecond), o.giveUp, checkMonitor(o.server))
	}
	return nil
}

// storageFailure is the agent's error for a WaitCommitted (or connection)
// error that is the monitor's storage failure (its CloseWithError with
// cli.CodeStorageFailed), naming how far it got and why; nil for any
// other error.
func storageFailure(conn *transport.Conn, err error) error {
	var ae *transport.ApplicationError
	if !errors.As(err, &ae) {
		return nil
	}
	committed := conn.Committed()
	if ae.Code == cli.CodeStorageFailed {
		return fmt.Errorf("upload failed: monitor could not store it after %d bytes: %s", committed, cli.Text(ae.Reason))
	}
	return fmt.Errorf("upload failed after %d bytes committed: the monitor closed with error %d: %s", committed, ae.Code, cli.Text(ae.Reason))
}

// security says in a few words whom the agent is talking to.
func security(conn *transport.Conn) string {
	st, ok := conn.ConnectionState()
	if !ok {
		return "INSECURE: plaintext, the monitor is not authenticated"
	}
	s := "TLS, monitor verified"
	if len(st.PeerCertificates) > 0 {
		s += fmt.Sprintf(" as %q", st.PeerCertificates[0].Subject.CommonName)
	}
	if st.DidResume {
		s += ", session resumed"
		switch cs := conn.Stats(); {
		case cs.EarlyRejected:
			s += ", 0-RTT refused (first reading sent after the handshake)"
		case cs.EarlyUpdatesSent > 0:
			s += ", first reading sent in 0-RTT"
		}
	}
	return s
}

// awaitHandshake waits until a DialEarly'd connection has completed its
// handshake (at once for one that did not return early), and returns why
// it did not.
func awaitHandshake(ctx context.Context, conn *transport.Conn) error {
	select {
	case <-conn.HandshakeComplete():
		return conn.Err()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// watch prints the status line every -stats and a clock line when the
// clock state changes, until ctx ends, the connection ends or the upload
// fails. Once the upload is written it waits for the monitor's commit and
// says "upload complete" when every byte is committed.
func watch(ctx context.Context, conn *transport.Conn, o *options,
	uploaded <-chan error, written *atomic.Int64, start time.Time, stdout io.Writer) (up uploadState, err error) {
	var tick <-chan time.Time
	if o.stats > 0 {
		t := time.NewTicker(o.stats)
		defer t.Stop()
		tick = t.C
	}
	var prev transport.Stats
	prevT, prevClock := time.Now(), ""
	commitCtx, stopWaiting := context.WithCancel(context.Background())
	defer stopWaiting()
	var committed chan error // set once the upload is written
	// connEnded is watch's end once the transport ended the connection.
	connEnded := func(up uploadState) (uploadState, error) {
		err := conn.Err()
		if ferr := storageFailure(conn, err); ferr != nil {
			up.storageFailed = true
			return up, ferr
		}
		if up.written && conn.Committed() == written.Load() {
			up.committed = true // the commit came in as the connection ended
		}
		err = whyEnded(o.server, err)
		fmt.Fprintf(stdout, "agent: %v\n", err)
		return up, err
	}
	// The path's state comes from the transport when it changes
	// (PathChanged), so a monitor that went away is said at once, and a
	// healthy path costs no wake-ups: on a battery-powered device a timer
	// that fires with nothing to do is what keeps the CPU awake. While the
	// path is dead a 200 ms ticker checks for the monitor's host saying
	// nothing listens (ICMP) and for -give-up running out.
	var (
		dead      bool
		deadSince time.Time
		deadTick  *time.Ticker
		deadC     <-chan time.Time // deadTick's, while the path is dead
	)
	defer func() {
		if deadTick != nil {
			deadTick.Stop()
		}
	}()
	// checkPath acts on the path's state at now; a non-nil error ends watch.
	checkPath := func(now time.Time) error {
		s := conn.Stats()
		switch {
		case s.PathDead && !dead:
			deadSince = now
			deadTick = time.NewTicker(200 * time.Millisecond)
			deadC = deadTick.C
			fmt.Fprintf(stdout, "agent: path dead: the last retransmission timeouts in a row brought no answer; the monitor is unreachable "+
				"(updates slowed to one probe per timeout; the agent gives up if it does not answer within -give-up %v)\n", o.giveUp)
		case !s.PathDead && dead:
			deadTick.Stop()
			deadTick, deadC = nil, nil
			fmt.Fprintln(stdout, "agent: path back: the monitor answers again")
		}
		dead = s.PathDead
		if !dead {
			return nil
		}
		return deadPath(o, now.Sub(deadSince), s.PortUnreachableSinceHeard > 0)
	}
	for {
		var pathAt time.Time // set when the path's state is to be checked
		select {
		case <-conn.PathChanged():
			pathAt = time.Now()
		case pathAt = <-deadC:
		case <-ctx.Done():
			return up, nil
		case <-conn.Done():
			return connEnded(up)
		case err := <-uploaded:
			if ferr := storageFailure(conn, err); ferr != nil {
				up.storageFailed = true // Write failed with the monitor's close
				return up, ferr
			}
			if err != nil && conn.Err() != nil {
				return connEnded(up) // Write failed because the connection ended: say why it did
			}
			if err != nil {
				return up, fmt.Errorf("upload: %w", err)
			}
			up.written = true
			n := written.Load()
			fmt.Fprintf(stdout, "agent: upload of %d bytes written (%d acknowledged so far) after %v; waiting for the monitor to commit it; updates go on\n",
				n, conn.Stats().StreamBytesAcked, time.Since(start).Round(time.Millisecond))
			committed = make(chan error, 1)
			go func() { committed <- conn.WaitCommitted(commitCtx, n) }()
		case err := <-committed:
			committed = nil
			if err == nil {
				up.committed = true
				fmt.Fprintf(stdout, "agent: upload complete: %d bytes committed by the monitor after %v\n",
					written.Load(), time.Since(start).Round(time.Millisecond))
				continue
			}
			if ferr := storageFailure(conn, err); ferr != nil {
				up.storageFailed = true
				return up, ferr
			}
			// The connection ended: the next round says so.
		case now := <-tick:
			s := conn.Stats()
			if c := cli.ClockState(s); clockKey(c) != clockKey(prevClock) {
				fmt.Fprintf(stdout, "agent: clock: %s\n", c)
				prevClock = c
			}
			printLine(stdout, now.Sub(start), now.Sub(prevT), s, prev)
			prev, prevT = s, now
		}
		if pathAt.IsZero() {
			continue
		}
		if err := checkPath(pathAt); err != nil {
			fmt.Fprintf(stdout, "agent: %v\n", err)
			up.gone = true
			return up, err
		}
	}
}

// clockKey is the part of a ClockState line whose change is worth a new
// line: the words, not the offsets' digits.
func clockKey(s string) string {
	b := []byte(s)
	out := b[:0:0]
	for _, c := range b {
		if c < '0' || c > '9' {
			out = append(out, c)
		}
	}
	return string(out)
}

// printLine prints one status line from two snapshots dt apart.
func printLine(w io.Writer, elapsed, dt time.Duration, s, prev transport.Stats) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/1e6) }
	delay := ""
	switch {
	case s.MinOWD <= 0:
	case s.Signal == cc.SignalRTT:
		delay = fmt.Sprintf(" delay min/cur %s/%sms (from rtt)", ms(s.MinOWD), ms(s.CurOWD))
	default:
		delay = fmt.Sprintf(" owd min/cur %s/%sms", ms(s.MinOWD), ms(s.CurOWD))
	}
	dead := ""
	if s.PathDead {
		dead = " | PATH DEAD"
	}
	fmt.Fprintf(w, "%6.1fs upload %8.2f MB acked %6.2f Mbit/s | srtt %sms%s | cwnd %.1f kB | updates %d sent (acp %.1f/s)%s\n",
		elapsed.Seconds(), float64(s.StreamBytesAcked)/1e6,
		float64(s.StreamBytesAcked-prev.StreamBytesAcked)*8/dt.Seconds()/1e6,
		ms(s.SRTT), delay, float64(s.Window)/1e3,
		s.UpdatesSent-prev.UpdatesSent, s.UpdateRate, dead)
}

// sensor is the simulated sensor: each reading is a small JSON object.
type sensor struct {
	hz  float64
	seq int
	rng *mrand.Rand
	buf []byte
}

func newSensor(hz float64) *sensor { return &sensor{hz: hz, rng: mrand.New(mrand.NewPCG(1, 2))} }

// read takes the next reading; it is valid until the next call.
func (s *sensor) read() []byte {
	t := float64(s.seq) / s.hz
	s.buf = fmt.Appendf(s.buf[:0], `{"seq":%d,"t_ms":%d,"temp_c":%.2f,"rh_pct":%.1f,"vib_g":%.3f}`,
		s.seq, time.Now().UnixMilli(), 21.5+0.01*t+0.05*s.rng.NormFloat64(),
		45+s.rng.NormFloat64(), 0.02*s.rng.Float64())
	s.seq++
	return s.buf
}

// sense samples the sensor at its rate and offers every reading to
// SendUpdate until ctx ends or the connection closes.
func sense(ctx context.Context, conn *transport.Conn, s *sensor) {
	tick := time.NewTicker(time.Duration(float64(time.Second) / s.hz))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if err := conn.SendUpdate(s.read()); err != nil {
			return
		}
	}
}

// upload copies src to the stream, counting what it wrote, and half-closes it.
func upload(conn *transport.Conn, src io.Reader, written *atomic.Int64) error {
	n, err := io.Copy(conn, src)
	written.Store(n)
	if err != nil {
		return err
	}
	return conn.CloseWrite()
}
