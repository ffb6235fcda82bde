package monitor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/loglimit"
	"github.com/fresh-udp/fresh/internal/units"
)

// Running out of space. JetStream refuses a write when a bucket's stream
// reached its byte limit (MaxBytes, with the discard-new policy both
// bucket kinds have: "maximum bytes exceeded") or when the server's or the
// account's storage is used up ("insufficient resources", "resource limits
// exceeded for account"). Without limits on the buckets one upload can
// use up the server's storage, and then every device's update fails with
// it; so the object store gets a limit that leaves room for the KV bucket
// (Config.MaxUploadBytes, MaxKVBytes): a full object store then fails the
// upload, and only it. Each refusal is reported with what is full and
// what makes room (StorageHints), in the log and in the reason an upload's
// agent gets.

// StorageHints say what makes room when a store is full, in the monitor's
// messages: cmd/fresh-monitor names its flags. An empty hint is replaced
// by one that names the bucket's stream.
type StorageHints struct {
	// Uploads: the object store reached its byte limit.
	Uploads string
	// KV: the KV bucket reached its byte limit.
	KV string
	// JetStream: the server's or the account's JetStream storage is used
	// up.
	JetStream string
}

// JetStream API error codes of a full store.
const (
	errCodeStoreFailed        = 10077 // a stream refused to store a message; "maximum bytes exceeded" at its MaxBytes
	errCodeInsufficient       = 10023 // the server's storage is used up
	errCodeAccountExceeded    = 10002 // the account's storage is used up
	errCodeStorageReservation = 10047 // a stream's MaxBytes cannot be reserved (at creation)
)

// fullError is a write JetStream refused for lack of space: what is full,
// and what makes room.
type fullError struct {
	what, hint string
	err        error
}

func (e *fullError) Error() string { return e.what + " (" + e.hint + "): " + e.err.Error() }
func (e *fullError) Unwrap() error { return e.err }

// whatIsFull returns err as a *fullError if JetStream refused the write
// for lack of space, err unchanged otherwise. bucket is the one written
// (the KV bucket or the object store), limit its stream's MaxBytes.
func (m *Monitor) whatIsFull(err error, kv bool, limit int64) error {
	var ae *jetstream.APIError
	if !errors.As(err, &ae) {
		return err
	}
	switch {
	case ae.ErrorCode == errCodeStoreFailed && strings.Contains(ae.Description, "maximum bytes"):
		what, hint := fmt.Sprintf("the object store %q is full", m.cfg.ObjectBucket), m.cfg.StorageHints.Uploads
		if kv {
			what, hint = fmt.Sprintf("the KV bucket %q is full", m.cfg.KVBucket), m.cfg.StorageHints.KV
		}
		if limit > 0 {
			what += ", its limit " + units.FormatSize(cc.ByteCount(limit))
		}
		return &fullError{what: what, hint: hint, err: err}
	case ae.ErrorCode == errCodeInsufficient, ae.ErrorCode == errCodeAccountExceeded:
		return &fullError{what: "JetStream's storage is used up", hint: m.cfg.StorageHints.JetStream, err: err}
	}
	return err
}

// limitedLog logs lines of one kind, at most loglimit.Burst a
// loglimit.Window; the next line logged after some were not says how
// many ("suppressed").
type limitedLog struct {
	clk clock.Clock
	lim loglimit.Limiter
}

func newLimitedLog() *limitedLog { return &limitedLog{clk: clock.NewSystem()} }

// Log logs on log unless this kind's lines are over the limit.
func (l *limitedLog) Log(log *slog.Logger, level slog.Level, msg string, args ...any) {
	ctx := context.Background()
	if !log.Enabled(ctx, level) {
		return
	}
	ok, suppressed := l.lim.Allow(l.clk.Now())
	if !ok {
		return
	}
	if suppressed > 0 {
		args = append(args, "suppressed", suppressed)
	}
	log.Log(ctx, level, msg, args...)
}
