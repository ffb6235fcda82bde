// Package usage marks the errors that are the user's to fix — a bad flag
// or value, a scenario file that cannot be read or is invalid — so that
// freshbench exits 2 for them and 1 for a run, or the writing of its
// results, that failed. The packages freshbench drives (bench/resultsmd,
// bench/cellular) mark the scenario files they read themselves.
package usage

import (
	"errors"
	"fmt"
)

// Error is a usage error: its message names the flag or the file.
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

// Errorf is a usage error with a formatted message.
func Errorf(format string, args ...any) error {
	return &Error{msg: fmt.Sprintf(format, args...)}
}

// Is reports whether err is, or wraps, a usage error.
func Is(err error) bool {
	var ue *Error
	return errors.As(err, &ue)
}
