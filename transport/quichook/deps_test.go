package quichook_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// goListDeps is go list -deps args, run at the repository's root; the
// test skips where there is no go command.
func goListDeps(t *testing.T, args ...string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	cmd := exec.Command(gobin, append([]string{"list", "-deps"}, args...)...)
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("go list: %v\n%s", err, ee.Stderr)
	}
	require.NoError(t, err)
	return strings.Fields(string(out))
}

// A raw-UDP user must not compile quic-go in. Not even this package does:
// it only implements net.PacketConn, which quic-go accepts.
func TestTransportDoesNotDependOnQUICGo(t *testing.T) {
	list := func(args ...string) []string { return goListDeps(t, args...) }
	quic := func(deps []string) (n int) {
		for _, d := range deps {
			if strings.HasPrefix(d, "github.com/quic-go/") {
				n++
			}
		}
		return n
	}
	deps := list("./transport", "./transport/quichook", "./cc", "./owd", "./clock/...")
	require.Contains(t, deps, "github.com/fresh-udp/fresh/transport")
	require.Zero(t, quic(deps), "importing transport compiles quic-go in")
	// The hook itself is a net.PacketConn and needs none of quic-go; its
	// tests do, which shows the check can fail.
	require.Positive(t, quic(list("-test", "./transport/quichook")))
}

// The hook shares fresh's protocol core (internal/recovery, pacer, cmsg)
// but not the session above it nor the NTP client: it will live in a
// module of its own, and a user of it should compile neither in. Nor
// anything of bench: its tests included.
func TestHookDependsOnCoreOnly(t *testing.T) {
	list := func(args ...string) []string { return goListDeps(t, args...) }
	deps := list("./transport/quichook")
	for _, want := range []string{"internal/recovery", "internal/pacer", "internal/cmsg"} {
		require.Contains(t, deps, "github.com/fresh-udp/fresh/"+want, "one protocol core")
	}
	require.Contains(t, deps, "github.com/fresh-udp/fresh", "one configuration error")
	for _, d := range deps {
		require.NotContains(t, d, "internal/session")
		require.NotContains(t, d, "beevik/ntp")
	}
	// The attack tests must move with the hook: no bench in their files.
	for _, f := range []string{"attack_test.go", "shield_test.go", "fallback_test.go", "config_test.go"} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NotContains(t, string(b), "fresh/bench/", f)
	}
}
