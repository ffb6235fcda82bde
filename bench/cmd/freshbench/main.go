// Command freshbench runs the benchmark scenarios of bench/scenarios and
// reports, stores and plots their results: "freshbench -h" lists its
// commands, "freshbench <command> -h" their flags.
//
// It is the command line: it parses the flags and hands the work to the
// packages that do it — bench/runner (sim, emu: every scenario once per
// --cc controller, in the virtual-time simulator or in real time through
// the emulated bottleneck, with iperf3-like tables), bench/resultsmd,
// bench/cellular (traces), bench/e2e (interop), bench/judge and
// bench/plots (peers). Every flag, the scenario file and the result JSON
// are documented in bench/README.md.
//
// Exit status: 0 on success, 2 for a usage error (bad flag, unreadable or
// invalid scenario file), 1 when a run or writing its output fails.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/fresh-udp/fresh/bench/e2e"
	"github.com/fresh-udp/fresh/bench/internal/usage"
	"github.com/fresh-udp/fresh/bench/sim"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // a run, or writing its results, failed
	exitUsage   = 2 // bad command line or scenario file
)

const mainUsage = `usage: freshbench <command> [flags] [arguments]

Commands:
  sim      run scenarios in the virtual-time simulator (bench/sim)
  emu      run scenarios in real time through the emulated bottleneck
           (--relay: fresh endpoints over a userspace UDP relay; --tun:
           every flow, kernel TCP too, between two network namespaces
           through the TUN router, root only)
  results  regenerate bench/RESULTS.md: the paper's experiments, fairness,
           ACP against the oracle, with plots in bench/results
  traces   the Pantheon-style summary of the cellular-trace scenarios:
           throughput against p95 delay per trace, over ten seeds
  interop  the interop-style fault suite: fresh under the QUIC interop
           runner's test cases, one line per case
  judge    scenarios drawn at random from named families (alone, fillers,
           ownkind, aqm, jitter, loss, narrowack, acp), every controller
           judged on them: pass rates of the criteria and a leaderboard
  peers    the Pantheon-style figure of a peers comparison (MQTT, CoAP,
           QUIC against fresh) from emu --tun's JSON

Run "freshbench <command> -h" for the flags of a command.
Flags, the scenario file and the result JSON are documented in bench/README.md.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// command is a subcommand. run returns flag.ErrHelp for -h (then its
// usage is printed) and a usage error for a bad command line or scenario
// file; with hint, a usage error is followed by where the usage is.
type command struct {
	usage string
	run   func(args []string, stdout, stderr io.Writer) error
	hint  bool
}

var commands = map[string]command{
	"sim":     {simUsage, simCommand, true},
	"emu":     {emuUsage, emuCommand, true},
	"results": {resultsUsage, resultsCommand, false},
	"traces": {tracesUsage, func(args []string, stdout, stderr io.Writer) error {
		return tracesCommand(args, stdout, stderr, sim.Run)
	}, true},
	"interop": {interopUsage, func(args []string, stdout, stderr io.Writer) error {
		return interopCommand(args, stdout, stderr, e2e.Run)
	}, true},
	"judge": {judgeUsage, judgeCommand, true},
	"peers": {peersUsage, peersCommand, false},
}

// run dispatches the subcommand and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, mainUsage)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, mainUsage)
		return exitOK
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "freshbench: unknown command %q\n\n%s", args[0], mainUsage)
		return exitUsage
	}
	return c.finish(args[0], c.run(args[1:], stdout, stderr), stdout, stderr)
}

// finish prints what command cmd ended with — its usage for -h, the
// error, and after a usage error where the usage is — and returns the
// exit code.
func (c command) finish(cmd string, err error, stdout, stderr io.Writer) int {
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, c.usage)
		return exitOK
	case errors.Is(err, errSilent):
		return exitFailure
	case err != nil:
		fmt.Fprintln(stderr, err)
		if c.hint && exitCode(err) == exitUsage {
			fmt.Fprintf(stderr, "run \"freshbench %s -h\" for usage\n", cmd)
		}
	}
	return exitCode(err)
}

// errSilent fails a command with nothing more to say: its output could
// not be written to stdout.
var errSilent = errors.New("stdout")

// withUsage is a usage error that prints usage after its message.
func withUsage(usage, format string, args ...any) error {
	return usagef("%s\n\n%s", fmt.Sprintf(format, args...), strings.TrimSuffix(usage, "\n"))
}

// usagef is a mistake on the command line or in a scenario file: the
// message names the flag or file, and the exit code is exitUsage.
func usagef(format string, args ...any) error { return usage.Errorf(format, args...) }

// exitCode maps an error to the exit status.
func exitCode(err error) int {
	switch {
	case err == nil:
		return exitOK
	case usage.Is(err):
		return exitUsage
	}
	return exitFailure
}
