// Command loopbench compares bulk goodput and CPU cost on plain loopback
// (127.0.0.1, no emulated bottleneck) of three stacks, side by side in one
// run:
//
//   - fresh's stream (transport.Listen / transport.Dial), once per
//     congestion controller given with -cc;
//   - a quic-go stream (github.com/quic-go/quic-go, default Config: GSO on
//     where the kernel has UDP_SEGMENT, ECN on unless QUIC_GO_DISABLE_ECN);
//   - kernel TCP through iperf3 (Debian package iperf3), with the system's
//     default congestion controller unless -iperf3-cc names one.
//
// Usage:
//
//	loopbench [-bytes 1GB] [-runs 5] [-cc owd,cubic] [-json FILE] [-md FILE]
//	          [-iperf3=true] [-iperf3-cc NAME] [-timeout 5m] [-cpuprofile FILE]
//	          [-max-datagram BYTES]
//
// # What is measured
//
// fresh and quic-go run in this process. A server accepts one connection and
// io.Copy's its stream to io.Discard; the client writes -bytes bytes from one
// reused 64 KiB buffer and closes its write side. The transfer time is from
// just before the first Write to the server's io.EOF; goodput is
// bytes·8 / that time. Handshakes and teardown are outside it.
//
// iperf3 runs as two child processes (iperf3 -s -1 and iperf3 -c … -n BYTES
// -J); goodput is the JSON's end.sum_received.bits_per_second (the
// receiver's bytes over the receiver's time, as iperf3 reports it).
//
// CPU is user+system time from getrusage(2): for the in-process stacks the
// RUSAGE_SELF delta over the transfer window (both endpoints and the Go
// runtime: GC, scheduler); for iperf3 the RUSAGE_CHILDREN delta over both
// processes' whole lives (setup included, a few ms). On loopback the kernel
// does the receiver's protocol work in softirq context, mostly right after
// the sender's transmit on the same CPU; with tick-based CPU accounting (as
// on Debian kernels) a softirq tick is charged to the task it interrupted,
// so both columns include the kernel's work for both ends, except what ran
// in ksoftirqd. That part, and every other job on the machine, shows in the
// "others, cores" column: /proc/stat busy time minus the stack's own CPU,
// over the sample's wall time.
//
// CPU cost is reported per GB of payload (10⁹ bytes): CPU-seconds / GB.
//
// # Noise
//
// Each run does every stack once, in order (fresh per controller, quic-go,
// iperf3), and the report takes per-stack medians over runs, so machine
// noise (other jobs on a shared machine) hits every stack alike. The
// 1-minute load average is recorded with every sample.
//
// # iperf3 missing
//
// When iperf3 is not on PATH the kernel-TCP column is skipped with a note on
// stderr, unless the CI environment variable is set: then it is an error, so
// a CI job cannot silently report without its baseline. loopbench never
// installs anything.
//
// Exit status: 0 on success, 2 for a usage error, 1 when a transfer or
// writing the output fails.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/internal/units"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // a transfer, or writing the results, failed
	exitUsage   = 2 // bad command line
)

// options are the parsed command line.
type options struct {
	bytes      int64         // payload per transfer, bytes
	runs       int           // rounds over every stack
	ccs        []string      // fresh controllers, in run order
	jsonPath   string        // raw samples and medians, "" for none
	mdPath     string        // Markdown tables, "" for none
	iperf3     bool          // include kernel TCP via iperf3
	iperf3CC   string        // iperf3 -C, "" for the system default
	timeout    time.Duration // bound on one transfer, handshake included
	cpuProfile string        // whole-process CPU profile, "" for none
	maxDgram   int           // fresh's Config.MaxDatagram, 0 for the default
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run parses args, runs the benchmark and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	opts, err := parseFlags(args, stderr)
	if err == flag.ErrHelp {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "loopbench: %v\n", err)
		return exitUsage
	}
	if opts.iperf3 {
		if _, err := exec.LookPath("iperf3"); err != nil {
			if os.Getenv("CI") != "" {
				fmt.Fprintf(stderr, "loopbench: iperf3 not found and CI is set: install the Debian package iperf3 (%v)\n", err)
				return exitFailure
			}
			fmt.Fprintln(stderr, "loopbench: note: iperf3 not found; kernel TCP skipped (apt-get install iperf3)")
			opts.iperf3 = false
		}
	}
	if opts.cpuProfile != "" {
		f, err := os.Create(opts.cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "loopbench: %v\n", err)
			return exitFailure
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "loopbench: %v\n", err)
			return exitFailure
		}
		defer pprof.StopCPUProfile()
	}

	rep, err := benchmark(opts, "loopbench "+strings.Join(args, " "), stderr)
	if err != nil {
		fmt.Fprintf(stderr, "loopbench: %v\n", err)
		return exitFailure
	}
	writeTable(stdout, rep)
	if opts.jsonPath != "" {
		if err := writeJSONFile(opts.jsonPath, rep); err != nil {
			fmt.Fprintf(stderr, "loopbench: %v\n", err)
			return exitFailure
		}
	}
	if opts.mdPath != "" {
		if err := writeMarkdownFile(opts.mdPath, rep); err != nil {
			fmt.Fprintf(stderr, "loopbench: %v\n", err)
			return exitFailure
		}
	}
	if rep.failed() {
		return exitFailure
	}
	return exitOK
}

// parseFlags parses and validates the command line.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("loopbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		opts  options
		size  = units.Size(1e9)
		ccCSV = fs.String("cc", "owd,cubic", "fresh congestion controllers, comma-separated (cc registry names)")
	)
	fs.Var(&size, "bytes", "`size` of the payload per transfer: 1GB, 512MB (10³ⁿ), 64MiB or 64M (2¹⁰ⁿ), or a byte count")
	fs.IntVar(&opts.runs, "runs", 5, "rounds; each round runs every stack once")
	fs.StringVar(&opts.jsonPath, "json", "", "write raw per-run samples and medians as JSON to `FILE`")
	fs.StringVar(&opts.mdPath, "md", "", "write the Markdown tables (medians, ratios) to `FILE`")
	fs.BoolVar(&opts.iperf3, "iperf3", true, "include kernel TCP through iperf3 child processes")
	fs.StringVar(&opts.iperf3CC, "iperf3-cc", "", "TCP congestion controller for iperf3 -C (default: the system's)")
	fs.DurationVar(&opts.timeout, "timeout", 5*time.Minute, "bound on one transfer")
	fs.StringVar(&opts.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to `FILE`")
	fs.IntVar(&opts.maxDgram, "max-datagram", 0, "fresh's transport.Config.MaxDatagram, the ceiling of path MTU discovery (`bytes`; 0: the default, 1452)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: loopbench [flags]\n\nBulk goodput and CPU per GB on loopback: fresh vs quic-go vs kernel TCP (iperf3).\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if size <= 0 {
		return options{}, fmt.Errorf("-bytes %s: want a positive size such as 1GB", &size)
	}
	opts.bytes = int64(size)
	if opts.runs < 1 {
		return options{}, fmt.Errorf("-runs %d: need at least 1", opts.runs)
	}
	if opts.timeout <= 0 {
		return options{}, fmt.Errorf("-timeout %v: must be positive", opts.timeout)
	}
	for _, name := range strings.Split(*ccCSV, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		if _, err := cc.New(name, cc.DefaultMSS); err != nil {
			return options{}, fmt.Errorf("-cc: %w", err)
		}
		opts.ccs = append(opts.ccs, name)
	}
	return opts, nil
}
