// Command agent is the device half of an IoT deployment built on fresh: it
// samples a sensor and keeps a monitor (examples/monitor) updated with the
// freshest reading while it uploads a file over the same connection.
//
//	go run ./examples/agent -server monitor.example:4433 [-upload FILE | -upload-bytes N] [flags]
//
// Updates and upload share one fresh connection but not one queue:
//
//   - Every -rate-hz the agent takes a reading (a small JSON object from a
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
// It runs until Ctrl-C (or SIGTERM) or -duration, then closes the connection,
// which waits up to 5 s for the upload's last bytes to be acknowledged.
// Once per -stats interval it prints one line: upload progress and goodput,
// SRTT, one-way delay as the controller sees it, congestion window, and the
// updates sent.
//
// Flags:
//
//	-server HOST:PORT   the monitor (required)
//	-cc owd             stream congestion controller: owd, cubic, reno, htcp, rttdelay, …
//	-rate-hz 200        sensing rate, readings per second (also ACP's ceiling)
//	-dscp CS7           DSCP of the updates: CS7, CS6, EF, AF41, BE, CS0..CS7, or 0..63
//	-upload FILE        upload FILE ("-": standard input)
//	-upload-bytes N     upload N random bytes (if no -upload; 0: updates only)
//	-send-buffer 0      bytes the upload may have written but not yet acknowledged
//	                    (transport.Config.SendBuffer; 0: its default, 4 MiB). It is
//	                    most of the agent's memory; it needs about one bandwidth-delay
//	                    product for full speed
//	-ntp SERVER         NTP-correct the clock that stamps updates (host or host:port)
//	-duration 0         stop after this long (0: run until Ctrl-C)
//	-stats 1s           interval of the status line (0: only at the end)
//	-v                  debug logs (log/slog) on stderr; silent otherwise
//
// The agent imports only the standard library and package transport, so it
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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fresh-udp/fresh/examples/internal/cli"
	"github.com/fresh-udp/fresh/transport"
)

func main() { cli.Main("agent", run) }

// options are the parsed flags.
type options struct {
	server      string
	cc          string
	hz          float64
	dscp        int // for transport.Config.UpdateDSCP: -1 is best effort
	upload      string
	uploadBytes int64
	sendBuffer  int
	ntp         string
	duration    time.Duration
	stats       time.Duration
	logger      *slog.Logger
}

func parseFlags(args []string) (*options, error) {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	o := &options{}
	fs.StringVar(&o.server, "server", "", "the monitor's `HOST:PORT` (required)")
	fs.StringVar(&o.cc, "cc", "owd", "stream congestion `controller` (owd, cubic, reno, htcp, rttdelay, …)")
	fs.Float64Var(&o.hz, "rate-hz", 200, "sensing rate, readings per second")
	dscp := fs.String("dscp", "CS7", "DSCP of the updates: CS7, CS6, EF, AFxy, BE, CSn or 0..63")
	fs.StringVar(&o.upload, "upload", "", "upload `FILE` (\"-\": standard input)")
	fs.Int64Var(&o.uploadBytes, "upload-bytes", 0, "upload `N` random bytes (without -upload)")
	fs.IntVar(&o.sendBuffer, "send-buffer", 0, "upload `bytes` written but not yet acknowledged (0: transport default)")
	fs.StringVar(&o.ntp, "ntp", "", "NTP `server` correcting the clock (host or host:port)")
	fs.DurationVar(&o.duration, "duration", 0, "stop after this long (0: until Ctrl-C)")
	fs.DurationVar(&o.stats, "stats", time.Second, "interval of the status line (0: only at the end)")
	verbose := fs.Bool("v", false, "debug logs on stderr")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case o.server == "":
		return nil, errors.New("-server HOST:PORT is required")
	case o.hz <= 0:
		return nil, errors.New("-rate-hz must be positive")
	case o.sendBuffer < 0:
		return nil, errors.New("-send-buffer must not be negative")
	case o.uploadBytes < 0:
		return nil, errors.New("-upload-bytes must not be negative")
	case o.upload != "" && o.uploadBytes > 0:
		return nil, errors.New("-upload and -upload-bytes exclude each other")
	}
	d, err := parseDSCP(*dscp)
	if err != nil {
		return nil, err
	}
	// transport.Config.UpdateDSCP: 0 means "default" (CS7), −1 best effort.
	o.dscp = int(d)
	if d == 0 {
		o.dscp = -1
	}
	o.logger = cli.Logger(*verbose)
	return o, nil
}

// parseDSCP maps a class name (RFC 4594: CSn, AFxy, EF, BE) or a number to
// the 6-bit DSCP.
func parseDSCP(s string) (uint8, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	bad := fmt.Errorf("-dscp %q: want CS0..CS7, AF11..AF43, EF, BE or 0..63", s)
	switch {
	case u == "BE" || u == "DF":
		return 0, nil
	case u == "EF":
		return transport.DSCPEF, nil
	case len(u) == 3 && strings.HasPrefix(u, "CS") && u[2] >= '0' && u[2] <= '7':
		return (u[2] - '0') << 3, nil // CSn = n·8 (RFC 2474 §4.2.2)
	case len(u) == 4 && strings.HasPrefix(u, "AF") && u[2] >= '1' && u[2] <= '4' && u[3] >= '1' && u[3] <= '3':
		return (u[2]-'0')<<3 | (u[3]-'0')<<1, nil // AFxy = 8x + 2y (RFC 2597 §6)
	}
	v, err := strconv.Atoi(u)
	if err != nil || v < 0 || v > 63 {
		return 0, bad
	}
	return uint8(v), nil
}

// run dials the monitor and runs until ctx ends or -duration passes.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	var src io.Reader
	switch {
	case o.upload == "-":
		src = os.Stdin
	case o.upload != "":
		f, err := os.Open(o.upload)
		if err != nil {
			return err
		}
		defer f.Close()
		src = f
	case o.uploadBytes > 0:
		src = io.LimitReader(rand.Reader, o.uploadBytes)
	}
	interrupted := ctx // Ctrl-C or SIGTERM, as opposed to -duration running out
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}

	conn, err := transport.Dial(ctx, o.server, transport.Config{
		CC:            o.cc,
		MaxUpdateRate: o.hz,
		UpdateDSCP:    o.dscp,
		SendBuffer:    o.sendBuffer,
		NTPServer:     o.ntp,
		Logger:        o.logger,
	})
	if err != nil {
		if interrupted.Err() != nil {
			return nil // stopped by the user before the monitor answered
		}
		if ctx.Err() != nil {
			return fmt.Errorf("no answer from %s within -duration %v", o.server, o.duration)
		}
		return err
	}
	fmt.Fprintf(stdout, "agent: connected to %s from %s, cc %s, updates at up to %g Hz\n",
		conn.RemoteAddr(), conn.LocalAddr(), o.cc, o.hz)
	start := time.Now()

	var wg sync.WaitGroup
	sensCtx, stopSensing := context.WithCancel(ctx)
	defer stopSensing()
	wg.Go(func() { sense(sensCtx, conn, o.hz) })
	uploaded := make(chan error, 1)
	if src != nil {
		wg.Go(func() { uploaded <- upload(conn, src) })
	}

	var tick <-chan time.Time
	if o.stats > 0 {
		t := time.NewTicker(o.stats)
		defer t.Stop()
		tick = t.C
	}
	var prev transport.Stats
	prevT := start
	var runErr error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-conn.Done():
			runErr = fmt.Errorf("connection ended: %w", conn.Err())
			break loop
		case err := <-uploaded:
			if err != nil {
				runErr = fmt.Errorf("upload: %w", err)
				break loop
			}
			s := conn.Stats()
			fmt.Fprintf(stdout, "agent: upload written (%d bytes acknowledged so far) after %v; updates go on\n",
				s.StreamBytesAcked, time.Since(start).Round(time.Millisecond))
		case now := <-tick:
			s := conn.Stats()
			printLine(stdout, now.Sub(start), now.Sub(prevT), s, prev)
			prev, prevT = s, now
		}
	}
	stopSensing()
	closeErr := conn.Close() // waits (Config.Linger, 5 s) for the upload's last bytes
	wg.Wait()
	s := conn.Stats()
	fmt.Fprintf(stdout, "agent: done after %v: %d stream bytes acknowledged, %d packets lost, %d retransmitted; "+
		"updates %d sent, %d superseded, %d lost\n",
		time.Since(start).Round(time.Millisecond), s.StreamBytesAcked, s.PacketsLost, s.Retransmitted,
		s.UpdatesSent, s.UpdatesSuperseded, s.UpdatesLost)
	if runErr != nil {
		return runErr
	}
	if closeErr != nil && !errors.Is(closeErr, transport.ErrPeerClosed) {
		return closeErr
	}
	return nil
}

// printLine prints one status line from two snapshots dt apart.
func printLine(w io.Writer, elapsed, dt time.Duration, s, prev transport.Stats) {
	owd := ""
	if s.MinOWD > 0 {
		owd = fmt.Sprintf(" owd %v/%v (%s)", s.MinOWD.Round(100*time.Microsecond), s.CurOWD.Round(100*time.Microsecond), s.Signal)
	}
	fmt.Fprintf(w, "%6.1fs upload %8.2f MB acked %6.2f Mbit/s | srtt %v%s cwnd %.1f kB | updates %d sent (acp %.1f/s)\n",
		elapsed.Seconds(), float64(s.StreamBytesAcked)/1e6,
		float64(s.StreamBytesAcked-prev.StreamBytesAcked)*8/dt.Seconds()/1e6,
		s.SRTT.Round(100*time.Microsecond), owd, float64(s.Window)/1e3,
		s.UpdatesSent-prev.UpdatesSent, s.UpdateRate)
}

// sense samples the (simulated) sensor at hz and offers every reading to
// SendUpdate until ctx ends or the connection closes.
func sense(ctx context.Context, conn *transport.Conn, hz float64) {
	tick := time.NewTicker(time.Duration(float64(time.Second) / hz))
	defer tick.Stop()
	rng := mrand.New(mrand.NewPCG(1, 2))
	var buf []byte
	for seq := 0; ; seq++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		t := float64(seq) / hz
		buf = fmt.Appendf(buf[:0], `{"seq":%d,"t_ms":%d,"temp_c":%.2f,"rh_pct":%.1f,"vib_g":%.3f}`,
			seq, time.Now().UnixMilli(), 21.5+0.01*t+0.05*rng.NormFloat64(),
			45+rng.NormFloat64(), 0.02*rng.Float64())
		if err := conn.SendUpdate(buf); err != nil {
			return
		}
	}
}

// upload copies src to the stream and half-closes it.
func upload(conn *transport.Conn, src io.Reader) error {
	if _, err := io.Copy(conn, src); err != nil {
		return err
	}
	return conn.CloseWrite()
}
