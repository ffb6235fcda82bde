//go:build unix

package loadgen

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRaiseFileLimit(t *testing.T) {
	require.NoError(t, RaiseFileLimit())
	var r syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r))
	require.Equal(t, r.Max, r.Cur)
}
