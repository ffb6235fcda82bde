package quichook_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A raw-UDP user must not compile quic-go in. Not even this package does:
// it only implements net.PacketConn, which quic-go accepts.
func TestTransportDoesNotDependOnQUICGo(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	list := func(pkgs ...string) []string {
		cmd := exec.Command(gobin, append([]string{"list", "-deps"}, pkgs...)...)
		cmd.Dir = filepath.Join("..", "..")
		out, err := cmd.Output()
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		require.NoError(t, err)
		return strings.Fields(string(out))
	}
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
