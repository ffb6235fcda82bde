package monitorproc

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/internal/rusage"
)

// A build that runs out of time says so — the command, how long it ran,
// the flag that gives it longer — and is not taken for a build run from
// the wrong directory; one that fails says that, with the go command's
// output; one whose caller gave up says that.
func TestBuildErrors(t *testing.T) {
	_, err := Build(context.Background(), t.TempDir(), time.Millisecond)
	require.ErrorContains(t, err, "go build -o ")
	require.ErrorContains(t, err, " github.com/fresh-udp/fresh/cmd/fresh-monitor: the build timed out: still compiling after ")
	require.ErrorContains(t, err, "(-build-timeout 1ms; a first build compiles the NATS server, minutes on a busy machine): raise -build-timeout, or build it once and give -monitor-bin")
	require.NotContains(t, err.Error(), "workspace")

	_, err = Build(context.Background(), t.TempDir(), time.Minute, "-no-such-flag")
	require.ErrorContains(t, err, "go build -o ")
	require.ErrorContains(t, err, " -no-such-flag github.com/fresh-udp/fresh/cmd/fresh-monitor: the build failed after ")
	require.ErrorContains(t, err, "flag provided but not defined", "the go command's own words")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Build(ctx, t.TempDir(), time.Minute)
	require.ErrorContains(t, err, ": stopped after ")
	require.ErrorIs(t, err, context.Canceled)
}

// /proc/<pid>/stat's utime+stime agree with getrusage on this process,
// to a couple of clock ticks.
func TestCPUTimeReadsThisProcess(t *testing.T) {
	for {
		if d, err := rusage.Process(); err != nil || d > 200*time.Millisecond {
			require.NoError(t, err)
			break
		}
	}
	lo, _ := rusage.Process()
	d, err := CPUTime(os.Getpid())
	require.NoError(t, err)
	hi, _ := rusage.Process()
	require.GreaterOrEqual(t, d, lo-30*time.Millisecond)
	require.LessOrEqual(t, d, hi+30*time.Millisecond)
}

// Scrape reads the unlabelled samples it is asked for from a Prometheus
// text exposition and leaves the rest, comments and labelled ones.
func TestScrape(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "# HELP fresh_connections x\n# TYPE fresh_connections gauge\nfresh_connections 20\n"+
			"fresh_updates_stored_total 1.5e+03\nfresh_store_errors_total{store=\"kv\"} 2\ngo_goroutines 31\n")
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	v, err := Scrape(addr, "fresh_connections", "fresh_updates_stored_total", "absent")
	require.NoError(t, err)
	require.Equal(t, map[string]float64{"fresh_connections": 20, "fresh_updates_stored_total": 1500}, v)
	require.Equal(t, 2.0, StoreErrors(addr), "a labelled sample, asked by its whole name")
}
