package main

import (
	"context"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/monitorproc"
	"github.com/fresh-udp/fresh/transport/devcert"
)

// fleetRunBudget is how long the smoke test's fleet run may take once the
// monitor is built: 3 s of updates, up to 10 s of settling, the monitor's
// start (an embedded NATS server) on a busy machine.
const fleetRunBudget = 2 * time.Minute

// buildForTest builds cmd/fresh-monitor for a test, with -race when the
// test binary has it, within what is left of the test binary's deadline
// (go test -timeout, 10 min by default) once fleetRunBudget is set aside:
// a first build compiles the NATS server, over a minute on a busy 2-core
// machine, and a build that runs out says so (monitorproc.Build's error).
func buildForTest(t *testing.T) string {
	t.Helper()
	timeout := 10 * time.Minute
	if dl, ok := t.Deadline(); ok {
		timeout = time.Until(dl) - fleetRunBudget - 30*time.Second
	}
	if timeout < time.Minute {
		t.Fatalf("%v left to build cmd/fresh-monitor before the test binary's deadline: give go test a longer -timeout", timeout)
	}
	var flags []string
	if raceEnabled {
		flags = []string{"-race"}
	}
	start := time.Now()
	exe, err := monitorproc.Build(context.Background(), t.TempDir(), timeout, flags...)
	require.NoError(t, err)
	t.Logf("built cmd/fresh-monitor %v in %v", flags, time.Since(start).Round(100*time.Millisecond))
	return exe
}

// The smoke version of the fleet run: 20 agents against one fresh-monitor
// process (built from the tree) for 3 s. Every device's last update is in
// the bucket, the watcher saw updates with a sane age, the monitor held
// every agent and stored their updates.
func TestFleetSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/fresh-monitor and runs it with 20 agents")
	}
	exe := buildForTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), fleetRunBudget)
	defer cancel()
	var out strings.Builder
	reps, err := run(ctx, []string{"-agents", "20", "-monitors", "1", "-rate", "5", "-duration", "3s", "-settle", "10s", "-monitor-bin", exe}, &out)
	t.Log("\n" + out.String())
	require.NoError(t, err)
	require.Len(t, reps, 1)
	r := reps[0]
	require.Zero(t, r.Check.Missing, "devices missing from the bucket: %v", r.Check.Examples)
	require.Zero(t, r.Check.Stale, "devices whose record is not their last update: %v", r.Check.Examples)
	require.Zero(t, r.BadValues)
	require.Len(t, r.PerMonitor, 1)
	require.Equal(t, 20.0, r.PerMonitor[0].Devices, "the monitor holds every agent")
	// ACP sends at most the sensing rate (5/s), less when the shared CPU
	// queues; a broken send path gives next to nothing.
	require.Greater(t, r.Seen, 20*3, "updates the watcher saw")
	require.LessOrEqual(t, float64(r.Seen), 20*5*(r.DurationS+r.SettleS)+20)
	require.GreaterOrEqual(t, r.Stored, float64(r.Seen), "the watcher sees only what was stored")
	require.Positive(t, r.Age.P50)
	require.Less(t, r.Age.P99, 2000.0, "ms: end-to-end age within a few update periods")
	require.Less(t, r.Check.GeneratedSkewMaxUS, int64(100_000), "the monitor's clock correction on one host")
	require.Positive(t, r.CPUCores, "the monitor's CPU was read")
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"-monitors", "2, 1", "-agents", "10"}, &strings.Builder{})
	require.NoError(t, err)
	require.Equal(t, []int{2, 1}, o.monitors)
	for _, args := range [][]string{{"-monitors", "0"}, {"-monitors", "1,x"}, {"-agents", "0"}, {"-rate", "0"},
		{"-duration", "0s"}, {"-per-socket", "0"}, {"-agents", "100000"}, {"-build-timeout", "0s"}, {"extra"}} {
		_, err := parseFlags(args, &strings.Builder{})
		require.Error(t, err, "%q", args)
	}
}

// writeCertgenLayout writes what certgen -dir dir -agents … writes, for
// the names given, with one CA.
func writeCertgenLayout(t *testing.T, dir string, names ...string) {
	t.Helper()
	ca, err := devcert.NewCA("test CA")
	require.NoError(t, err)
	write := func(path string, data []byte) {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, data, 0o600))
	}
	mon, err := ca.Issue("localhost", "localhost", "127.0.0.1")
	require.NoError(t, err)
	c, k, err := devcert.PEM(mon)
	require.NoError(t, err)
	write(filepath.Join(dir, "ca.pem"), ca.CertPEM())
	write(filepath.Join(dir, "monitor.pem"), c)
	write(filepath.Join(dir, "monitor-key.pem"), k)
	for _, n := range names {
		a, err := ca.Issue(n)
		require.NoError(t, err)
		c, k, err := devcert.PEM(a)
		require.NoError(t, err)
		write(filepath.Join(dir, "agents", n, "ca.pem"), ca.CertPEM())
		write(filepath.Join(dir, "agents", n, "agent.pem"), c)
		write(filepath.Join(dir, "agents", n, "agent-key.pem"), k)
	}
}

// -certs reads certgen's layout: the first -agents agents in name order,
// named by their certificates; too few agents or a name that is not its
// own KV key are errors.
func TestLoadPKIReadsCertgenLayout(t *testing.T) {
	dir := t.TempDir()
	writeCertgenLayout(t, dir, "agent-0003", "agent-0001", "agent-0002")
	p, err := loadPKI(dir, 2)
	require.NoError(t, err)
	require.Equal(t, []string{"agent-0001", "agent-0002"}, p.names)
	require.Len(t, p.agents, 2)
	_, err = p.agents[1].Leaf.Verify(x509.VerifyOptions{Roots: p.roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err)

	_, err = loadPKI(dir, 4)
	require.ErrorContains(t, err, "3 agents in agents/, -agents asks for 4")
	bad := t.TempDir()
	writeCertgenLayout(t, bad, "a.b")
	_, err = loadPKI(bad, 1)
	require.ErrorContains(t, err, `CommonName "a.b"`)
	_, err = loadPKI(t.TempDir(), 1)
	require.ErrorContains(t, err, "-certs")
}
