package usage

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIs(t *testing.T) {
	err := Errorf("freshbench sim: --cc %q: empty controller name", "")
	require.EqualError(t, err, `freshbench sim: --cc "": empty controller name`)
	require.True(t, Is(err))
	require.True(t, Is(fmt.Errorf("freshbench traces: %w", err)), "wrapped")
	require.False(t, Is(errors.New("a run failed")))
	require.False(t, Is(nil))
}
