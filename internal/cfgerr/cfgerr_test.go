package cfgerr

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFieldNamesTheField(t *testing.T) {
	err := Field("owd.Config.Beta", "%v: want (0, 1]", 2.0)
	require.ErrorIs(t, err, ErrInvalid)
	require.EqualError(t, err, "fresh: invalid config: owd.Config.Beta: 2: want (0, 1]")
}

func TestWrapMarksOnce(t *testing.T) {
	inner := Field("owd.Config.Beta", "NaN")
	require.Same(t, inner, Wrap("transport.Config.NewController", inner), "already a config error: unchanged")
	unknown := errors.New(`cc: unknown controller "x"`)
	err := Wrap("transport.Config.CC", unknown)
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorIs(t, err, unknown)
	require.EqualError(t, err, `fresh: invalid config: transport.Config.CC: cc: unknown controller "x"`)
}
