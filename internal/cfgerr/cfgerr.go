// Package cfgerr holds the one error every fresh package wraps when it
// refuses a configuration, so that a caller tests for it once, whichever
// layer refused: errors.Is(err, transport.ErrInvalidConfig) holds for a
// transport.Config the transport refused and for the owd.Config inside it
// that owd refused. Each package exports it as its own ErrInvalidConfig
// (the same value), and every message names the field that was wrong.
package cfgerr

import (
	"errors"
	"fmt"
)

// ErrInvalid is the value of every package's ErrInvalidConfig.
var ErrInvalid = errors.New("fresh: invalid config")

// Field returns an error that wraps ErrInvalid and names the field as the
// user writes it ("transport.Config.SendBuffer"), then says what is wrong.
func Field(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalid, field, fmt.Sprintf(format, args...))
}

// Wrap returns err marked as a configuration error (unchanged if it is
// one already): a lower layer's refusal, or a name a registry does not
// know.
func Wrap(field string, err error) error {
	if errors.Is(err, ErrInvalid) {
		return err
	}
	return fmt.Errorf("%w: %s: %w", ErrInvalid, field, err)
}
