// Command bulk measures bulk-transfer throughput over fresh, the way iperf3
// does over TCP: a server that receives, a client that sends for a fixed
// time and reports per-interval and total throughput with its controller's
// retransmissions and congestion window.
//
//	bulk -s [-p 5201] [-1]
//	bulk -c HOST [-p 5201] [-t 10s] [-i 1s] [-C owd|cubic|reno|htcp|rttdelay] [-l 128K] [-w 4M] [-J]
//
// The client writes random bytes to the connection's stream for -t, then
// half-closes it (CloseWrite). The server reads until EOF, then writes one
// JSON line back on its own stream — the bytes it received and over how
// long, from the first byte to EOF — and the client prints that as the
// receiver's line of the summary, as iperf3 does.
//
// Output, as iperf3's:
//
//	[ ID] Interval           Transfer     Bitrate         Retr  Cwnd
//	[  1]   0.00-1.00   sec   232 KBytes  1.90 Mbits/sec    0   14.1 KBytes
//	…
//	[  1]   0.00-10.00  sec  2.26 MBytes  1.90 Mbits/sec    3             sender
//	[  1]   0.00-10.06  sec  2.27 MBytes  1.89 Mbits/sec                  receiver
//
// Transfer and Bitrate of the intervals and of the sender line count stream
// bytes the receiver acknowledged in that time (Stats.StreamBytesAcked), not
// bytes handed to Write: the stream's send buffer (-w, up to 4 MiB by default)
// can hold seconds of data on a slow path, and counting it would overstate the
// rate. The bytes still buffered when -t ends are delivered afterwards and
// counted by the receiver only, whose interval runs until it read EOF.
// Retr counts stream packets that carried retransmitted bytes
// (Stats.Retransmitted); Cwnd is the controller's window (Stats.Window).
// Units: Bytes are binary (KByte = 1024), bits decimal (Mbit = 10⁶), as in
// iperf3.
//
// # JSON (-J)
//
// With -J the client prints one JSON object instead, shaped like iperf3's:
//
//	start.connected[0]           local_host, local_port, remote_host, remote_port
//	start.connecting_to          host, port
//	start.timestamp              time (RFC 1123), timesecs (Unix seconds)
//	start.test_start             protocol "fresh", num_streams 1, blksize (-l), duration (s)
//	intervals[].streams[0], .sum start, end, seconds, bytes, bits_per_second,
//	                             retransmits; streams also snd_cwnd (bytes) and rtt (µs, SRTT)
//	end.sum_sent                 start, end, seconds, bytes, bits_per_second, retransmits
//	                             (bytes acknowledged during -t, as the sender line)
//	end.sum_received             start, end, seconds, bytes, bits_per_second (the server's report)
//	end.streams[0].sender        as sum_sent plus max_snd_cwnd (bytes), max_rtt, min_rtt,
//	                             mean_rtt (µs; mean of the per-interval SRTTs)
//	end.streams[0].receiver      as sum_received
//	end.sender_tcp_congestion    the controller (-C), iperf3's name for it
//	end.receiver_tcp_congestion  the receiver's ("-": it runs none for this stream)
//	end.fresh                    what iperf3 has no field for: cc, srtt_us, min_rtt_us,
//	                             min_owd_us, cur_owd_us, delay_signal, packets_lost,
//	                             retransmitted, packets_sent, drain_seconds (CloseWrite
//	                             to the server's report)
//	error                        set if the test failed
//
// Not implemented: -R (reverse), -P (parallel streams), -u, -b; the server
// has no -J.
//
// Flags:
//
//	-s          run the server
//	-c HOST     run the client, sending to HOST
//	-p PORT     UDP port (default 5201, iperf3's)
//	-1          server: handle one client, then exit
//	-t 10s      client: how long to send
//	-i 1s       interval between reports (0: none)
//	-C owd      client: congestion controller (owd, cubic, reno, htcp, rttdelay, …)
//	-l 128K     client: bytes per Write (K, M, G binary as iperf3's; KB, MB decimal; 1e6)
//	-w 0        client: send buffer and receive window in bytes (0: transport's 4 MiB)
//	-J          client: JSON output
//	-v          debug logs (log/slog) on stderr
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/examples/internal/cli"
	"github.com/fresh-udp/fresh/transport"
)

func main() { cli.Main("bulk", run) }

// options are the parsed flags.
type options struct {
	server   bool
	host     string
	port     int
	oneOff   bool
	duration time.Duration
	interval time.Duration
	cc       string
	blksize  int
	window   int
	json     bool
	logger   *slog.Logger
}

func parseFlags(args []string) (*options, error) {
	fs := flag.NewFlagSet("bulk", flag.ContinueOnError)
	o := &options{}
	fs.BoolVar(&o.server, "s", false, "run the server")
	fs.StringVar(&o.host, "c", "", "run the client, sending to `HOST`")
	fs.IntVar(&o.port, "p", 5201, "UDP `port`")
	fs.BoolVar(&o.oneOff, "1", false, "server: handle one client, then exit")
	fs.DurationVar(&o.duration, "t", 10*time.Second, "client: how long to send")
	fs.DurationVar(&o.interval, "i", time.Second, "interval between reports (0: none)")
	fs.StringVar(&o.cc, "C", "owd", "client: congestion `controller`")
	blk, win := cli.Size(128<<10), cli.Size(0)
	fs.Var(&blk, "l", "client: `bytes` per Write (default 128K; K, M binary, KB, MB decimal, 1e6)")
	fs.Var(&win, "w", "client: send buffer and receive window, `bytes` (0: transport default)")
	fs.BoolVar(&o.json, "J", false, "client: JSON output")
	verbose := fs.Bool("v", false, "debug logs on stderr")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	o.blksize, o.window = int(blk), int(win)
	switch {
	case blk <= 0 || blk > 1<<30:
		return nil, fmt.Errorf("-l %d: want a positive size up to 1G, such as 128K", blk)
	case win > 1<<40:
		return nil, fmt.Errorf("-w %d: too large", win)
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
	case !slices.Contains(cc.Names(), o.cc):
		return nil, fmt.Errorf("-C %q: unknown controller (known: %s)", o.cc, strings.Join(cc.Names(), ", "))
	}
	o.logger = cli.Logger(*verbose)
	return o, nil
}

// run is the whole command: server or client.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	if o.server {
		ln, err := transport.Listen(net.JoinHostPort("", strconv.Itoa(o.port)), transport.Config{Logger: o.logger})
		if err != nil {
			return err
		}
		defer ln.Close()
		return serve(ctx, ln, o, stdout)
	}
	return client(ctx, o, stdout)
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
