package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/e2e"
)

func TestInteropCommandUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, exitOK, run([]string{"interop", "-h"}, &stdout, &stderr))
	require.Contains(t, stdout.String(), "freshbench interop [-cases LIST]")
	for _, args := range [][]string{
		{"interop", "-cases", "handshakeloss,warp"},
		{"interop", "extra"},
		{"interop", "-bogus"},
	} {
		stderr.Reset()
		require.Equal(t, exitUsage, run(args, &stdout, &stderr), "%v", args)
		require.Contains(t, stderr.String(), "freshbench interop")
	}
	require.Contains(t, stderr.String(), "-bogus")
}

// The matrix: one line per case asked for, in the suite's order, with the
// verdict, what was measured and why a case failed; a failure (a known
// one too) makes the exit status 1. No case of the suite is a known
// failure today, so the fake runner marks two as failing, one of them
// known, as Run reports a case whose KnownFailure is set.
func TestInteropCommandMatrix(t *testing.T) {
	fake := func(_ context.Context, c e2e.Case, opts e2e.Options) e2e.Result {
		require.True(t, opts.Full)
		res := e2e.Result{Case: c.Name, Status: e2e.Pass, Promise: c.Promise, Known: c.KnownFailure, Measured: "measured " + c.Name, Bytes: 42, Took: 1500 * time.Millisecond}
		switch c.Name {
		case "handshakecorruption":
			res.Status, res.Err, res.Known = e2e.Fail, errors.New("it broke"), "a weakness not fixed yet"
		case "blackhole":
			res.Status, res.Err = e2e.Fail, errors.New("it broke unexpectedly")
		}
		return res
	}
	var stdout, stderr bytes.Buffer
	err := interopCommand([]string{"-full", "-cases", "zerortt,resumption"}, &stdout, &stderr, fake)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	require.Len(t, lines, 3)
	require.Regexp(t, `^resumption\s+pass\s+1.5s\s+42  measured resumption$`, lines[1], "the suite's order")
	require.Regexp(t, `^zerortt\s+pass`, lines[2])
	require.Contains(t, stderr.String(), "2 cases, full sizes")

	stdout.Reset()
	err = interopCommand([]string{"-full", "-md", "-cases", "handshakecorruption,goodput"}, &stdout, &stderr, fake)
	require.Error(t, err)
	require.Equal(t, exitFailure, exitCode(err))
	require.Contains(t, err.Error(), "1 of 2 cases failed")
	md := stdout.String()
	require.Contains(t, md, "| `handshakecorruption` | fail (known) | 1.5s | 42 |")
	require.Contains(t, md, "measured handshakecorruption; it broke; known: a weakness not fixed yet")
	require.Contains(t, md, "| `goodput` | pass |")

	stdout.Reset()
	err = interopCommand([]string{"-full", "-md", "-cases", "blackhole"}, &stdout, &stderr, fake)
	require.Equal(t, exitFailure, exitCode(err))
	require.Contains(t, stdout.String(), "| `blackhole` | fail | 1.5s | 42 |")
	require.NotContains(t, stdout.String(), "known")
}

// No case of the suite is marked a known failure: TestInterop runs all.
func TestInteropNoKnownFailures(t *testing.T) {
	for _, c := range e2e.Cases() {
		require.Empty(t, c.KnownFailure, c.Name)
	}
}

// One real case through the command: resumption, a second of relay time.
func TestInteropCommandRuns(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, exitOK, run([]string{"interop", "-cases", "resumption"}, &stdout, &stderr), stderr.String())
	require.Regexp(t, `(?m)^resumption\s+pass\s+\S+\s+20000  server handshake bytes on the path`, stdout.String())
}
