package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/fresh-udp/fresh/bench/e2e"
	"github.com/fresh-udp/fresh/internal/realtime"
)

// "freshbench interop" prints the matrix of the interop-style fault suite
// (bench/e2e: Cases, Run, the table TestInterop runs too, RunMatrix).

const interopUsage = `usage: freshbench interop [-cases LIST] [-full] [-strict] [-md]

Runs the interop-style fault suite: fresh's own protocol under the QUIC
interop runner's test cases (handshakeloss, handshakecorruption,
transferloss, transfercorruption, blackhole, amplificationlimit,
rebind-port, rebind-addr, resumption, zerortt, keyupdate, goodput,
crosstraffic), through the userspace relay on the runner's link (10 Mbit/s,
15 ms each way, a 25-packet queue); crosstraffic through the TUN router
beside iperf3 (root, /dev/net/tun and iperf3, or it is skipped). Each case
checks that what arrived is byte for byte what was sent, and the
protocol's promise for that case. One line per case: the verdict, its
time, the bytes that arrived byte-exact, and what the promise's check
measured.

Flags:
  -cases LIST  the cases to run, comma-separated (default: all)
  -full        the runner's sizes (50 handshakes, 10 MB transfers, a
               rebinding or a blackout every 5 s): a few minutes; the
               default sizes are TestInterop's
  -strict      also enforce the bounds that depend on the machine's speed
               (goodput against the link rate; default: on with
               FRESH_REALTIME=1); run it on a quiet machine
  -md          print the matrix as a Markdown table (bench/RESULTS.md's)
  -h, --help   print this help

Exit status: 0 every case passed (or was skipped), 1 a case failed
(known failures too: the suite's target is that every case passes), 2
usage error.
`

// interopCommand is "freshbench interop", running each case with run
// (e2e.Run, or a test's fake).
func interopCommand(args []string, stdout, stderr io.Writer, run func(context.Context, e2e.Case, e2e.Options) e2e.Result) error {
	fs := newFlagSet("interop")
	var list string
	var md bool
	opts := e2e.Options{Strict: realtime.Enabled(), Logf: func(format string, args ...any) {
		fmt.Fprintf(stderr, "freshbench interop: "+format+"\n", args...)
	}}
	fs.StringVar(&list, "cases", "", "")
	fs.BoolVar(&opts.Full, "full", false, "")
	fs.BoolVar(&opts.Strict, "strict", opts.Strict, "")
	fs.BoolVar(&md, "md", false, "")
	if err := parseFlags(fs, args, "freshbench interop"); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("freshbench interop: unexpected argument %q (name cases with -cases)", fs.Arg(0))
	}
	var names []string
	if list != "" {
		names = strings.Split(list, ",")
	}
	cases, err := e2e.Lookup(names)
	if err != nil {
		return usagef("freshbench interop: -cases: %v", err)
	}
	size := "default sizes"
	if opts.Full {
		size = "full sizes"
	}
	fmt.Fprintf(stderr, "freshbench interop: %d cases, %s, bounds %s\n", len(cases), size, map[bool]string{true: "enforced", false: "measured only"}[opts.Strict])
	if failed := e2e.RunMatrix(context.Background(), stdout, md, cases, opts, run); failed > 0 {
		return fmt.Errorf("freshbench interop: %d of %d cases failed", failed, len(cases))
	}
	return nil
}
