// Command freshbench runs the benchmark scenarios of bench/scenarios and
// reports, stores and plots their results.
//
//	freshbench sim [flags] SCENARIO.json...
//	freshbench emu --relay|--tun [flags] SCENARIO.json...
//	freshbench results [--out FILE] [--plots DIR]
//	freshbench traces [--seeds LIST] [--cc LIST] [--out DIR]
//	freshbench interop [-cases LIST] [-full] [-strict] [-md]
//	freshbench judge [-families LIST] [-seeds LIST] [-draws N] [-cc LIST] [-json FILE] [-md]
//	freshbench peers --out FILE.png RESULT.json...
//
// runs each scenario in the virtual-time simulator (bench/sim), or in real
// time with fresh endpoints through the emulated bottleneck (bench/emudriver),
// once per controller given with --cc, and prints an iperf3-like summary
// table; interop runs the interop-style fault suite (bench/e2e) and prints
// its matrix, one line per case; judge draws scenarios at random from
// named families and judges every controller on them (bench/judge). Every
// flag, the scenario file and the result JSON are documented in
// bench/README.md.
//
// Exit status: 0 on success, 2 for a usage error (bad flag, unreadable or
// invalid scenario file), 1 when a run or writing its output fails.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
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
	case "sim":
		return runSimCommand(args[1:], stdout, stderr)
	case "emu":
		return runEmuCommand(args[1:], stdout, stderr)
	case "results":
		return runResultsCommand(args[1:], stdout, stderr)
	case "traces":
		return runTracesCommand(args[1:], stdout, stderr)
	case "interop":
		return runInteropCommand(args[1:], stdout, stderr)
	case "judge":
		return runJudgeCommand(args[1:], stdout, stderr)
	case "peers":
		return runPeersCommand(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "freshbench: unknown command %q\n\n%s", args[0], mainUsage)
	return exitUsage
}

// usageError is a mistake on the command line or in a scenario file: the
// message names the flag or file, and the exit code is exitUsage.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// exitCode maps an error to the exit status.
func exitCode(err error) int {
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		return exitUsage
	}
	return exitFailure
}
