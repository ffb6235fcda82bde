package layering

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// layers is the module's architecture, lowest first: a package imports
// only packages of layers below its own (its tests may import anything).
// A new package must be placed here, or TestImportsPointDown fails. Paths
// are relative to the module; a path ending in "/..." stands for every
// package under it.
//
//   - leaves: standard library only, no state of the protocol: the
//     configuration error (the root package), code points, traces, the
//     wire format, packet protection, control messages;
//   - time: clock;
//   - the controller interface, and what only needs time: cc, the NTP
//     clock, the log limiter;
//   - the controllers and the sender's machinery they drive;
//   - the protocol, sans-I/O: internal/session;
//   - the I/O shell: transport and the quic-go hook;
//   - what uses the library: services, examples, benchmarks, which
//     import one another as they like (the layering is the library's).
var layers = [][]string{
	{"", "dscp", "qlog", "internal/wire", "internal/seal", "internal/cmsg", "internal/realtime",
		"internal/sansio", "internal/doccheck", "internal/layering", "transport/devcert"},
	{"clock"},
	{"cc", "clock/ntpclock", "internal/loglimit"},
	{"owd", "acp", "internal/recovery", "internal/pacer", "internal/units", "internal/ntptest"},
	{"internal/session"},
	{"transport", "transport/quichook"},
	{"cmd/...", "examples/...", "bench/..."},
}

// layerOf returns the layer of a package of the module (path relative to
// it), or -1 if none is given.
func layerOf(rel string) int {
	for i, layer := range layers {
		for _, p := range layer {
			if p == rel {
				return i
			}
			if dir, ok := strings.CutSuffix(p, "/..."); ok && (rel == dir || strings.HasPrefix(rel, dir+"/")) {
				return i
			}
		}
	}
	return -1
}

func TestLayerOf(t *testing.T) {
	for rel, want := range map[string]int{
		"":                          0,
		"clock":                     1,
		"clock/ntpclock":            2,
		"internal/session":          4,
		"transport/quichook":        5,
		"bench/sim":                 6,
		"examples/internal/syncbuf": 6,
		"cmd/fresh-monitor":         6,
		"transportx":                -1, // a sibling whose name merely starts like one
		"internal/new":              -1,
	} {
		require.Equal(t, want, layerOf(rel), rel)
	}
}

// TestImportsPointDown lists every package of the workspace (the library
// and the modules beside it) with its imports and fails on an import of
// this module's that does not point to a lower layer, and on a package no
// layer names.
func TestImportsPointDown(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	cmd := exec.Command(gobin, "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("go list: %v\n%s", err, ee.Stderr)
	}
	require.NoError(t, err)
	rel := func(pkg string) (string, bool) {
		if pkg == module {
			return "", true
		}
		return strings.CutPrefix(pkg, module+"/")
	}
	seen := map[string]bool{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		from, _ := rel(fields[0])
		seen[from] = true
		lf := layerOf(from)
		if lf < 0 {
			t.Errorf("%s is in no layer: place it in layers (internal/layering)", fields[0])
			continue
		}
		for _, imp := range fields[1:] {
			to, ours := rel(imp)
			if !ours {
				continue
			}
			lt := layerOf(to)
			if lt < 0 || lt > lf || lt == lf && lf < len(layers)-1 {
				t.Errorf("%s (layer %d) imports %s (layer %d): imports must point to a lower layer", fields[0], lf, imp, lt)
			}
		}
	}
	for _, p := range []string{"", "internal/session", "transport", "transport/quichook", "bench/sim"} {
		require.True(t, seen[p], "go list must have listed %q", p)
	}
}
