package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/internal/units"
	"github.com/fresh-udp/fresh/transport"
)

// Sizes on the wire. The transport's default Config.MaxDatagram is 1452
// bytes of UDP payload, the size path MTU discovery reaches across the
// relay (which carries any size); the relay counts 28 more for the IPv4
// and UDP headers when it serialises a datagram (bench/emu, "Topology").
const (
	datagram   = transport.DefaultMaxDatagram // bytes of UDP payload, transport's default MaxDatagram
	ipv4UDPHdr = 28                           // bytes, IPv4 (20) + UDP (8) headers
	wireSize   = datagram + ipv4UDPHdr        // bytes a full datagram occupies on the link
)

// options are the parsed flags.
type options struct {
	rate     cc.Bandwidth  // bit/s, each way
	rtt      time.Duration // round-trip propagation delay
	queue    int           // FIFO limit, packets, each way
	bdp      float64       // one bandwidth-delay product, full datagrams
	loss     float64       // forward random loss, 0..1
	duration time.Duration // per phase
	ccs      []string
	hz       float64 // sensing rate, readings/s
	seed     uint64
	logger   *slog.Logger
}

// parseFlags reads args into options; errors wrap errUsage.
func parseFlags(args []string) (*options, error) {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	rate := units.Rate(2 * cc.MbitPerSecond)
	fs.Var(&rate, "rate", "bottleneck `rate` each way, bits/s: 2Mbps, 10M, 500k, 10 Mbit/s")
	rtt := fs.Duration("rtt", 40*time.Millisecond, "round-trip propagation delay (half each way)")
	queue := fs.Int("queue", 0, "FIFO limit in `packets` each way (0: one bandwidth-delay product)")
	loss := fs.Float64("loss", 0, "random loss `probability` per packet on the forward path, 0..1")
	duration := fs.Duration("duration", 12*time.Second, "length of each phase")
	ccList := fs.String("cc", "owd,cubic", "comma-separated `controllers`, one phase each")
	hz := fs.Float64("hz", 200, "sensing rate: readings per second offered to SendUpdate")
	seed := fs.Uint64("seed", 1, "seed of the relay's random loss and of the uploaded bytes")
	verbose := fs.Bool("v", false, "debug logs of transport and relay on stderr")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, errors.Join(errUsage, err)
		}
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	bad := func(format string, a ...any) error {
		err := fmt.Errorf(format, a...)
		fmt.Fprintln(os.Stderr, "demo:", err)
		fs.Usage()
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return nil, bad("unexpected argument %q", fs.Arg(0))
	}
	o := &options{rtt: *rtt, queue: *queue, loss: *loss, duration: *duration, hz: *hz, seed: *seed}
	o.rate = cc.Bandwidth(rate)
	switch {
	case o.rate <= 0:
		return nil, bad("-rate %s: want a positive rate such as 2Mbps or 10M", &rate)
	case o.rtt < 0:
		return nil, bad("-rtt %v: must not be negative", o.rtt)
	case o.duration <= 0:
		return nil, bad("-duration %v: must be positive", o.duration)
	case o.queue < 0:
		return nil, bad("-queue %d: must not be negative (0: one bandwidth-delay product)", o.queue)
	case o.loss < 0 || o.loss >= 1:
		return nil, bad("-loss %g: want a probability in [0, 1)", o.loss)
	case o.hz <= 0:
		return nil, bad("-hz %g: must be positive", o.hz)
	}
	for name := range strings.SplitSeq(*ccList, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !slices.Contains(cc.Names(), name) {
			return nil, bad("-cc: unknown controller %q (known: %s)", name, strings.Join(cc.Names(), ", "))
		}
		o.ccs = append(o.ccs, name)
	}
	if len(o.ccs) == 0 {
		return nil, bad("-cc: no controller")
	}
	o.bdp = float64(o.rate) * o.rtt.Seconds() / 8 / wireSize
	if o.queue == 0 {
		o.queue = max(2, int(math.Round(o.bdp)))
	}
	o.logger = slog.New(slog.DiscardHandler)
	if *verbose {
		o.logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return o, nil
}

// run is the whole demo: parse args, run one phase per controller, print
// the comparison. It returns ctx's error if ctx ended first (after printing
// what it measured).
func run(ctx context.Context, args []string, stdout io.Writer) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "fresh demo: agent → monitor across an emulated bottleneck on loopback (bench/emu)\n")
	fmt.Fprintf(stdout, "  path:   %s each way, RTT %v (%v each way), forward loss %g\n",
		units.FormatRate(o.rate), o.rtt, o.rtt/2, o.loss)
	fmt.Fprintf(stdout, "  queue:  FIFO of %d packets each way (one BDP = %s × %v / 8 / %d B = %.1f packets)\n",
		o.queue, units.FormatRate(o.rate), o.rtt, wireSize, o.bdp)
	fmt.Fprintf(stdout, "  true minimum one-way delay of a full datagram: %.1f ms propagation + %.1f ms serialisation = %.1f ms\n",
		msf(o.rtt/2), msf(serialisation(o.rate)), msf(o.rtt/2+serialisation(o.rate)))
	fmt.Fprintf(stdout, "  agent:  sensor readings at %g Hz through SendUpdate (ACP, CS7) + a bulk upload of random bytes\n", o.hz)
	fmt.Fprintf(stdout, "  phases: %s, %v each, a new connection each (TLS 1.3, a throwaway loopback certificate)\n", strings.Join(o.ccs, ", "), o.duration)
	fmt.Fprint(stdout, lineLegend)

	var results []*result
	for _, name := range o.ccs {
		fmt.Fprintf(stdout, "\n== %s ==\n", name)
		r, err := runPhase(ctx, o, name, stdout)
		if r != nil {
			results = append(results, r)
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("phase %s: %w", name, err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	printTable(stdout, results)
	return ctx.Err()
}

// serialisation is how long a full datagram takes onto a link of rate.
func serialisation(rate cc.Bandwidth) time.Duration {
	return time.Duration(float64(wireSize*8) / float64(rate) * float64(time.Second))
}

// lineLegend explains the per-second columns, printed before the first phase.
const lineLegend = `
Per second: goodput: upload bytes the monitor read; srtt: the agent's smoothed RTT;
owd min/cur est.: the one-way delay the agent's controller acts on (minimum, current),
computed from stamps corrected by the monitor's estimate of the clock offset ("rtt":
derived from the RTT while that estimate is still learning); clock est.: that estimate.
Both ends share one clock here, so its truth is 0 and anything else is error in every
owd; cwnd: congestion window; acp: the update rate ACP allows now; updates: readings
the monitor received; age: the mean age of the monitor's newest reading over the second.
The sensor offers every reading, but ACP sends only the freshest one not yet sent, at
the rate that keeps the monitor's view freshest on this path (a few per RTT); the
others are superseded, never queued (counted at the end).
`

// tableLegend explains the final table.
const tableLegend = `
goodput: upload bytes the monitor read; age: time-average and 95th-percentile age of the monitor's
newest reading (its transport Stats.Age); updates: readings received per second; srtt, lost, retx:
the agent's; fwd: the relay's agent→monitor FIFO (largest backlog/limit, drops, link utilisation).
Readings: offered to SendUpdate by the sensor (-hz, less if the machine is busy); sent; superseded:
a fresher reading replaced it before it could go; lost: sent and not acknowledged (never
retransmitted: the next is fresher).
`

// printTable writes the side-by-side comparison of the phases.
func printTable(w io.Writer, results []*result) {
	if len(results) == 0 {
		return
	}
	fmt.Fprintln(w)
	var buf strings.Builder
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "controller\tgoodput\tage mean\tage p95\tupdates\tsrtt\tlost\tretx\tfwd queue max\tfwd drops\tfwd util\t")
	fmt.Fprintln(tw, "\t(Mbit/s)\t(ms)\t(ms)\t(/s)\t(ms)\t(pkts)\t(pkts)\t(pkts)\t(pkts)\t\t")
	for _, r := range results {
		secs := r.elapsed.Seconds()
		fwd := r.relay.Forward.Link
		name := r.cc
		if r.interrupted {
			name += "*"
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t%d\t%d/%d\t%d\t%.0f%%\t\n",
			name, float64(r.bytes)*8/secs/1e6,
			msf(r.monitor.Age.Mean), msf(r.monitor.Age.P95), float64(r.monitor.UpdatesReceived)/secs,
			msf(r.agent.SRTT), r.agent.PacketsLost, r.agent.Retransmitted,
			fwd.MaxBacklog, r.queue, fwd.DroppedOverflow+fwd.DroppedRandom,
			100*fwd.BusyTime.Seconds()/secs)
	}
	tw.Flush()
	for line := range strings.Lines(buf.String()) {
		fmt.Fprintln(w, strings.TrimRight(line, " \n"))
	}
	fmt.Fprint(w, tableLegend)
	for _, r := range results {
		secs := r.elapsed.Seconds()
		fmt.Fprintf(w, "%s: readings %.1f/s offered, %.1f/s sent, %.1f/s superseded, %.1f/s lost\n", r.cc,
			float64(r.offered)/secs, float64(r.agent.UpdatesSent)/secs,
			float64(r.agent.UpdatesSuperseded)/secs, float64(r.agent.UpdatesLost)/secs)
	}
	for _, r := range results {
		if r.interrupted {
			fmt.Fprintf(w, "* %s was interrupted after %v\n", r.cc, r.elapsed.Round(10*time.Millisecond))
		}
	}
}
