// Package layering holds a test that keeps the controllers free of
// third-party code: cc, owd, acp and clock may depend on the standard
// library and on this module's own packages, nothing else. Anything that
// needs a network library (the NTP client in clock/ntpclock, x/net and
// x/sys in transport) lives outside them, so a user who only wants a
// controller pulls in nothing but the standard library.
package layering

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/fresh-udp/fresh"

var corePackages = []string{"./cc", "./owd", "./acp", "./clock"}

// allowed reports whether a dependency of a core package is acceptable:
// the standard library (no dot in the first path element, as the go
// command itself decides) or a package of this module.
func allowed(pkg string) bool {
	if pkg == module || strings.HasPrefix(pkg, module+"/") {
		return true
	}
	first, _, _ := strings.Cut(pkg, "/")
	return !strings.Contains(first, ".")
}

func TestAllowed(t *testing.T) {
	for pkg, want := range map[string]bool{
		"fmt":                         true,
		"internal/abi":                true,
		"vendor/golang.org/x/net/dns": true, // the standard library's vendored copy
		module + "/cc":                true,
		"github.com/beevik/ntp":       false,
		"golang.org/x/sys/unix":       false,
		module + "x/cc":               false, // a module whose path merely starts like ours
	} {
		require.Equal(t, want, allowed(pkg), pkg)
	}
}

func TestCoreDependsOnStandardLibraryOnly(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	cmd := exec.Command(gobin, append([]string{"list", "-deps"}, corePackages...)...)
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("go list: %v\n%s", err, ee.Stderr)
	}
	require.NoError(t, err)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, module+"/cc", "go list must have listed the core packages")
	for _, dep := range deps {
		if !allowed(dep) {
			t.Errorf("a core package (%s) depends on %s", strings.Join(corePackages, " "), dep)
		}
	}
}
