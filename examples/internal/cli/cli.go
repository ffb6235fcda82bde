// Package cli holds what the example programs (agent, monitor, bulk,
// certgen, quic) share around their run functions: the main wrapper, the
// logger, the TLS flags and the explanations of TLS and address errors
// that name the flag to change. Sizes and rates are internal/units'.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// Main runs run with the process arguments until it returns or Ctrl-C /
// SIGTERM cancels its context, and exits 1 with "name: error" on failure,
// 2 for a UsageError (-h, which prints the usage, is not a failure).
func Main(name string, run func(ctx context.Context, args []string, stdout io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // -h: the usage is out
		}
		fmt.Fprintln(os.Stderr, name+":", err)
		stop()
		if errors.As(err, new(*UsageError)) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// Logger writes warnings (an NTP server that does not answer, a socket
// error) to stderr; verbose (-v) adds the transport's debug logs.
func Logger(verbose bool) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// CodeStorageFailed is the application close code (transport.Conn's
// CloseWithError) of a monitor that could not store an upload: the disk
// filled or a write failed. It has committed what it stored; the reason
// says what failed. The agent reads it as "the monitor could not store it".
const CodeStorageFailed uint32 = 1
