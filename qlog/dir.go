package qlog

import (
	"fmt"
	"os"
	"path/filepath"
)

// EnvDir is the environment variable FromEnv reads: quic-go's, so one
// setting traces both stacks.
const EnvDir = "QLOGDIR"

// Title is the header title of the traces DirTracer writes.
const Title = "fresh qlog"

// NewTracer opens a trace for one connection; nil and no error: the
// connection is not traced. It is the type of transport.Config.Tracer.
type NewTracer func(ConnInfo) (Tracer, error)

// DirTracer returns a NewTracer that writes each connection's trace to
// its own file in dir, created if missing:
// <dir>/<start>_<connection ID>_<role>.sqlog, the start in UTC as
// 20060102T150405.000000Z and the connection ID (the client's, the same at
// both ends) in 16 hex digits, so that a directory lists by time and the
// traces of one connection share the ID. .sqlog is the JSON-SEQ qlog
// suffix qvis recognises.
//
// Each traced connection holds its file open and a 32 KiB buffer until it
// ends: a listener with thousands of connections needs as many file
// descriptors (a connection whose file cannot be opened runs untraced, and
// the transport logs why).
func DirTracer(dir string) NewTracer {
	return func(info ConnInfo) (Tracer, error) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("qlog: trace directory: %w", err)
		}
		f, err := os.Create(filepath.Join(dir, FileName(info)))
		if err != nil {
			return nil, fmt.Errorf("qlog: %w", err)
		}
		return NewWriter(f, info, Title), nil
	}
}

// FileName is the name DirTracer gives the trace of info's connection.
func FileName(info ConnInfo) string {
	stamp := info.Start.UTC().Format("20060102T150405.000000Z")
	return fmt.Sprintf("%s_%016x_%s.sqlog", stamp, info.ConnID, info.Role)
}

// FromEnv returns DirTracer($QLOGDIR), or nil when QLOGDIR is unset or
// empty (tracing off).
func FromEnv() NewTracer {
	dir := os.Getenv(EnvDir)
	if dir == "" {
		return nil
	}
	return DirTracer(dir)
}
