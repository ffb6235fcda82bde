// Command bulk measures bulk-transfer throughput over fresh the way iperf3
// does over TCP, and takes iperf3's flags: a server that waits for tests, a
// client that runs one for a fixed time and reports per-interval and total
// throughput with its controller's retransmissions and congestion window.
//
//	bulk -s --cert CERT --key KEY [--ca CA] [-p 5201] [-1] [-J | --json-stream] [--logfile F] [-4 | -6]
//	bulk -c HOST --ca CA [--cert CERT --key KEY] [--server-name NAME] [-p 5201] [-t 10] [-i 1] [-P 1]
//	     [-R | --bidir] [-b 0] [-l 128K] [-w 4M] [-C owd] [-S TOS | --dscp NAME] [-J | --json-stream]
//	     [--logfile F] [-V] [-4 | -6]
//
// # Security
//
// Every connection, the control one and the data ones, is TLS 1.3 (fresh's
// default), with the same flags as examples/monitor and examples/agent:
// the server presents --cert and --key and, with --ca, requires clients to
// present a certificate that CA signed (mutual TLS; the data connections
// must then present the same certificate as the test's control
// connection). The client verifies the server against --ca (the system's
// roots without it) and the HOST of -c, or --server-name. go run
// ./examples/certgen -dir certs makes a throwaway set:
//
//	bulk -s --cert certs/monitor.pem --key certs/monitor-key.pem --ca certs/ca.pem
//	bulk -c 127.0.0.1 --ca certs/ca.pem --cert certs/agent.pem --key certs/agent-key.pem
//
// --insecure runs in plaintext on both ends instead (UNSAFE: anyone on the
// path can read, forge and cut off the test; a TLS end and a plaintext end
// refuse each other). iperf3's own --username and --rsa-… authentication
// is not implemented.
//
// # How a test runs
//
// As iperf3, a test has a control connection and data connections, all
// fresh connections over UDP:
//
//  1. The client dials the server's port (-p) and writes the test's
//     parameters as one JSON line on that control connection's stream:
//     {"cookie":…, "test_start":{…}, "fresh":{"cc":…, "dscp":…, "window":…}}.
//     test_start holds iperf3's fields (protocol, num_streams, blksize,
//     omit, duration, bytes, blocks, reverse, tos, target_bitrate, bidir,
//     fqrate, interval); fresh holds the controller (-C), the stream's DSCP
//     (-S/--dscp) and the buffer size (-w).
//  2. The server opens a listener for this test's data connections on an
//     ephemeral UDP port of the same address, configured with those
//     parameters (its Config.CC, StreamDSCP, SendBuffer and ReceiveWindow),
//     and answers with one JSON line, {"data_port":N} or {"error":"…"}. A
//     firewall in front of the server must let that port through too.
//  3. The client dials -P data connections to it with the same settings.
//     Data flows client to server, server to client with -R, or both ways
//     on each connection with --bidir. Each sender writes -l blocks of
//     random bytes for -t (paced to -b per connection if given), then
//     half-closes its stream (CloseWrite); each receiver reads to EOF.
//  4. Each side writes its results as one JSON line on the control
//     connection (client first) and reads the other's, so both can report
//     the sender's and the receiver's view, as iperf3 exchanges results.
//
// As iperf3's, the server runs one test at a time: a client that connects
// during another's test is answered {"busy":true, "error":…} and prints
// "the server is busy running a test. try again later". The server reads
// the control connection during the test, so a client that goes away
// ends the test then, not after -t: one that closes its connections or is
// interrupted at once, one that falls silent (killed, its network gone)
// after --rcv-timeout (iperf3's flag: milliseconds or a duration; default
// the transport's idle timeout, 30 s). Ctrl-C (SIGINT) or SIGTERM on the
// client ends its test early: it prints the summary of what it measured so
// far (its own half: the receiver's figures never came), tells the server
// and exits with status 1, as iperf3's client does.
//
// So the stream's DSCP marks the data in both directions: the client's
// packets by its own Config.StreamDSCP, the server's by its test
// listener's. The control connection is left best effort.
//
// As iperf3's, a sender counts the bytes the application wrote (what each
// Write accepted) over -t, and a receiver the bytes it read, until EOF: the
// application's bytes both ways, never headers or retransmissions. The
// bytes still in the send buffer when -t ends are delivered afterwards, and
// the receiver's time runs until it read the last of them, so on a slow
// path its rate is the lower and the truer one (iperf3's sender, too,
// counts what its socket buffer holds). The stream is reliable, so a test
// that ran to its end reports as many bytes received as sent; never more.
// Intervals cover -t. Retr counts stream packets that carried retransmitted
// bytes (Stats.Retransmitted); Cwnd is the controller's window
// (Stats.Window). Units: Bytes binary (KByte = 1024), bits decimal (Mbit =
// 10⁶), as in iperf3.
//
// -b paces the application's writes to the target rate (bits/s per
// connection, as iperf3's -b per stream): a sender writes a block only when
// the bytes written so far are within the rate. It is a ceiling, not a
// promise: fresh's congestion controller (-C) still governs below it and
// sends slower when the path says so.
//
// As in iperf3, -v prints the version, -V makes the text more detailed (the
// test's parameters, CPU use, fresh's own figures) and -d (--debug) turns on
// the transport's debug logs on stderr. Long forms are iperf3's (--time,
// --parallel, --reverse, …); Go durations (-t 10s, -i 500ms) work beside
// iperf3's bare seconds.
//
// # JSON (-J, --json-stream)
//
// With -J each side prints one JSON object when the test ends, with
// iperf3's keys: every one iperf3's TCP client writes (as of iperf3 3.12),
// each with fresh's value or, where fresh has not iperf3's concept, its
// nearest one (json.go says which), so that a script reading iperf3's
// output finds every key it looks up:
//
//	start.connected[]            socket (the stream's number), local_host, local_port, remote_host, remote_port
//	start.connecting_to          client: host, port; the server has accepted_connection
//	start.timestamp              time (RFC 1123), timesecs (Unix seconds)
//	start.cookie                 the test's random id, the same on both sides
//	start.tcp_mss_default        the datagram size the stream starts with (UDP payload bytes; fresh
//	                             has no MSS)
//	start.sock_bufsize           -w (0: not given); sndbuf_actual and rcvbuf_actual the stream's send
//	                             buffer and receive window ceilings (-w, or the transport's default)
//	start.test_start             every parameter: protocol "fresh", num_streams (-P), blksize (-l),
//	                             omit 0, duration (-t, s), bytes 0, blocks 0, reverse, tos (-S, or the
//	                             DSCP·4), target_bitrate (-b), bidir, fqrate 0, interval (-i, s)
//	intervals[].streams[]        socket, start, end, seconds, bytes, bits_per_second, omitted, sender;
//	                             a sending stream also retransmits, snd_cwnd (bytes, the controller's
//	                             window), snd_wnd (bytes, the peer's receive window ceiling), rtt
//	                             (µs, SRTT), rttvar (µs, RTTVAR), pmtu (bytes of IP packet: path MTU
//	                             discovery's datagram size and the UDP and IP headers)
//	intervals[].sum              the test's direction summed (sender: whether this host sends it);
//	                             --bidir adds sum_bidir_reverse for the other direction
//	end.streams[].sender         start, end, seconds, bytes (written in -t), bits_per_second,
//	                             retransmits, max_snd_cwnd, max_snd_wnd, max_rtt, min_rtt, mean_rtt (µs)
//	end.streams[].receiver       socket, start, end, seconds, bytes (read), bits_per_second
//	end.sum_sent, sum_received   the test's direction; --bidir adds sum_sent_bidir_reverse and
//	                             sum_received_bidir_reverse
//	end.cpu_utilization_percent  host_total, host_user, host_system and remote_… (this process's
//	                             CPU time over the test's wall time)
//	end.sender_tcp_congestion    the controller (-C), iperf3's name for it; receiver_tcp_congestion too
//	end.fresh                    what iperf3 has no field for: cc, dscp, srtt_us, min_rtt_us,
//	                             min_owd_us, cur_owd_us, delay_signal, packets_sent, packets_lost,
//	                             retransmitted (summed over the data connections; delays the worst),
//	                             from the side that sent the data, since only a sender measures
//	                             RTTs: with -R the server's, on both ends; with --bidir each its own
//	error                        set if the test failed
//
// --json-stream prints the same objects as iperf3 3.17's line-delimited
// events, one JSON object a line as they happen: {"event":"start","data":…},
// {"event":"interval","data":…} each interval, {"event":"end","data":…}, and
// {"event":"error","data":"…"} if the test failed.
//
// # Not supported
//
// bulk measures fresh's reliable stream, so iperf3's other modes and its
// TCP socket knobs are refused with an error naming the flag: -u (UDP),
// --sctp, -Z (zero copy), --cport, -B, -n, -k, -O, -F, -A, -N, -M, -T, -f,
// -D, -I, -L, --get-server-output, --connect-timeout, --fq-rate,
// --username/--rsa-… (authentication), --timestamps, --forceflush. -h lists them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/dscp"
	"github.com/fresh-udp/fresh/examples/internal/cli"
	"github.com/fresh-udp/fresh/internal/units"
	"github.com/fresh-udp/fresh/transport"
)

func main() { cli.Main("bulk", run) }

// options are the parsed flags.
type options struct {
	server     bool
	host       string
	port       int
	oneOff     bool
	duration   time.Duration
	interval   time.Duration
	cc         string
	blksize    int
	window     int
	parallel   int
	reverse    bool
	bidir      bool
	rate       float64        // bits/s per connection, 0: unlimited
	dscp       dscp.Codepoint // zero: unset (best effort)
	json       bool
	jsonStream bool
	logfile    string
	verbose    bool
	network    string // "", "ip4" (-4) or "ip6" (-6)
	version    bool
	creds      cli.Credentials
	logger     *slog.Logger
	// idleTimeout (--rcv-timeout) is the connections' Config.IdleTimeout,
	// how long a silent peer (a client that died) is waited for; zero is
	// the transport's default.
	idleTimeout time.Duration
}

// seconds is a -t or -i value: bare seconds as iperf3's ("10", "0.5") or a
// Go duration ("10s", "500ms").
type seconds time.Duration

func (s *seconds) String() string { return time.Duration(*s).String() }

func (s *seconds) Set(v string) error {
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1e9 {
			return fmt.Errorf("%q: not a number of seconds", v)
		}
		*s = seconds(time.Duration(f * float64(time.Second)))
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("%q: want seconds (10, 0.5) or a duration (10s, 500ms)", v)
	}
	*s = seconds(d)
	return nil
}

// millis is an --rcv-timeout value: bare milliseconds as iperf3's
// ("5000") or a Go duration ("5s").
type millis time.Duration

func (m *millis) String() string { return time.Duration(*m).String() }

func (m *millis) Set(v string) error {
	const most = 24 * time.Hour
	var d time.Duration
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		// Clamped so that the product cannot overflow; both ends are
		// refused below.
		n = min(max(n, 0), int64(most/time.Millisecond)+1)
		d = time.Duration(n) * time.Millisecond
	} else if d, err = time.ParseDuration(v); err != nil {
		return fmt.Errorf("%q: want milliseconds (5000) or a duration (5s, 500ms)", v)
	}
	if d <= 0 || d > most {
		return fmt.Errorf("%q: want a positive time up to a day, such as 5000 (ms) or 5s", v)
	}
	*m = millis(d)
	return nil
}

// bitrate is a -b value: bits per second as units.ParseRate reads them, so
// iperf3's 10M and 500K and the 10Mbps bulk prints are all accepted.
type bitrate struct{ units.Rate }

func (b *bitrate) Set(v string) error {
	if i := strings.LastIndexByte(v, '/'); i >= 0 && strings.Trim(v[i+1:], "0123456789") == "" {
		return fmt.Errorf("%q: iperf3's bursts (/N) are not supported: give a rate such as 10M", v)
	}
	return b.Rate.Set(v)
}

// tosFlag is -S: an IPv4 TOS byte as iperf3 takes it, decimal, 0x hex or 0
// octal (0x10 = 16 = DSCP 4). The DSCP is its upper six bits; the low two
// are ECN's and must be zero.
type tosFlag struct{ d *dscp.Codepoint }

func (t tosFlag) String() string {
	if t.d == nil || !t.d.IsSet() {
		return "0"
	}
	return strconv.Itoa(int(t.d.Code()) << 2)
}

func (t tosFlag) Set(v string) error {
	n, err := strconv.ParseInt(v, 0, 16)
	switch {
	case err != nil || n < 0 || n > 255:
		return fmt.Errorf("%q: want a TOS byte 0..255 such as 0x10 or 184 (or --dscp NAME)", v)
	case n&3 != 0:
		return fmt.Errorf("%q: the low two bits of the TOS byte are ECN's; give a multiple of 4 (DSCP·4)", v)
	}
	d, err := dscp.FromCode(uint8(n >> 2))
	if err != nil {
		return err
	}
	*t.d = d
	return nil
}

// unsupported is a flag of iperf3's that bulk refuses, naming it.
type unsupported struct {
	name, why string
	isBool    bool
}

func (u unsupported) String() string   { return "" }
func (u unsupported) IsBoolFlag() bool { return u.isBool }
func (u unsupported) Set(string) error {
	return fmt.Errorf("iperf3's %s is not supported by bulk: %s", dashed(u.name), u.why)
}

// dashed spells a flag as iperf3 does: -u, --cport.
func dashed(name string) string {
	if len(name) > 1 {
		return "--" + name
	}
	return "-" + name
}

// unsupportedFlags are iperf3's flags bulk does not implement, with why.
var unsupportedFlags = []unsupported{
	{"u", "bulk measures fresh's reliable stream, not raw UDP datagrams", true},
	{"udp", "bulk measures fresh's reliable stream, not raw UDP datagrams", true},
	{"sctp", "bulk runs over fresh only", true},
	{"Z", "no zero-copy send path in fresh", true},
	{"zerocopy", "no zero-copy send path in fresh", true},
	{"cport", "the client's ports are chosen by the system", false},
	{"B", "binding to an address is not implemented; the server listens on every address", false},
	{"bind", "binding to an address is not implemented; the server listens on every address", false},
	{"n", "tests run for a time (-t), not a byte count", false},
	{"bytes", "tests run for a time (-t), not a byte count", false},
	{"k", "tests run for a time (-t), not a block count", false},
	{"blockcount", "tests run for a time (-t), not a block count", false},
	{"O", "omitting the first seconds is not implemented", false},
	{"omit", "omitting the first seconds is not implemented", false},
	{"F", "bulk sends random bytes, not a file", false},
	{"file", "bulk sends random bytes, not a file", false},
	{"A", "CPU affinity is not implemented", false},
	{"N", "a TCP option; fresh paces its own packets", true},
	{"no-delay", "a TCP option; fresh paces its own packets", true},
	{"M", "a TCP option; fresh's datagram size is Config.MaxDatagram", false},
	{"set-mss", "a TCP option; fresh's datagram size is Config.MaxDatagram", false},
	{"T", "titles are not implemented", false},
	{"f", "the text output's units are iperf3's adaptive ones", false},
	{"format", "the text output's units are iperf3's adaptive ones", false},
	{"D", "run bulk -s under a service manager instead", true},
	{"I", "no pid file", false},
	{"L", "IPv6 flow labels are not implemented", false},
	{"get-server-output", "run the server with -J to see its results", true},
	{"connect-timeout", "the handshake times out after 10 s", false},
	{"fq-rate", "fresh paces by its controller; -b paces the writes", false},
	{"username", "iperf3's authentication is not implemented; bulk authenticates with TLS (--cert, --key, --ca)", false},
	{"rsa-public-key-path", "iperf3's authentication is not implemented; bulk authenticates with TLS (--cert, --key, --ca)", false},
	{"timestamps", "not implemented", true},
	{"forceflush", "output is written as it happens", true},
}

func parseFlags(args []string) (*options, error) {
	fs := flag.NewFlagSet("bulk", flag.ContinueOnError)
	o := &options{}
	long := map[string]string{} // short name -> iperf3's long one
	both := func(short, ln string, f func(name string)) { f(short); f(ln); long[short] = ln }
	both("s", "server", func(n string) { fs.BoolVar(&o.server, n, false, "run the server") })
	both("c", "client", func(n string) { fs.StringVar(&o.host, n, "", "run the client, connecting to `HOST`") })
	both("p", "port", func(n string) { fs.IntVar(&o.port, n, 5201, "UDP `port` of the server's control connection") })
	both("1", "one-off", func(n string) { fs.BoolVar(&o.oneOff, n, false, "server: handle one client, then exit") })
	dur, ivl := seconds(10*time.Second), seconds(time.Second)
	both("t", "time", func(n string) {
		fs.Var(&dur, n, "client: how long to send, `seconds` (10) or a duration (10s; default 10)")
	})
	both("i", "interval", func(n string) { fs.Var(&ivl, n, "`seconds` between reports (1, 0.5s; 0: none; default 1)") })
	both("C", "congestion", func(n string) {
		fs.StringVar(&o.cc, n, "owd", "client: congestion `controller` (both ends use it for what they send)")
	})
	blk, win := units.Size(128<<10), units.Size(0)
	both("l", "length", func(n string) {
		fs.Var(&blk, n, "client: `bytes` per Write (default 128K; K, M alone and KiB, MiB binary, kB, MB decimal, 1e6)")
	})
	both("w", "window", func(n string) {
		fs.Var(&win, n, "client: send buffer and receive window, `bytes`, both ends (0: transport default)")
	})
	both("P", "parallel", func(n string) { fs.IntVar(&o.parallel, n, 1, "client: `number` of parallel data connections") })
	both("R", "reverse", func(n string) { fs.BoolVar(&o.reverse, n, false, "client: reverse, the server sends") })
	fs.BoolVar(&o.bidir, "bidir", false, "client: both send at once, on every connection")
	var rate bitrate
	both("b", "bitrate", func(n string) {
		fs.Var(&rate, n, "client: target `rate` per connection, bits/s with K, M, G = 10³, 10⁶, 10⁹ (10M, 10Mbps, 10 Mbit/s; 0: unlimited); the controller still governs below it")
	})
	both("S", "tos", func(n string) {
		fs.Var(tosFlag{&o.dscp}, n, "client: IP `TOS` byte of the data, both directions (0x10, 184); its DSCP is TOS/4")
	})
	fs.Var(&o.dscp, "dscp", "client: DSCP of the data, both directions: a `name` (EF, AF41, CS1, …) or 0..63")
	both("J", "json", func(n string) { fs.BoolVar(&o.json, n, false, "JSON output, iperf3's keys") })
	fs.BoolVar(&o.jsonStream, "json-stream", false, "line-delimited JSON events (start, interval, end), as iperf3 3.17")
	fs.StringVar(&o.logfile, "logfile", "", "append the output to `FILE` instead of stdout")
	both("V", "verbose", func(n string) { fs.BoolVar(&o.verbose, n, false, "more detailed output") })
	var v4, v6 bool
	both("4", "version4", func(n string) { fs.BoolVar(&v4, n, false, "IPv4 only") })
	both("6", "version6", func(n string) { fs.BoolVar(&v6, n, false, "IPv6 only") })
	both("v", "version", func(n string) { fs.BoolVar(&o.version, n, false, "print the version and exit") })
	var debug bool
	both("d", "debug", func(n string) { fs.BoolVar(&debug, n, false, "the transport's debug logs (log/slog) on stderr") })
	var rcvTimeout millis
	fs.Var(&rcvTimeout, "rcv-timeout", "how long a silent peer is waited for before its test ends, `ms` (iperf3's) or a duration (default 30s)")
	o.creds.Register(fs, "both", "--")
	for _, u := range unsupportedFlags {
		fs.Var(u, u.name, "not supported: "+u.why)
	}
	// The flag package's own messages go nowhere: a parse error is
	// returned (and printed once by cli.Main), -h prints usage below.
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(os.Stderr, fs, long)
		}
		return nil, err
	}
	o.duration, o.interval, o.idleTimeout = time.Duration(dur), time.Duration(ivl), time.Duration(rcvTimeout)
	o.blksize, o.window, o.rate = int(blk), int(win), float64(rate.Rate)
	o.json = o.json || o.jsonStream
	if o.version {
		return o, nil
	}
	switch {
	case blk <= 0 || blk > 1<<30:
		return nil, fmt.Errorf("-l %s: want a positive size up to 1G (1GiB), such as 128K", &blk)
	case win > 1<<40:
		return nil, fmt.Errorf("-w %s: too large, at most 1TiB", &win)
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case o.server == (o.host != ""):
		return nil, errors.New("give exactly one of -s and -c HOST")
	case o.port < 0 || o.port > 65535:
		return nil, fmt.Errorf("-p %d: not a port", o.port)
	case o.duration <= 0:
		return nil, errors.New("-t must be positive")
	case o.interval < 0:
		return nil, errors.New("-i must not be negative")
	case o.parallel < 1 || o.parallel > 128:
		return nil, fmt.Errorf("-P %d: want 1..128 connections", o.parallel)
	case o.reverse && o.bidir:
		return nil, errors.New("give at most one of -R and --bidir")
	case v4 && v6:
		return nil, errors.New("give at most one of -4 and -6")
	case !slices.Contains(cc.Names(), o.cc):
		return nil, fmt.Errorf("-C %q: unknown controller (known: %s)", o.cc, strings.Join(cc.Names(), ", "))
	}
	if v4 {
		o.network = "ip4"
	} else if v6 {
		o.network = "ip6"
	}
	o.logger = cli.Logger(debug)
	return o, nil
}

// usage prints the flags, each short name with iperf3's long one, then
// iperf3's flags that bulk refuses.
func usage(w io.Writer, fs *flag.FlagSet, long map[string]string) {
	fmt.Fprintln(w, "Usage: bulk -s --cert FILE --key FILE [--ca FILE] [options]\n       bulk -c HOST [--ca FILE] [--cert FILE --key FILE] [options]\n"+
		"\niperf3's flags, over fresh (UDP, TLS 1.3; go run ./examples/certgen -dir certs makes throwaway credentials). Options:")
	aliases := map[string]bool{}
	for _, l := range long {
		aliases[l] = true
	}
	refused := map[string]bool{}
	for _, u := range unsupportedFlags {
		refused[u.name] = true
	}
	fs.VisitAll(func(f *flag.Flag) {
		if aliases[f.Name] || refused[f.Name] {
			return
		}
		names := "-" + f.Name
		if l, ok := long[f.Name]; ok {
			names += ", --" + l
		} else if len(f.Name) > 1 {
			names = "--" + f.Name
		}
		arg, text := flag.UnquoteUsage(f)
		if arg != "" {
			names += " " + arg
		}
		fmt.Fprintf(w, "  %-28s %s\n", names, text)
	})
	fmt.Fprintln(w, "\nNot supported (refused with an error naming the flag):")
	for i := 0; i < len(unsupportedFlags); {
		u, names := unsupportedFlags[i], dashed(unsupportedFlags[i].name)
		for i++; i < len(unsupportedFlags) && unsupportedFlags[i].why == u.why; i++ {
			names += ", " + dashed(unsupportedFlags[i].name)
		}
		fmt.Fprintf(w, "  %-28s %s\n", names, u.why)
	}
}

// run is the whole command: server or client.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	o, err := parseFlags(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		// Exit status 2, as the other examples' bad command lines.
		return &cli.UsageError{Err: err}
	}
	if o.version {
		fmt.Fprintf(stdout, "bulk (fresh over UDP), %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return nil
	}
	out := stdout
	if o.logfile != "" {
		f, err := os.OpenFile(o.logfile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("--logfile: %w", err)
		}
		defer f.Close()
		out = f
	}
	if o.server {
		host := ""
		switch o.network {
		case "ip4":
			host = "0.0.0.0"
		case "ip6":
			host = "::"
		}
		cfg, err := o.baseConfig()
		if err != nil {
			return err
		}
		addr := net.JoinHostPort(host, strconv.Itoa(o.port))
		ln, err := transport.Listen(addr, cfg)
		if err != nil {
			return cli.ExplainListen("-p", strconv.Itoa(o.port), err)
		}
		defer ln.Close()
		return serve(ctx, ln, o, out)
	}
	return client(ctx, o, out)
}

// baseConfig is what every connection of this side shares: the logger and
// the TLS credentials (or --insecure). A client verifies the server
// against the name given with -c (or --server-name), also where -4/-6
// resolved it to an address and for the data connections, which dial the
// address the control connection reached.
func (o *options) baseConfig() (transport.Config, error) {
	cfg := transport.Config{Logger: o.logger, IdleTimeout: o.idleTimeout}
	if err := o.creds.Config(&cfg, o.server); err != nil {
		return cfg, err
	}
	if cfg.TLS != nil && !o.server && cfg.TLS.ServerName == "" {
		cfg.TLS.ServerName = strings.Trim(o.host, "[]")
	}
	return cfg, nil
}

// Formatting as iperf3 does (unit_snprintf): bytes binary, bits decimal,
// three significant digits.

func formatBytes(n float64) string {
	units := []string{"Bytes", "KBytes", "MBytes", "GBytes", "TBytes"}
	u := 0
	for n >= 1024 && u < len(units)-1 {
		n /= 1024
		u++
	}
	return threeDigits(n) + " " + units[u]
}

func formatBits(bps float64) string {
	units := []string{"bits/sec", "Kbits/sec", "Mbits/sec", "Gbits/sec", "Tbits/sec"}
	u := 0
	for bps >= 1000 && u < len(units)-1 {
		bps /= 1000
		u++
	}
	return threeDigits(bps) + " " + units[u]
}

func threeDigits(v float64) string {
	switch {
	case v < 9.995:
		return fmt.Sprintf("%4.2f", v)
	case v < 99.95:
		return fmt.Sprintf("%4.1f", v)
	}
	return fmt.Sprintf("%4.0f", v)
}

// interval formats "  0.00-1.00  " as iperf3's Interval column.
func interval(start, end float64) string {
	return fmt.Sprintf("%6.2f-%-6.2f", start, end)
}
