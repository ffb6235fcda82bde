package realtime

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// recorder is a testing.TB that records what Check does with it.
type recorder struct {
	testing.TB
	fatal, logged string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }
func (r *recorder) Logf(format string, args ...any)   { r.logged = fmt.Sprintf(format, args...) }

// Check fails a missed bound in the real-time suite and only logs it
// otherwise; a bound that holds does neither.
func TestCheck(t *testing.T) {
	for _, on := range []string{"", "1"} {
		t.Setenv(Env, on)
		var r recorder
		Check(&r, true, "x %d", 1)
		require.Empty(t, r.fatal+r.logged)
		Check(&r, false, "goodput %d < %d", 1, 2)
		if on == "1" {
			require.Equal(t, "goodput 1 < 2", r.fatal)
			require.Empty(t, r.logged)
		} else {
			require.Empty(t, r.fatal)
			require.Equal(t, "not met (required only with FRESH_REALTIME=1; a loaded machine?): goodput 1 < 2", r.logged)
		}
	}
}
