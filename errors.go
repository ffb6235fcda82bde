// Package fresh is the module's root: what every one of its packages
// shares. Today that is one thing, the error a refused configuration
// wraps, defined here, below every other package, so that the
// controllers (cc, owd, acp), the clocks and the transports all return
// the same value and a caller tests for it once, whichever layer refused:
// errors.Is(err, fresh.ErrInvalidConfig) holds for a transport.Config the
// transport refused and for the owd.Config inside it that owd refused.
// Each package also exports it under its own name, ErrInvalidConfig.
//
// The library itself is in the packages: transport (connections over
// UDP), owd and acp (the controllers), cc (the controller interface and
// the loss-based baselines), clock (time, and the NTP-corrected clock in
// clock/ntpclock), qlog (traces) and dscp (DiffServ code points).
package fresh

import (
	"errors"
	"fmt"
)

// ErrInvalidConfig is what every configuration error of this module
// wraps.
var ErrInvalidConfig = errors.New("fresh: invalid config")

// ConfigError is a configuration a package refused: the field, named as
// the user writes it ("owd.Config.Beta"), and what is wrong with it. It
// wraps ErrInvalidConfig and Err.
type ConfigError struct {
	Field string
	Err   error
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("%v: %s: %v", ErrInvalidConfig, e.Field, e.Err)
}

// Unwrap returns ErrInvalidConfig and Err, so errors.Is matches either.
func (e *ConfigError) Unwrap() []error { return []error{ErrInvalidConfig, e.Err} }

// InvalidField returns a *ConfigError for field, its reason formatted as
// fmt.Sprintf formats it.
func InvalidField(field, format string, args ...any) error {
	return &ConfigError{Field: field, Err: fmt.Errorf(format, args...)}
}

// WrapInvalid returns err marked as the refusal of field, unless it is a
// configuration error already (a lower layer's refusal, which names its
// own field), which it returns unchanged: a name a registry does not
// know, say, becomes a *ConfigError naming the field that held it.
func WrapInvalid(field string, err error) error {
	if errors.Is(err, ErrInvalidConfig) {
		return err
	}
	return &ConfigError{Field: field, Err: err}
}
