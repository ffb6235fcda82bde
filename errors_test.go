package fresh

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestInvalidFieldNamesTheField(t *testing.T) {
	err := InvalidField("owd.Config.Beta", "%v: want (0, 1]", 2.0)
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.EqualError(t, err, "fresh: invalid config: owd.Config.Beta: 2: want (0, 1]")
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "owd.Config.Beta", ce.Field)
}

func TestWrapInvalidMarksOnce(t *testing.T) {
	inner := InvalidField("owd.Config.Beta", "NaN")
	require.Same(t, inner, WrapInvalid("transport.Config.NewController", inner), "already a config error: unchanged")
	unknown := errors.New(`cc: unknown controller "x"`)
	err := WrapInvalid("transport.Config.CC", unknown)
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.ErrorIs(t, err, unknown)
	require.EqualError(t, err, `fresh: invalid config: transport.Config.CC: cc: unknown controller "x"`)
}
