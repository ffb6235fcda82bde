package doccheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/fresh-udp/fresh"

// section is the text of README's "## title" section.
func section(t *testing.T, readme, title string) string {
	t.Helper()
	_, rest, ok := strings.Cut(readme, "\n## "+title+"\n")
	require.True(t, ok, "README has no section %q", title)
	body, _, _ := strings.Cut(rest, "\n## ")
	return body
}

// README's package map names every package of every module (go list over
// the workspace), and its examples table every directory of examples/
// that holds a command: a new package or example cannot land without its
// line. The map names a package in backquotes, `bench/emu`; the table
// links an example, [demo](examples/demo).
func TestREADMEMapsEveryPackage(t *testing.T) {
	root := filepath.Join("..", "..")
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	readme := string(b)
	pkgMap, examples := section(t, readme, "Package map"), section(t, readme, "Examples")

	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Name}}", module+"/...")
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err, "go list")
	pkgs := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Greater(t, len(pkgs), 30, "go list saw the whole workspace")
	var missing []string
	for _, line := range pkgs {
		path, name, _ := strings.Cut(line, " ")
		rel := strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
		if rel == "" {
			continue
		}
		if dir, ok := strings.CutPrefix(rel, "examples/"); ok && name == "main" {
			if !strings.Contains(examples, "["+dir+"](examples/"+dir+")") {
				missing = append(missing, "examples table: "+rel)
			}
			continue
		}
		if !strings.Contains(pkgMap, "`"+rel+"`") {
			missing = append(missing, "package map: "+rel)
		}
	}
	require.Empty(t, missing, "README lacks these lines")
}
