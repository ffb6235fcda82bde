package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fresh-udp/fresh/bench/e2e"
	"github.com/fresh-udp/fresh/internal/realtime"
)

// "freshbench interop" prints the matrix of the interop-style fault suite
// (bench/e2e: Cases, Run, the table TestInterop runs too).

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

// runCase runs one case (e2e.Run; a test's fake).
type runCase func(ctx context.Context, c e2e.Case, opts e2e.Options) e2e.Result

func runInteropCommand(args []string, stdout, stderr io.Writer) int {
	err := interopCommand(args, stdout, stderr, e2e.Run)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, interopUsage)
		return exitOK
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		if exitCode(err) == exitUsage {
			fmt.Fprintln(stderr, `run "freshbench interop -h" for usage`)
		}
	}
	return exitCode(err)
}

func interopCommand(args []string, stdout, stderr io.Writer, run runCase) error {
	fs := flag.NewFlagSet("interop", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var list string
	var md bool
	opts := e2e.Options{Strict: realtime.Enabled(), Logf: func(format string, args ...any) {
		fmt.Fprintf(stderr, "freshbench interop: "+format+"\n", args...)
	}}
	fs.StringVar(&list, "cases", "", "")
	fs.BoolVar(&opts.Full, "full", false, "")
	fs.BoolVar(&opts.Strict, "strict", opts.Strict, "")
	fs.BoolVar(&md, "md", false, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usagef("freshbench interop: %v", err)
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
	if md {
		fmt.Fprintln(stdout, "| case | result | time | bytes | promise | measured |")
		fmt.Fprintln(stdout, "|---|---|---:|---:|---|---|")
	} else {
		fmt.Fprintf(stdout, "%-20s %-12s %8s %10s  %s\n", "case", "result", "time", "bytes", "measured")
	}
	failed := 0
	for _, c := range cases {
		res := run(context.Background(), c, opts)
		verdict, detail := string(res.Status), res.Measured
		if res.Err != nil {
			detail = strings.TrimPrefix(detail+"; "+res.Err.Error(), "; ")
		}
		if res.Status == e2e.Fail {
			failed++
			if res.Known != "" {
				verdict, detail = "fail (known)", detail+"; known: "+res.Known
			}
		}
		took := res.Took.Round(100 * time.Millisecond)
		if md {
			fmt.Fprintf(stdout, "| `%s` | %s | %v | %d | %s | %s |\n", c.Name, verdict, took, res.Bytes, mdCell(c.Promise), mdCell(detail))
		} else {
			fmt.Fprintf(stdout, "%-20s %-12s %8v %10d  %s\n", c.Name, verdict, took, res.Bytes, detail)
		}
	}
	if failed > 0 {
		return fmt.Errorf("freshbench interop: %d of %d cases failed", failed, len(cases))
	}
	return nil
}

// mdCell makes s safe in a Markdown table cell.
func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
