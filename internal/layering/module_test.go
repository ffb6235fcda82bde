package layering

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// libraryModules is everything a module that imports transport may list
// in go list -m all: what the library needs (the NTP client, x/net for
// DSCP and batched I/O, x/crypto and x/sys beneath them, x/text and x/term
// in their requirements) and what this module's own tests need (testify,
// its YAML package, goleak), which a user's go.mod lists but never links.
// The benchmark's plotting and netlink and the quic-go hook are modules of
// their own (bench, transport/quichook), so they must not appear.
var libraryModules = map[string]bool{
	"github.com/beevik/ntp":       true,
	"golang.org/x/crypto":         true,
	"golang.org/x/net":            true,
	"golang.org/x/sys":            true,
	"golang.org/x/text":           true,
	"golang.org/x/term":           true,
	"github.com/stretchr/testify": true,
	"go.yaml.in/yaml/v3":          true,
	"go.uber.org/goleak":          true,
}

// A new module that imports only transport lists only the library's
// dependencies. The go command resolves it offline, from the module cache
// the repository's own build filled.
func TestUserModuleListsOnlyTheLibrary(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/device\n\ngo 1.26.0\n\n"+
		"require "+module+" v0.0.0-00010101000000-000000000000\n\nreplace "+module+" => "+root+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\n"+
		"import \""+module+"/transport\"\n\nfunc main() { _, _ = transport.Listen(\":0\", transport.Config{}) }\n"), 0o644))
	goCmd := func(args ...string) string {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off", "GOSUMDB=off")
		out, err := cmd.CombinedOutput()
		hint := ""
		if strings.Contains(string(out), "GOPROXY=off") {
			// The workspace's build selects newer versions than the
			// library's go.mod names; only the root module's own
			// download puts those in the cache.
			hint = "\n(the module cache lacks the library's own requirements: run GOWORK=off go mod download in the repository's root, as .ci/run does)"
		}
		require.NoError(t, err, "go %s:\n%s%s", strings.Join(args, " "), out, hint)
		return string(out)
	}
	goCmd("mod", "tidy")
	var extra []string
	for _, line := range strings.Split(strings.TrimSpace(goCmd("list", "-m", "all")), "\n") {
		path, _, _ := strings.Cut(line, " ")
		if path != "example.com/device" && path != module && !libraryModules[path] {
			extra = append(extra, line)
		}
	}
	require.Empty(t, extra, "a module importing only transport lists modules the library does not need")
}
